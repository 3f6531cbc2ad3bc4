#pragma once
// What each task of a TaskGraph puts on the platform, unfolded to real devices (each group's
// members from schedule/unfold.hpp, as the replay draws its groups): a compute task is
// one execution on its device (replicas and tp ranks compute alike and share nothing); a
// communication task is the point-to-point flows of the algorithm the cost model chose (ring,
// tree, hierarchical, pairwise all-to-all) between the real devices, one flow per rank for
// pipeline sends.
// Sizing: the flows carry the bytes of the task's calls (schedule::CommCall: the buffers the cost
// model priced, their counts and exposed shares) as each algorithm moves them, at a rate the cost
// model's bandwidth for their route allows (the fabric's, or the NIC share per device divided by
// the oversubscription), shared among the task's own flows of their kind on a device. A ring's
// edges all carry the same bytes at the ring's bottleneck rate (a ring spanning nodes runs as one
// channel per device of a node, as NCCL does); a tree is NCCL's two complementary trees; an
// expert all-to-all is a flow between every ordered pair of each EP group. What the cost model
// charges beyond moving the bytes (per-step latencies, call costs) is a wait before the flows
// (TaskWork::delay). Alone on the fabric a task therefore takes its modelled time; flows of
// concurrent tasks that share a link slow down. No SimGrid headers here.

#include <cstdint>
#include <vector>

#include "models/base/result.hpp"
#include "sim/schedule/task_graph.hpp"
#include "sim/simgrid/platform.hpp"

namespace hetsim::platform {

struct Flow {
  int src = 0, dst = 0;  ///< hosts
  double bytes = 0;
  double rate = 0;  ///< bytes/s it was sized at: alone it runs at this rate (SimGrid caps it there)
};

struct TaskWork {
  int exec_host = -1;       ///< ≥ 0: one execution of the task's duration on this host
  std::vector<Flow> flows;  ///< else these flows (all of a cross-device collective on its first member)
  /// Seconds the flows wait before they start: the part of the task's time that moves no bytes
  /// (the cost model's per-step latencies and call costs beyond the routes' own latency).
  double delay = 0;
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
