#pragma once
// Who takes part in each data-parallel collective of a task graph, as the replay runs it: the
// real devices (tp ranks × replicas of every folded device) that meet in each gradient
// reduction and parameter gather. Within one replica group a layer's collective joins that
// group's replicas; with several groups it joins the same layer's tasks of every group (the
// schedule's TaskGraph::collectives, see docs/simulation.md).
//
// The layer's parameters are cut into C chunks, C the least common multiple of the members'
// tensor-parallel degrees: rank k of a member of degree t holds chunks k·C/t … (k+1)·C/t − 1
// (its 1/t shard of every weight, as Megatron-LM shards them, cut into C/t pieces). One
// collective per chunk, over the rank of every replica that holds it. With one degree, C = t and
// chunk k is rank k's shard: a collective per layer and tp rank over all the replicas of the
// plan; with several, a rank of the smaller degree joins one collective per chunk it holds
// (resharding by chunks: every element still meets every replica's copy of it once).

#include <cstddef>
#include <vector>

#include "models/base/result.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::exec {

struct DpLayout {
  /// first_real[d]: the first real device of folded device d; its members are
  /// first_real[d] + replica · tp + rank (schedule::unfold, whose member lists the groups are
  /// drawn from, as the SimGrid flows draw theirs).
  std::vector<int> first_real;
  int real_devices = 0;
  /// The distinct member lists, each in rank order (ascending real device indexes): one
  /// communicator each. Collectives with the same members share it: every member meets them in
  /// the same order (the predicted start order; collectives start together).
  std::vector<std::vector<int>> groups;
  /// Per task, per tp rank of its device: the indexes into `groups` of the collectives it joins,
  /// one per chunk it holds, in chunk order; empty for tasks that are not data-parallel
  /// collectives.
  std::vector<std::vector<std::vector<int>>> member_of;
  /// Per task: C, the chunks its collective cuts the layers' parameters into (0 for other tasks).
  std::vector<int> chunks;
  /// Hybrid sharding's all-reduce of the shards across groups (Task::across_groups): per task,
  /// per member of its device (replica · tp + rank), the indexes into `groups` of the
  /// collectives it joins, one per chunk it holds. A device of degree t over R replicas cuts the
  /// layer into n = t·R pieces (piece k·R + r on replica r, rank k: rank k's 1/t slice sharded
  /// over the replicas); C is the lcm of the members' n, and piece q holds chunks q·C/n …
  /// (q+1)·C/n − 1. Each chunk's collective joins its holder in every group. (member_of is
  /// empty for these tasks.)
  std::vector<std::vector<std::vector<int>>> pieces_of;
};

/// The most chunks one collective may cut its layers into (the lcm of its members' degrees).
inline constexpr int kMaxDpChunks = 64;

/// The layout of `g`'s data-parallel collectives. Fails (BadInput, key "plan") when the members'
/// tensor-parallel degrees (or, across groups, their pieces) would cut a layer into more than
/// kMaxDpChunks chunks, naming the layer and the degrees.
[[nodiscard]] Result<DpLayout> dp_layout(const schedule::TaskGraph& g);

/// Position of real device `real` in `group` (its rank in that collective), -1 when absent.
[[nodiscard]] int rank_in(const std::vector<int>& group, int real);

}  // namespace hetsim::exec
