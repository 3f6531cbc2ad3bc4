// Native engine speed: a GPT-3 175B step on 1024 devices (TP 8, PP 8, DP 16, 1F1B, global
// batch 1536, micro-batch 1) end to end, and the engine alone on a large task graph.
//   build/release/bin/engine_perftest
// Figures: docs/benchmarks.md.

#include <benchmark/benchmark.h>

#include "sim/engine/native_engine.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/schedule/schedule.hpp"

namespace {

hetsim::Scenario gpt3(int pp, int dp, int batch) {
  static const hetsim::hw::Catalog cat = *hetsim::io::builtin_catalog();
  const std::string text =
      "[model]\npreset = \"gpt3-175b\"\n[training]\nglobal_batch = " + std::to_string(batch) +
      "\nseq_len = 2048\n[[cluster.pool]]\ndevice = \"a100-sxm4-80gb\"\nnodes = " + std::to_string(pp * dp) +
      "\n[parallel]\ntp = 8\npp = " + std::to_string(pp) + "\ndp = " + std::to_string(dp) +
      "\nmicro_batch = 1\nschedule = \"1f1b\"\nrecompute = \"selective\"\n";
  return *hetsim::io::parse_scenario(text, "gpt3.toml", cat);
}

// One step, schedule and simulation, as `hetsim simulate` does it.
void BM_Gpt3_1024Devices_EndToEnd(benchmark::State& state) {
  const hetsim::Scenario s = gpt3(8, 16, 1536);
  std::size_t tasks = 0;
  double unfolded = 0;
  for (auto _ : state) {
    auto g = hetsim::schedule::build_schedule(s, *s.plan);
    auto t = hetsim::engine::run_native(g);
    benchmark::DoNotOptimize(t);
    tasks = g.size();
    unfolded = g.unfolded_size();
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["unfolded_tasks"] = unfolded;
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(tasks));
}
BENCHMARK(BM_Gpt3_1024Devices_EndToEnd)->Unit(benchmark::kMillisecond);

// The engine alone on a deep pipeline: 96 stages (one layer each), 1536 micro-batches.
void BM_Engine_LargeGraph(benchmark::State& state) {
  const hetsim::Scenario s = gpt3(96, 1, 1536);
  const auto g = hetsim::schedule::build_schedule(s, *s.plan);
  for (auto _ : state) benchmark::DoNotOptimize(hetsim::engine::run_native(g));
  state.counters["tasks"] = static_cast<double>(g.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(g.size()));
}
BENCHMARK(BM_Engine_LargeGraph)->Unit(benchmark::kMillisecond);

void BM_Schedule_LargeGraph(benchmark::State& state) {
  const hetsim::Scenario s = gpt3(96, 1, 1536);
  std::size_t n = 0;
  for (auto _ : state) {
    auto g = hetsim::schedule::build_schedule(s, *s.plan);
    n = g.size();
    benchmark::DoNotOptimize(g);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
}
BENCHMARK(BM_Schedule_LargeGraph)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
