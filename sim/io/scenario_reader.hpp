#pragma once
// Reading scenario TOML files (format: docs/scenario-format.md, schema = 1) into a validated
// Scenario. Every problem is reported with file:line:column and key path; all are collected.

#include <filesystem>
#include <string>

#include "models/base/result.hpp"
#include "models/hw/catalog.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::io {

/// Reads and validates the scenario in `file` against `catalog` (plus the scenario's own
/// inline devices and links).
[[nodiscard]] Result<Scenario> read_scenario(const std::filesystem::path& file,
                                             const hw::Catalog& catalog);

/// The same for text already in memory; `file` names it in messages.
[[nodiscard]] Result<Scenario> parse_scenario(std::string_view text, const std::string& file,
                                              const hw::Catalog& catalog);

/// Checks a plan against the scenario's model, training and cluster: coverage of layers,
/// divisibility, device counts, TP inside a node, number formats. `where` locates the
/// [parallel] table in messages.
[[nodiscard]] Diagnostics validate_plan(const Scenario& s, const plan::Plan& p, SourceLoc where);

}  // namespace hetsim::io
