#pragma once
// Plans as versioned JSON (docs/formats.md#plan-json): what `--save-plan` writes and
// `--plan` reads, and what the planner and the executor exchange.

#include <filesystem>
#include <string>

#include "models/base/result.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::io {

inline constexpr int kPlanFormatVersion = 1;

/// The plan as a JSON document; pools are named, so the file reads back against any scenario
/// with pools of those names.
[[nodiscard]] std::string plan_to_json(const Scenario& s, const plan::Plan& p);

/// Parses a plan and validates it against `s` (the same checks as a scenario's [parallel]).
/// Errors name the file, the JSON path ("/groups/0/stages/1/tp") and what was expected.
[[nodiscard]] Result<plan::Plan> parse_plan_json(std::string_view text, const std::string& file,
                                                 const Scenario& s);
[[nodiscard]] Result<plan::Plan> read_plan_json(const std::filesystem::path& file, const Scenario& s);

}  // namespace hetsim::io
