#pragma once
// The built-in hardware catalogue: models/catalog/*.toml, embedded in the binary at build time.

#include "models/base/result.hpp"
#include "models/hw/catalog.hpp"

namespace hetsim::io {

/// Parses the embedded catalogue files. Fails only if a catalogue file is broken (a build
/// error in practice; tests load it). Without `with_sources` the `[device.sources]` tables (more
/// than half of the text) are skipped, figures unchanged: what pricing needs, in about half the
/// parse (every `hetsim estimate` pays it). Its devices are marked `builtin`.
[[nodiscard]] Result<hw::Catalog> builtin_catalog(bool with_sources = true);

/// Parses catalogue text (the format of models/catalog/*.toml) into `into`; `file` names it in
/// messages. Devices and links with a name already present replace it.
[[nodiscard]] Diagnostics read_catalog_text(std::string_view text, const std::string& file,
                                            hw::Catalog& into);

}  // namespace hetsim::io
