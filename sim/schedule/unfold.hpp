#pragma once
// Unfolding a TaskGraph: the real devices each folded device stands for (DeviceRep::count of
// them, member m = replica · tp + rank, Megatron's rank order), who meets in each of a task's
// groups, and which real device sends which a pipeline message's parts, as members of folded
// devices. The SimGrid flows (sim/simgrid/flows.cpp: a member on
// the host its device is placed at) and the replay (exec/replay: a member on its real device)
// both take their groups from here, so that a prediction and a measurement join the same devices
// in every collective and every pipeline message (tests/exec/payload_test.cpp compares them).

#include <cstdint>
#include <span>
#include <vector>

#include "sim/schedule/task_graph.hpp"

namespace hetsim::schedule {

/// Real device `member` (replica · tp + rank) of folded device `device`.
struct Member {
  std::uint32_t device = 0;
  int member = 0;
  friend bool operator==(const Member&, const Member&) = default;
};

/// The real devices numbered in the graph's device order: member m of device d is first[d] + m.
struct Unfolding {
  std::vector<int> first;  ///< per folded device
  int count = 0;           ///< real devices in all
  [[nodiscard]] int real(const Member& m) const { return first[m.device] + m.member; }
};
[[nodiscard]] Unfolding unfold(const TaskGraph& g);

/// Device `d`'s members in consecutive blocks of `n` (n = tp: each replica's tensor-parallel
/// group; a MoE block's expert_tp groups: CommCall::ranks). Requires: n ≥ 1.
[[nodiscard]] std::vector<std::vector<Member>> blocks_of(const TaskGraph& g, std::uint32_t d, int n);

/// Device `d`'s expert-parallel groups (Megatron-Core's expert rank order: expert_tp fastest,
/// then ep): in each block of expert_tp · ep members, the ep members expert_tp apart, in EP rank
/// order; block by block, then by offset in the block. With expert_tp = tp: tp rank k of
/// replicas e·ep … e·ep + ep − 1, the EP ranks drawn from the data-parallel ones.
[[nodiscard]] std::vector<std::vector<Member>> ep_groups(const TaskGraph& g, std::uint32_t d);

/// A data-parallel collective's members on chunk `chunk` of `chunks` (TaskGraph::dp_chunks):
/// for each of its tasks `tasks` (TaskGraph::members_of), in that order, the rank of every
/// replica of the task's device that holds the chunk (dp_chunk_holder), replica by replica. With
/// `ep` > 1 only the replicas r ≡ q (mod ep): those that hold the same experts (the routed
/// experts' part of the collective).
[[nodiscard]] std::vector<Member> dp_chunk_members(const TaskGraph& g, std::span<const std::uint32_t> tasks,
                                                   long long chunk, long long chunks, int ep = 1, int q = 0);

/// Whether a data-parallel collective's tasks fold their experts: some task's device runs its
/// experts on fewer ranks than its tp (DeviceRep::expert_tp below tp, MoE parallel folding).
[[nodiscard]] bool folds_experts(const TaskGraph& g, std::span<const std::uint32_t> tasks);
/// Whether any device of `g` folds its experts.
[[nodiscard]] bool folds_experts(const TaskGraph& g);

/// The routed experts' part of a data-parallel collective whose tasks fold their experts
/// (folds_experts): the expert-data-parallel groups. In Megatron-Core's expert rank order a
/// device's members are blocks of expert_tp · ep (ep_groups), and the members at the same offset
/// of every block hold the same experts' same expert_tp slice: one group per offset, of those
/// members of every task's device (in `tasks`' order, block by block), the whole expert part of
/// each member's gradients (expert_dp_bytes) once, not per chunk. tp · replicas / (expert_tp ·
/// ep) members each, also without data-parallel replicas. Requires: the tasks' devices share
/// expert_tp · ep (one plan's expert_tp and ep).
[[nodiscard]] std::vector<std::vector<Member>> expert_dp_groups(const TaskGraph& g, std::span<const std::uint32_t> tasks);

/// The buffer of task `t`'s routed-experts call `call` over an expert_dp_groups group: each
/// member's calls of that kind (its whole expert part), the largest over the collective's members.
[[nodiscard]] double expert_dp_bytes(const TaskGraph& g, std::uint32_t t, const CommCall& call);

/// Hybrid sharding's all-reduce across groups (Task::across_groups): the chunks it cuts the layer
/// into, the lcm of its tasks' devices' pieces (dp_pieces), so that each chunk lies in one piece
/// of every device.
[[nodiscard]] long long dp_piece_chunks(const TaskGraph& g, std::span<const std::uint32_t> tasks);

/// Hybrid sharding's all-reduce across groups: the member of each task's device (in `tasks`'
/// order) whose piece holds chunk `chunk` of `chunks` (dp_piece_holder).
[[nodiscard]] std::vector<Member> dp_piece_members(const TaskGraph& g, std::span<const std::uint32_t> tasks,
                                                   long long chunk, long long chunks);

/// One part of a pipeline message (send activation / send gradient): what real device `from` of
/// the sender sends real device `to` of the receiver, in bytes (0 where the task's calls carry
/// nothing: the part still orders the receiver after the sender).
struct Message {
  Member from, to;
  double bytes = 0;
  friend bool operator==(const Message&, const Message&) = default;
};

/// The device pipeline message task `t` (send activation / gradient) goes to: that of its first
/// successor on another device (the next stage's, or for a gradient the previous one's); `t`'s
/// own device when it has none (then it sends nothing).
[[nodiscard]] std::uint32_t message_receiver(const TaskGraph& g, std::uint32_t t);

/// What member `member` (replica r, rank j) of pipeline message task `t`'s device sends: to
/// replica r of the receiver (a pipeline's stages share their group's replicas), each rank k that
/// reads a part of its slice (pipeline_share > 0: resharded between tp degrees when the message is
/// split), pipeline_message_bytes each, in k's order. The SimGrid flows and the replay pair the
/// real devices of every pipeline message by this and the two below.
[[nodiscard]] std::vector<Message> messages_from(const TaskGraph& g, std::uint32_t t, int member);
/// What member `member` of task `t`'s receiver (message_receiver) gets from `t`: the
/// messages_from of the sender ranks of its replica that feed it (pipeline_feeders), in their order.
[[nodiscard]] std::vector<Message> messages_to(const TaskGraph& g, std::uint32_t t, int member);
/// Every part of pipeline message task `t`: messages_from each member of its device, in order.
[[nodiscard]] std::vector<Message> pipeline_messages(const TaskGraph& g, std::uint32_t t);

}  // namespace hetsim::schedule
