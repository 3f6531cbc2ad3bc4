// libFuzzer target: trace JSON (`hetsim-exec compare`), and the comparison of whatever it
// accepts with itself. Seeds: tests/fuzz/seeds/trace/*.json.
#include <cstddef>
#include <cstdint>

#include "sim/io/trace_json.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hetsim;
  auto t = io::parse_trace_json(fuzz::as_text(data, size), "fuzz.json");
  if (!t.ok()) {
    fuzz::check_diagnostics(t.errors());
    return 0;
  }
  // The reader's rules hold for what it accepts.
  fuzz::require(t->makespan_ns >= 0 && t->makespan_ns <= io::kMaxTraceNs);
  fuzz::require(t->peak_bytes.size() == t->devices.size());
  for (const auto& k : t->tasks) {
    fuzz::require(k.device < t->devices.size());
    fuzz::require(0 <= k.start_ns && k.start_ns <= k.end_ns && k.end_ns <= t->makespan_ns);
  }
  // Written back and read again: the same trace.
  auto again = io::parse_trace_json(io::trace_to_json(*t), "again.json");
  fuzz::require(again.ok() && again->tasks.size() == t->tasks.size() && again->makespan_ns == t->makespan_ns);
  return 0;
}
