#pragma once
// Reading scenario TOML files (format: docs/scenario-format.md, schema = 1) into a validated
// Scenario. Every problem is reported with file:line:column and key path; all are collected.

#include <filesystem>
#include <string>

#include "models/base/result.hpp"
#include "models/hw/catalog.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::io {

/// What of a scenario to read.
struct ReadOptions {
  /// Read and validate [parallel] into Scenario::plan. Off for `hetsim plan`, which searches its
  /// own plans: the table's layout values are then neither read nor checked (a [parallel]
  /// written for another cluster does not stop the search); only its key names are, so a
  /// misspelt key is still an error, and its framework keys (Scenario::framework). Scenario::plan
  /// stays empty.
  bool plan = true;
};

/// Reads and validates the scenario in `file` against `catalog` (plus the scenario's own
/// inline devices and links).
[[nodiscard]] Result<Scenario> read_scenario(const std::filesystem::path& file,
                                             const hw::Catalog& catalog, ReadOptions options = {});

/// The same for text already in memory; `file` names it in messages.
[[nodiscard]] Result<Scenario> parse_scenario(std::string_view text, const std::string& file,
                                              const hw::Catalog& catalog, ReadOptions options = {});

/// Checks a plan against the scenario's model, training and cluster: coverage of layers,
/// divisibility, device counts, TP inside a node, number formats. `where` locates the
/// [parallel] table in messages.
[[nodiscard]] Diagnostics validate_plan(const Scenario& s, const plan::Plan& p, SourceLoc where);

}  // namespace hetsim::io
