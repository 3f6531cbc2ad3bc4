// libFuzzer target: the catalogue reader (device and link files, as users add them).
// Seeds: models/catalog/*.toml, scenarios/profiles/*.toml.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hetsim;
  hw::Catalog cat = fuzz::catalog();
  const auto d = io::read_catalog_text(fuzz::as_text(data, size), "fuzz.toml", cat);
  if (!d.empty()) fuzz::check_diagnostics(d);
  return 0;
}
