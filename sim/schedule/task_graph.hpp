#pragma once
// The TaskGraph: what every device does in one training step, as tasks on in-order streams
// with dependencies. Built from a Plan by schedule/ (the single source of truth that engines
// and the executor share); run by engine/. Times are integral nanoseconds so that event order
// never depends on floating-point rounding.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/cost/collectives.hpp"
#include "models/workload/layer_ops.hpp"

namespace hetsim::schedule {

using SimTime = std::int64_t;  ///< nanoseconds

/// Streams of a device: tasks on one stream run one at a time, in the order they were added.
/// EpComm carries expert parallelism's all-to-alls (mixture-of-experts models with ep > 1).
/// DpComm carries the gradient reductions, DpGather the parameter gathers: frameworks issue
/// them on streams of their own (PyTorch FSDP2's all-gather and reduce-scatter streams), so a
/// ZeRO-3 gather for the next unit does not wait behind the last unit's reduce-scatter.
enum class Stream : std::uint8_t { Compute, TpComm, PpComm, DpComm, EpComm, DpGather };
inline constexpr int kStreams = 6;
[[nodiscard]] std::string_view stream_name(Stream s);

enum class TaskKind : std::uint8_t {
  Forward, Backward, Recompute, Optimizer,  // compute stream
  TpCollective,                             // TP stream
  SendActivation, SendGradient,             // PP stream (the sender's)
  GradReduce, ParamGather,                  // DP stream
  EpAllToAll                                // EP stream
};
[[nodiscard]] std::string_view task_kind_name(TaskKind k);

inline constexpr std::uint32_t kNoCollective = 0xffffffffu;

/// One collective call of a communication task, as the cost model priced it (cost::CommCall).
using CommCall = cost::CommCall;

/// What a list of ops a compute task runs stands for.
enum class OpRole : std::uint8_t {
  Layer,       ///< a transformer layer of the stage's kind (MoE where the stage has MoE layers)
  DenseLayer,  ///< a MoE model's dense layer, in a stage that mixes both kinds
  Embedding,
  Head,
};

/// One op list a compute task runs, as the cost model priced it: the list (TaskGraph::op_lists,
/// the ops of one micro-batch on one device) and how many times; a layer list is priced at the
/// stage's mean over its MoE and dense layers (times = layers × their share). A recompute task
/// runs each op's recompute share of its forward (cost::recompute_share).
struct OpUse {
  std::uint32_t list = 0;
  double times = 1;
  OpRole role = OpRole::Layer;
  auto operator<=>(const OpUse&) const = default;
};

struct Task {
  std::uint32_t device = 0;  ///< index into TaskGraph::devices
  Stream stream = Stream::Compute;
  TaskKind kind = TaskKind::Forward;
  std::int32_t micro_batch = -1;  ///< -1: once per step
  std::int32_t chunk = -1;        ///< model chunk (virtual stage) index in the replica, -1: none
  std::int32_t first_layer = 0;
  std::int32_t layers = 0;
  SimTime duration = 0;
  std::int64_t alloc_bytes = 0;  ///< allocated on the device when the task starts
  std::int64_t free_bytes = 0;   ///< freed when it ends
  std::uint32_t collective = kNoCollective;  ///< members of one collective start together
  /// For TP and DP collectives, the algorithm the cost model priced: the simgrid engine
  /// decomposes the task into its flows.
  cost::Algorithm algorithm = cost::Algorithm::Ring;
  /// A TP collective task that first all-gathers the pipeline message its unit received split
  /// over the sender's TP ranks (pipeline_scatter_gather without sequence parallelism).
  bool regather = false;
  /// A gradient reduce of hybrid sharding (ZeRO 2/3 over several replica groups): the groups'
  /// shards of the layer's gradients, each reduced within its group, all-reduced across the
  /// groups, one member per group for each piece of the layer (docs/cost-models.md#hybrid-sharding).
  bool across_groups = false;
  /// A pipeline message (send activation / gradient) split over the tensor-parallel ranks:
  /// sequence parallelism, or pipeline_scatter_gather; each rank sends its slice
  /// (pipeline_feeders, pipeline_share).
  bool split = false;
  /// A backward's EP all-to-all under overlap_ep_comm whose exchange runs beside the
  /// device's next compute unit (the forward the cost model pairs it with; on the model's first
  /// chunk, under 1F1B or the interleaved schedule): it starts when its own unit's compute (and
  /// TP collective) ends; the task itself sits
  /// after that forward's compute and is the exposed wait for it (docs/simulation.md, Overlapped
  /// all-to-alls).
  bool overlapped = false;
  /// The collective calls a communication task makes: TaskGraph::calls[calls_begin ..
  /// calls_begin + calls_count) (none for compute tasks).
  std::uint32_t calls_begin = 0;
  std::uint32_t calls_count = 0;
  /// The op lists a compute task runs: TaskGraph::op_uses[ops_begin .. ops_begin + ops_count)
  /// (none for communication tasks).
  std::uint32_t ops_begin = 0;
  std::uint32_t ops_count = 0;
};

/// One simulated device standing for `count` identical real devices: the tp ranks of a stage
/// (symmetric by construction) times the identical replicas of its group.
struct DeviceRep {
  int group = 0, stage = 0, pool = 0, tp = 1, replicas = 1;
  int count = 1;                  ///< real devices it stands for (tp · replicas)
  /// Expert-parallel degree: replicas e·ep … e·ep + ep − 1 (e = 0, 1, …) hold a MoE layer's
  /// experts between them, and each tp rank exchanges tokens with its counterparts there
  /// (all-to-all).
  int ep = 1;
  /// The experts' tensor parallelism (plan::Plan::expert_tp; 0 = tp, unless folded): the
  /// stage's count devices, in Megatron-Core's expert rank order, are blocks of expert_tp × ep,
  /// whose expert_tp-apart members form the EP groups.
  int expert_tp = 0;
  [[nodiscard]] int expert_tp_or_tp() const { return expert_tp > 0 ? expert_tp : std::max(1, tp); }
  /// Context parallelism: cp consecutive replicas share each sequence (plan::Plan::cp), and
  /// wait for one another inside every layer's attention.
  int cp = 1;
  std::int64_t baseline_bytes = 0;  ///< weights, gradients, optimizer state, comm buffers
  std::int64_t reserve_bytes = 0;   ///< runtime reserve (added after fragmentation)
  double fragmentation = 0;
  /// The device's overlap_slowdown (σ): while one of its data-parallel collectives (dp comm, dp
  /// gather) runs, its compute runs at 1/(1 + σ) of its speed (the collective's kernels hold
  /// SMs; docs/simulation.md).
  double overlap_slowdown = 0;
  std::string label;  ///< "g0 s3 h100-sxm5 tp8 ×4"
};

struct TaskGraph {
  std::vector<DeviceRep> devices;
  std::vector<Task> tasks;
  /// Dependencies in CSR form: the successors of task t are succ[succ_begin[t] .. succ_begin[t+1]).
  std::vector<std::uint32_t> succ_begin;
  std::vector<std::uint32_t> succ;
  std::vector<std::uint32_t> pred_count;
  /// Members of each collective (task ids).
  std::vector<std::vector<std::uint32_t>> collectives;
  /// The calls of the communication tasks (Task::calls_begin); tasks with the same calls share them.
  std::vector<CommCall> calls;
  /// The distinct op lists the compute tasks run (OpUse::list), and their uses (Task::ops_begin).
  std::vector<std::vector<workload::Op>> op_lists;
  std::vector<OpUse> op_uses;

