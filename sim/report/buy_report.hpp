#pragma once
// Presenting a purchase search: what the search looked at, the Pareto front of total cost
// against effective time to train, the recommended point and why it wins against the next one.

#include <string>

#include "sim/plan/buy.hpp"

namespace hetsim::report {

[[nodiscard]] std::string buy_text(const Scenario& s, const buy::Result& r, double seconds);
/// {"objective", counts, "front": [...], "recommended": index or null} (docs/formats.md#buy-json)
[[nodiscard]] std::string buy_json(const Scenario& s, const buy::Result& r, double seconds);

}  // namespace hetsim::report
