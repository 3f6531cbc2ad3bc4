// Planner speed: the whole search for GPT-3 175B on 1024 devices of three types (512 A100 80GB,
// 256 H100, 256 MI300X), and the closed-form evaluation rate it relies on.
//   build/release/bin/planner_perftest
// Figures: docs/benchmarks.md.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/analytic/estimate.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/plan/planner.hpp"

namespace {

hetsim::Scenario three_types() {
  static const hetsim::hw::Catalog cat = *hetsim::io::builtin_catalog();
  return *hetsim::io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/gpt3-175b-three-types.toml", cat);
}

// The search as `hetsim plan --any-vendor` runs it (cross-vendor pipelines allowed: the case
// issue 12's target names, 37k plans), and as the default runs it (vendor islands).
void search(benchmark::State& state, bool same_vendor) {
  const auto s = three_types();
  hetsim::planner::Options o;
  o.same_vendor = same_vendor;
  std::size_t evaluated = 0, simulated = 0;
  for (auto _ : state) {
    auto r = hetsim::planner::search(s, o);
    evaluated = r.evaluated;
    simulated = r.simulated;
    benchmark::DoNotOptimize(r);
  }
  state.counters["plans_estimated"] = static_cast<double>(evaluated);
  state.counters["plans_simulated"] = static_cast<double>(simulated);
}
void BM_Search_Gpt3_1024Devices_ThreeTypes(benchmark::State& state) { search(state, false); }
BENCHMARK(BM_Search_Gpt3_1024Devices_ThreeTypes)->Unit(benchmark::kMillisecond)->Iterations(3);
void BM_Search_Gpt3_1024Devices_ThreeTypes_VendorIslands(benchmark::State& state) { search(state, true); }
BENCHMARK(BM_Search_Gpt3_1024Devices_ThreeTypes_VendorIslands)->Unit(benchmark::kMillisecond)->Iterations(3);

// Closed-form evaluation of the scenario's own plan (TP 8 · PP 8 over the three pools).
void BM_Estimate_Gpt3_1024Devices(benchmark::State& state) {
  const auto s = three_types();
  for (auto _ : state) benchmark::DoNotOptimize(hetsim::analytic::estimate(s, *s.plan));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_Estimate_Gpt3_1024Devices)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
