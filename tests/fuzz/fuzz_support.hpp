#pragma once
// Shared by the libFuzzer targets (tests/fuzz/*.cpp, docs/hacking.md#fuzzing): what every outcome
// must satisfy. A reader returns a value or diagnostics that say something; anything else (an
// exception, an assertion, a sanitizer report, an empty message) is a finding.

#include <cstdlib>
#include <string_view>

#include "models/base/result.hpp"
#include "models/hw/catalog.hpp"
#include "sim/io/catalog_reader.hpp"

namespace hetsim::fuzz {

inline void require(bool ok) {
  if (!ok) __builtin_trap();
}

inline void check_diagnostics(const Diagnostics& d) {
  require(!d.empty());
  for (const auto& x : d) require(!x.message.empty());
}

inline const hw::Catalog& catalog() {
  static const hw::Catalog cat = [] {
    auto c = io::builtin_catalog();
    require(c.ok());
    return *c;
  }();
  return cat;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace hetsim::fuzz
