#pragma once
// [variability] (docs/scenario-format.md#variability). Private to sim/io.

#include "sim/io/detail/toml_reader.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::io::detail {

/// Reads [variability] into s.variability (absent table: left empty). Its seed defaults to
/// s.seed, so [scenario] must be read first.
void read_variability(TomlReader& r, const TableRef& root, Scenario& s);

}  // namespace hetsim::io::detail
