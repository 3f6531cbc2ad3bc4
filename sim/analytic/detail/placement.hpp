#pragma once
// Where a plan's stages sit in their pools, as the SimGrid engine places them (private to
// sim/analytic): which nodes a data-parallel ring spans decides how many of its members share
// one.

#include <vector>

#include "models/hw/device.hpp"
#include "sim/plan/plan.hpp"

namespace hetsim::analytic::detail {

/// Where each stage's block of devices (tp × replicas) starts in its pool, placed as the SimGrid
/// engine places them (hw::BlockPlacer: each pool's blocks in group, then stage order).
/// [group][stage] → device index within the pool.
[[nodiscard]] std::vector<std::vector<int>> block_starts(const hw::ClusterSpec& cl, const plan::Plan& p);

/// Members per node of the data-parallel ring of stage `st` when several replica groups hold
/// its layers, as the SimGrid engine forms it: the members (one tp rank of every replica of every
/// stage holding any of these layers, group by group) in ring order, grouped by node where
/// consecutive; k channels when every node-run has k members, else 1 (flows.cpp's rule); 1 too
/// when the members are not the plan's `ranks` replicas once each. `starts`: block_starts.
[[nodiscard]] int dp_members_per_node(const hw::ClusterSpec& cl, const plan::Plan& p,
                                      const std::vector<std::vector<int>>& starts, const plan::Stage& st, int ranks);

}  // namespace hetsim::analytic::detail
