#pragma once
// The communicators a replay runs its collectives on (internal to exec/replay): the tp ranks of
// each (folded device, replica); the EP groups and the hierarchical dispatch's rails and nodes
// (expert parallelism); the members of each data-parallel collective (dp_layout) and, under
// expert parallelism, those of them that hold the same experts. Across processes (mpirun) every
// process takes part in every split (MPI_Comm_split is collective) and keeps the communicator of
// its own member only; the others are null.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/backend.hpp"
#include "exec/replay/dp_groups.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::exec {

/// Declared in the order they are made; destroyed in reverse, so the process sub-groups outlive
/// the communicators made over them.
struct ReplayComms {
  std::vector<std::unique_ptr<ProcessGroup>> subgroups;
  /// tp[folded device][replica][rank].
  std::vector<std::vector<Communicators>> tp;
  /// The MoE block's expert tensor-parallel groups where a device folds its experts onto fewer
  /// ranks than its tp (1 < expert_tp < tp: schedule::blocks_of(expert_tp)), per real device
  /// (null elsewhere); `etp` owns them.
  std::vector<Communicators> etp;
  std::vector<Communicator*> etp_of;
  /// The expert-parallel groups (ep > 1: schedule::ep_groups, Megatron-Core's expert rank order,
  /// the communicator's rank a member's EP rank), per real device; `ep` owns them.
  std::vector<Communicators> ep;
  std::vector<Communicator*> ep_of;
  /// The hierarchical dispatch over N > 1 nodes, per real device: its EP group's ranks of one
  /// local index across the nodes (its rail: the network step) and its ranks on one node (the
  /// fabric step; null where a node holds one EP rank). `hier` owns them.
  std::vector<Communicators> hier;
  std::vector<Communicator*> rail_of, node_of;
  /// Per DpLayout group, per member.
  std::vector<Communicators> dp;
  /// Per real device, per DpLayout group it joins: its own member's communicator.
  std::vector<std::map<int, Communicator*>> dp_of;
  /// Under expert parallelism, per real device, per DpLayout group: the communicator of the
  /// group's members that hold the same experts (the same EP rank: replica mod ep), for the
  /// routed experts' part of its collectives; absent when the device is alone with its experts.
  /// Where the collective folds its experts (schedule::folds_experts) the part runs once over
  /// the member's expert-data-parallel group (schedule::expert_dp_groups), keyed by the first
  /// DpLayout group the member joins for it. `edp` owns them.
  std::vector<Communicators> edp;
  std::vector<std::map<int, Communicator*>> edp_of;
};

/// What the groups are made over: the real devices (null where another process drives one),
/// the backend, the process group under mpirun (null: one process) and this process's rank.
/// Transport notes ("tensor-parallel collectives: …", one process only) are added to `notes`.
struct GroupSite {
  const std::vector<std::unique_ptr<Device>>& devices;
  Backend& backend;
  ProcessGroup* world = nullptr;
  int me = -1;
  std::vector<std::string>& notes;
};

/// Makes every group of the replay of `g` under `p`, in one fixed order (every process makes
/// the same splits in the same order). ep_nodes[d]: the nodes folded device d's EP groups span
/// under the hierarchical dispatch (1: the plain all-to-all).
[[nodiscard]] Result<ReplayComms> make_communicators(const GroupSite& site, const schedule::TaskGraph& g,
                                                     const plan::Plan& p, const DpLayout& layout, bool moe_ep,
                                                     const std::vector<int>& ep_nodes);

}  // namespace hetsim::exec
