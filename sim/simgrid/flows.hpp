#pragma once
// What each task of a TaskGraph puts on the platform, unfolded to real devices: a compute task is
// one execution on its device (replicas and tp ranks compute alike and share nothing); a
// communication task is the point-to-point flows of its algorithm between the real devices —
// the ring, tree or hierarchical pattern the cost model chose for each TP and DP collective, one
// flow per rank for pipeline sends. Sizing: a flow
// carries what the cost model moved over its route in the task's time: (duration − route
// latency) × the bandwidth the cost model priced that route with (the fabric's, or the NIC share
// per device divided by the oversubscription). Alone on the fabric a task therefore takes exactly
// its modelled time; flows that share a link slow down. No SimGrid headers here.

#include <cstdint>
#include <vector>

#include "models/base/result.hpp"
#include "sim/schedule/task_graph.hpp"
#include "sim/simgrid/platform.hpp"

namespace hetsim::platform {

struct Flow {
  int src = 0, dst = 0;  ///< hosts
  double bytes = 0;
};

struct TaskWork {
  int exec_host = -1;       ///< ≥ 0: one execution of the task's duration on this host
  std::vector<Flow> flows;  ///< else these flows (all of a cross-device collective on its first member)
};

struct Decomposition {
  std::vector<int> first_host;  ///< per simulated device: member m runs on host first_host + m
  std::vector<TaskWork> work;   ///< per task
  /// Per task: the task whose activities it completes with (itself, or its collective's first
  /// member).
  std::vector<std::uint32_t> owner;
  std::size_t flows = 0, execs = 0;
};

/// Places the simulated devices on the platform's hosts (each pool's devices in the graph's
/// order: tp ranks, then replicas, then stages — Megatron's rank order) and decomposes every
/// task. Fails when the plan needs more devices of a pool than the platform has.
[[nodiscard]] Result<Decomposition> decompose(const schedule::TaskGraph& g, const hw::ClusterSpec& c,
                                              const Platform& p);

}  // namespace hetsim::platform
