#pragma once
// Reading a scenario from a TOML document already parsed: what parse_scenario does after the
// parse, without refusing [sweep]. The sweep reader (sim/io/sweep_reader.cpp) reads each of its
// points this way, from the document with the point's values put in. Private to sim/io.

#include <toml++/toml.h>

#include <string>

#include "models/base/result.hpp"
#include "models/hw/catalog.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::io::detail {

/// The validated scenario of `doc` (a top-level "sweep" key is ignored); `file` names it in
/// messages.
[[nodiscard]] Result<Scenario> read_scenario_document(const toml::table& doc, const std::string& file,
                                                      const hw::Catalog& catalog, ReadOptions options);

}  // namespace hetsim::io::detail
