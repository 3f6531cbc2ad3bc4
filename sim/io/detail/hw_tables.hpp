#pragma once
// Reading [[device]] and [[link]] tables: shared by the catalogue and inline scenario tables.

#include <optional>

#include "models/hw/catalog.hpp"
#include "sim/io/detail/toml_reader.hpp"

namespace hetsim::io::detail {

/// Reads a device table. Link names in `node` must exist in `known` (nullptr: not checked).
[[nodiscard]] std::optional<hw::DeviceSpec> read_device(TomlReader& r, const TableRef& t,
                                                        const hw::Catalog* known);
[[nodiscard]] std::optional<hw::LinkSpec> read_link(TomlReader& r, const TableRef& t);

}  // namespace hetsim::io::detail
