// libFuzzer target: plan JSON (`--plan`) against a fixed two-pool scenario, and the estimate
// of whatever it accepts. Seeds: tests/fuzz/seeds/plan/*.json.
#include <cstddef>
#include <cstdint>

#include "sim/analytic/estimate.hpp"
#include "sim/io/plan_json.hpp"
#include "sim/io/scenario_reader.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {
const hetsim::Scenario& scenario() {
  static const hetsim::Scenario s = [] {
    auto r = hetsim::io::parse_scenario(
        "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 32\nseq_len = 512\n"
        "[[cluster.pool]]\nname = \"h100\"\ndevice = \"h100-sxm5\"\nnodes = 1\n"
        "[[cluster.pool]]\nname = \"a100\"\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n",
        "fuzz.toml", hetsim::fuzz::catalog());
    hetsim::fuzz::require(r.ok());
    return *r;
  }();
  return s;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hetsim;
  auto p = io::parse_plan_json(fuzz::as_text(data, size), "fuzz.json", scenario());
  if (!p.ok()) {
    fuzz::check_diagnostics(p.errors());
    return 0;
  }
  const auto e = analytic::estimate(scenario(), *p);
  fuzz::require(e.step_time.v >= 0 && e.step_time.v < 1e300);
  // What the reader accepts, the writer writes and the reader reads back the same.
  auto again = io::parse_plan_json(io::plan_to_json(scenario(), *p), "again.json", scenario());
  fuzz::require(again.ok());
  return 0;
}
