// libFuzzer target: the scenario reader, and the estimate (and, for small steps, the schedule
// and native engine) of whatever it accepts. Seeds: scenarios/**/*.toml.
#include <cstddef>
#include <cstdint>

#include "sim/analytic/estimate.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/schedule/schedule.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hetsim;
  const auto text = fuzz::as_text(data, size);
  auto s = io::parse_scenario(text, "fuzz.toml", fuzz::catalog());
  auto searched = io::parse_scenario(text, "fuzz.toml", fuzz::catalog(), {.plan = false});
  if (s.ok()) fuzz::require(searched.ok());  // reading less never finds more errors
  if (!searched.ok()) fuzz::check_diagnostics(searched.errors());
  if (!s.ok()) {
    fuzz::check_diagnostics(s.errors());
    return 0;
  }
  if (!s->plan) return 0;
  const auto e = analytic::estimate(*s, *s->plan);
  fuzz::require(e.step_time.v >= 0 && e.step_time.v < 1e300);
  if (schedule::estimated_tasks(*s, *s->plan) <= 2e4) {
    const auto g = schedule::build_schedule(*s, *s->plan);
    auto t = engine::run_native(g);
    if (!t) fuzz::check_diagnostics(t.errors());
  }
  return 0;
}
