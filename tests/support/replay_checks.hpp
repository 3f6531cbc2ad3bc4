#pragma once
// Test helper: what every real replay must show, whatever its plan.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "exec/replay/replay.hpp"
#include "sim/schedule/schedule.hpp"

namespace hetsim::test {

// Measured: every task, every dependency kept, each device's tasks one at a time in the
// predicted order, the planned peaks.
inline void check_order_and_dependencies(const exec::Replay& r) {
  const auto& g = r.graph;
  const auto& m = r.measured;
  ASSERT_EQ(m.start.size(), g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    ASSERT_GE(m.start[i], 0);
    ASSERT_GE(m.end[i], m.start[i]);
    for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1]; ++k)
      EXPECT_LE(m.end[i], m.start[g.succ[k]]) << schedule::task_name(g.tasks[i]) << " before "
                                              << schedule::task_name(g.tasks[g.succ[k]]);
  }
  for (std::uint32_t d = 0; d < g.devices.size(); ++d) {
    std::vector<std::uint32_t> ids;
    for (std::uint32_t i = 0; i < g.size(); ++i)
      if (g.tasks[i].device == d) ids.push_back(i);
    std::stable_sort(ids.begin(), ids.end(), [&](auto a, auto b) { return r.predicted.start[a] < r.predicted.start[b]; });
    for (std::size_t k = 1; k < ids.size(); ++k) EXPECT_LE(m.end[ids[k - 1]], m.start[ids[k]]);
  }
  for (std::size_t d = 0; d < g.devices.size(); ++d) EXPECT_EQ(m.peak_bytes[d], r.predicted.peak_bytes[d]);
}

}  // namespace hetsim::test
