#pragma once
// Who takes part in each data-parallel collective of a task graph, as the replay runs it: the
// real devices (tp ranks × replicas of every folded device) that meet in each gradient
// reduction and parameter gather. Within one replica group a layer's collective joins that
// group's replicas; with several groups it joins the same layer's tasks of every group (the
// schedule's TaskGraph::collectives, see docs/simulation.md), rank k of each with rank k of the
// others: a collective per layer and tp rank over all the replicas of the plan.

#include <cstddef>
#include <vector>

#include "models/base/result.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::exec {

struct DpLayout {
  /// first_real[d]: the first real device of folded device d; its members are
  /// first_real[d] + replica · tp + rank.
  std::vector<int> first_real;
  int real_devices = 0;
  /// The distinct member lists, each in rank order (ascending real device indexes): one
  /// communicator each. Collectives with the same members share it: every member meets them in
  /// the same order (the predicted start order; collectives start together).
  std::vector<std::vector<int>> groups;
  /// Per task, per tp rank of its device: the index into `groups` of the collective it joins;
  /// empty for tasks that are not data-parallel collectives.
  std::vector<std::vector<int>> member_of;
};

/// The layout of `g`'s data-parallel collectives. Fails (BadInput, key "plan") when a
/// collective joins devices of different tensor-parallel degrees (their gradient shards would
/// need resharding), naming the layer, both degrees and the devices.
[[nodiscard]] Result<DpLayout> dp_layout(const schedule::TaskGraph& g);

/// Position of real device `real` in `group` (its rank in that collective), -1 when absent.
[[nodiscard]] int rank_in(const std::vector<int>& group, int real);

}  // namespace hetsim::exec
