// How fast `hetsim estimate` answers: reading + validating a scenario, and the estimate itself,
// for every bundled scenario. Built, not run by ctest; figures go to docs/benchmarks.md.
//   build/release/bin/estimate_perftest --benchmark_min_time=0.2

#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/analytic/estimate.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/scenario_reader.hpp"
#include "tests/support/read_file.hpp"

namespace {

using hetsim::test::slurp;

void BM_Catalog(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(hetsim::io::builtin_catalog());
}
BENCHMARK(BM_Catalog)->Unit(benchmark::kMicrosecond);

// What every `hetsim estimate` parses: the figures without their sources.
void BM_CatalogFigures(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(hetsim::io::builtin_catalog(false));
}
BENCHMARK(BM_CatalogFigures)->Unit(benchmark::kMicrosecond);

void register_scenarios() {
  static const hetsim::hw::Catalog cat = *hetsim::io::builtin_catalog();
  for (const char* dir : {"scenarios", "scenarios/validation"}) {
    for (const auto& e : std::filesystem::directory_iterator(std::string(HETSIM_SOURCE_DIR) + "/" + dir)) {
      if (e.path().extension() != ".toml") continue;
      const std::string text = slurp(e.path());
      const std::string name = e.path().stem().string();
      benchmark::RegisterBenchmark(("read/" + name).c_str(), [text, name](benchmark::State& st) {
        for (auto _ : st) benchmark::DoNotOptimize(hetsim::io::parse_scenario(text, name, cat));
      })->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("estimate/" + name).c_str(), [text, name](benchmark::State& st) {
        auto s = hetsim::io::parse_scenario(text, name, cat);
        if (!s.ok() || !s->plan) {  // e.g. a profile named relative to the file: read from text it is not found
          st.SkipWithError("scenario does not load from text alone");
          return;
        }
        for (auto _ : st) benchmark::DoNotOptimize(hetsim::analytic::estimate(*s, *s->plan));
      })->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_scenarios();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
