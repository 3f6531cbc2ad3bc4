#pragma once
// Presenting an op breakdown (analytic::op_breakdown): a table per distinct stage for people,
// a JSON array for programs (docs/formats.md#op-breakdown).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/analytic/op_breakdown.hpp"

namespace hetsim::report {

/// Per distinct stage, one line per op of one micro-batch: forward and backward time, achieved
/// TFLOP/s, bytes moved and what binds it (compute, memory, launch), with the part totals.
[[nodiscard]] std::string ops_text(const std::vector<analytic::StageOps>& stages);

/// The same as a JSON array, one object per distinct stage.
[[nodiscard]] nlohmann::ordered_json ops_json(const std::vector<analytic::StageOps>& stages);

}  // namespace hetsim::report
