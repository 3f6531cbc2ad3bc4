#pragma once
// Presenting an Estimate: a table for people, a JSON object for programs
// (keys documented in docs/formats.md#estimate-json).

#include <string>

#include <nlohmann/json.hpp>

#include "models/hw/catalog.hpp"
#include "sim/analytic/estimate.hpp"

namespace hetsim::report {

/// The human-readable summary: plan, step time and its breakdown, throughput, memory verdict
/// per device type with its breakdown, time and cost to train.
[[nodiscard]] std::string estimate_text(const Scenario& s, const plan::Plan& p,
                                        const analytic::Estimate& e);

/// The JSON object of an estimate (docs/formats.md#estimate-json); simulate extends it.
[[nodiscard]] nlohmann::ordered_json estimate_object(const Scenario& s, const plan::Plan& p,
                                                     const analytic::Estimate& e);

/// One JSON object (pretty-printed, ending in a newline).
[[nodiscard]] std::string estimate_json(const Scenario& s, const plan::Plan& p,
                                        const analytic::Estimate& e);

/// The plan in one line: "16 × [8 × h100-sxm5 tp8 L12] × 96 mb; micro_batch 1, 1f1b, …"
/// (replica groups, runs of identical stages, micro-batches per replica, then the settings).
[[nodiscard]] std::string plan_summary(const Scenario& s, const plan::Plan& p);

/// The catalogue as a table, or as JSON.
[[nodiscard]] std::string catalog_text(const hw::Catalog& c);
[[nodiscard]] std::string catalog_json(const hw::Catalog& c);

}  // namespace hetsim::report