  /// The op lists compute task `t` runs (empty for a communication task).
  [[nodiscard]] std::span<const OpUse> ops_of(std::uint32_t t) const {
    return {op_uses.data() + tasks[t].ops_begin, tasks[t].ops_count};
  }

  /// The calls of task `t` (empty for a compute task).
  [[nodiscard]] std::span<const CommCall> calls_of(std::uint32_t t) const {
    return {calls.data() + tasks[t].calls_begin, tasks[t].calls_count};
  }
  /// The payload of task `t`: the bytes of its calls, each call's buffer times its count.
  [[nodiscard]] double payload_bytes(std::uint32_t t) const;

  [[nodiscard]] std::size_t size() const { return tasks.size(); }
  /// Real tasks the folded graph stands for (each task times its device's count).
  [[nodiscard]] double unfolded_size() const;
  /// The tasks that meet in task `t`'s collective: its collective's members, or `t` alone.
  [[nodiscard]] std::vector<std::uint32_t> members_of(std::uint32_t t) const;
  /// The chunks a data-parallel collective cuts its layers' parameters into: the least common
  /// multiple of its members' tensor-parallel degrees (the SimGrid flows and the executor's
  /// dp_layout cut them alike; docs/executor.md). Rank k of a device of degree t holds chunks
  /// k·C/t … (k+1)·C/t − 1; dp_chunk_holder says which rank holds a chunk.
  [[nodiscard]] long long dp_chunks(std::uint32_t t) const;
};

/// The buffer of one of the `chunks` chunks (TaskGraph::dp_chunks; across groups, of the
/// layer's pieces) of a data-parallel collective for task `t`'s call `call`: each member's calls
/// of that kind (dense, or the routed experts' alike) cover its 1/tp share of the layer,
/// chunks/tp chunks (across groups its shard, chunks/dp_pieces chunks); the largest over the
/// collective's members (norms are whole on every tp rank). The SimGrid flows and the executor
/// size a DP collective's chunks by this.
[[nodiscard]] double dp_chunk_bytes(const TaskGraph& g, std::uint32_t t, const CommCall& call, long long chunks);

/// The tensor-parallel rank of a device of degree `tp` that holds chunk `chunk` of `chunks`.
[[nodiscard]] inline int dp_chunk_holder(long long chunk, int tp, long long chunks) {
  return static_cast<int>(chunk * tp / chunks);
}

/// Hybrid sharding's pieces (Task::across_groups): a device of degree tp over R replicas cuts a
/// layer into tp·R pieces, piece k·R + r on replica r, rank k (rank k's 1/tp slice sharded over
/// the replicas).
[[nodiscard]] inline long long dp_pieces(const DeviceRep& d) { return static_cast<long long>(d.tp) * d.replicas; }
/// Of a layer cut into `chunks` equal chunks (at least dp_pieces(d) of them), the member of `d`
/// (replica · tp + rank) whose piece holds chunk `chunk`.
[[nodiscard]] inline int dp_piece_holder(long long chunk, long long chunks, const DeviceRep& d) {
  const long long piece = chunk * dp_pieces(d) / chunks;
  return static_cast<int>(piece % d.replicas) * d.tp + static_cast<int>(piece / d.replicas);
}

/// A task whose running slows its device's compute (DeviceRep::overlap_slowdown): a data-parallel
/// collective (dp comm, dp gather stream) of some length. TP, EP and pipeline tasks block the
/// compute stream; their exposed times already carry the slow-down of what they overlap. Both
/// engines apply it.
[[nodiscard]] inline bool slows_compute(const Task& t) {
  return t.duration > 0 && (t.stream == Stream::DpComm || t.stream == Stream::DpGather);
}

/// Pipeline messages (send activation / send gradient) between a stage of tensor-parallel degree
/// `from_tp` and the next (or previous) of degree `to_tp`, within one replica. `split` (sequence
/// parallelism, or pipeline_scatter_gather): rank j of the sender holds the slice
/// [j/from_tp, (j+1)/from_tp) of the micro-batch's activation and rank k of the receiver needs
/// [k/to_tp, (k+1)/to_tp), so it reads every sender rank whose slice overlaps its own, the
/// overlap from each (the activation resharded on the way). Not split: every sender rank holds
/// the whole activation and rank k reads it from rank k mod from_tp alone. The SimGrid flows and
/// the executor pair the ranks and size the messages by these two functions.
[[nodiscard]] std::vector<int> pipeline_feeders(int from_tp, int to_tp, int rank, bool split);
/// The share of the whole activation that sender rank `from` sends receiver rank `to` (0 when
/// it sends it nothing).
[[nodiscard]] double pipeline_share(int from_tp, int to_tp, int from, int to, bool split);
/// The bytes pipeline message task `t` (send activation / gradient) carries from sender rank
/// `from` (of degree from_tp) to receiver rank `to` (of degree to_tp): pipeline_share of its
/// call's activation. The SimGrid flows and the replay size each message by this.
[[nodiscard]] double pipeline_message_bytes(const TaskGraph& g, std::uint32_t t, int from_tp, int to_tp, int from, int to);

/// Builds the CSR arrays from an edge list (from, to); duplicates are kept, self-edges are a bug.
void finalize(TaskGraph& g, std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges);

/// "F L12-23 mb5", "R L0-11 mb0", "send act L24-35 mb3", "grad reduce L5" (hybrid sharding's
/// "grad all-reduce across groups L5"), "param gather L5",
/// "ep a2a L0-3 mb2", "optimizer".
[[nodiscard]] std::string task_name(const Task& t);

}  // namespace hetsim::schedule
