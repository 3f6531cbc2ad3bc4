#include "sim/schedule/detail/unit_order.hpp"

#include <algorithm>

namespace hetsim::schedule::detail {

namespace {

std::vector<std::pair<bool, int>> one_run(cost::Schedule sch, int stage, int stages, int mb, int v) {
  std::vector<std::pair<bool, int>> order;
  const int units = mb * v;
  if (sch == cost::Schedule::GPipe) {
    for (int u = 0; u < units; ++u) order.push_back({false, u});
    for (int u = 0; u < units; ++u) order.push_back({true, u});
    return order;
  }
  // 1F1B (v = 1) and Megatron's interleaved 1F1B: a warm-up of forwards, a steady state of one
  // forward and one backward, a cool-down of backwards.
  const int warm = v == 1 ? std::min(stages - stage - 1, mb)
                          : std::min((stages - stage - 1) * 2 + (v - 1) * stages, units);
  for (int u = 0; u < warm; ++u) order.push_back({false, u});
  for (int u = 0; u < units - warm; ++u) {
    order.push_back({false, warm + u});
    order.push_back({true, u});
  }
  for (int u = units - warm; u < units; ++u) order.push_back({true, u});
  return order;
}

}  // namespace

std::vector<std::pair<bool, int>> stage_order(cost::Schedule sch, int stage, int stages, int mb, int v, int runs) {
  runs = std::max(1, runs);
  const auto run = one_run(sch, stage, stages, mb / runs, v);
  // Run r's units are run 0's shifted by r · (units per run): unit_of maps them to the same
  // chunks and to micro-batches r · mb/runs on (a run's units are whole groups of stages · v).
  const int units = (mb / runs) * v;
  std::vector<std::pair<bool, int>> order;
  order.reserve(run.size() * static_cast<std::size_t>(runs));
  for (int r = 0; r < runs; ++r)
    for (const auto& [bw, u] : run) order.push_back({bw, r * units + u});
  return order;
}

std::pair<int, int> unit_of(bool backward, int u, int stages, int v) {
  if (v == 1) return {0, u};
  const int per_group = stages * v;
  const int group = u / per_group;
  const int r = u % per_group;
  int chunk = r / stages;
  if (backward) chunk = v - 1 - chunk;
  return {chunk, group * stages + r % stages};
}

}  // namespace hetsim::schedule::detail
