#pragma once
// Presenting a purchase search: what the search looked at, the Pareto front of total cost
// against effective time to train, the recommended point and why it wins against the next one.

#include <cstddef>
#include <string>

#include "sim/plan/buy.hpp"

namespace hetsim::report {

/// The question, the search's counts, the front, the recommendation against its neighbours, why
/// it rather than the runner-up by part (buy::versus), and the sensitivity with the cost and
/// time changes. `top` > 0 shows at most that many rows of the front (the recommended point always).
[[nodiscard]] std::string buy_text(const Scenario& s, const buy::Result& r, double seconds, std::size_t top = 0);
/// {"objective", counts, "front": [...], "recommended": index or null, "sensitivity": [...],
/// "why": the recommended point against the runner-up or null} (docs/formats.md#buy-json)
[[nodiscard]] std::string buy_json(const Scenario& s, const buy::Result& r, double seconds);
/// The front as CSV (RFC 4180, one header row, one row per point, fastest first;
/// docs/formats.md#buy-csv): for spreadsheets and the GUI's export.
[[nodiscard]] std::string buy_csv(const Scenario& s, const buy::Result& r);
/// What a front point buys, in words: "8 × h100-sxm5 (64 devices)", or "nothing".
[[nodiscard]] std::string what_is_bought(const Scenario& s, const buy::Point& p);

}  // namespace hetsim::report
