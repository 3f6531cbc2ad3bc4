#pragma once
// The Builder behind build_schedule (private to sim/schedule): the step's tasks on their
// devices' streams and the edges between them, replica group by replica group.
// detail/builder.cpp emits tasks (streams, calls, op lists, compute units, DP collectives);
// schedule.cpp lays out a group's step with them (build_group).

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "sim/analytic/stage_cost.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::schedule::detail {

inline constexpr std::uint32_t kNone = 0xffffffffu;

class Builder {
 public:
  Builder(const Scenario& s, const plan::Plan& p) : s_(s), p_(p), costs_(analytic::stage_costs(s, p)) {}

  TaskGraph build();

 private:
  struct Chunk {
    int stage = 0, first_layer = 0, layers = 0;
    bool has_emb = false, has_head = false;
  };
  struct UnitIds {
    std::uint32_t first = kNone, done = kNone, send = kNone;
  };

  // Gives task `t` its collective calls (those that move something), shared with the tasks
  // that make the same calls.
  void set_calls(Task& t, std::vector<CommCall> calls);

  // The index in TaskGraph::op_lists of a stage's op list.
  std::uint32_t list_of(const std::shared_ptr<const std::vector<workload::Op>>& ops);
  // Gives compute task `t` the op lists it runs, as the cost model priced them: `layers` layers
  // of stage `c` (its mean over MoE and dense layers), and the embedding and the head where
  // `emb` and `head`.
  void set_ops(Task& t, const analytic::StageCost& c, int layers, bool emb, bool head);

  std::uint32_t add(Task t);
  void edge(std::uint32_t a, std::uint32_t b);
  // Appends t to its device's stream: after the stream's previous task and, for compute tasks,
  // after whatever blocks the compute stream (a TP collective or a blocking send).
  std::uint32_t push(Task t);
  // A task that blocks the device's compute stream until it ends (exposed TP, synchronous p2p).
  std::uint32_t push_blocking(Task t);
  // A blocking communication task of a compute unit (same layers and micro-batch).
  std::uint32_t push_blocking(const Task& unit, Stream stream, TaskKind kind, Duration d, std::vector<CommCall> calls,
                              cost::Algorithm algorithm = cost::Algorithm::Ring, bool regather = false);

  // A compute unit's blocking communication: its TP collectives (`tp`), then its expert-parallel
  // all-to-alls (MoE with ep > 1: dispatch and combine of every MoE layer, the cost model's
  // exposed share of them), each on its own stream. `both` is the two together: the two tasks
  // split its rounded time, so that the unit takes what one task of both would, to the
  // nanosecond. The unit's done task becomes the last of them.
  // `overlapped`: the all-to-all task runs beside the device's next compute unit (Task::overlapped):
  // it does not block the compute stream here; settle_overlapped() places it after that unit.
  void push_unit_comm(const Task& unit, UnitIds& ids, Duration tp, Duration both, cost::Algorithm algorithm,
                      bool regather, std::vector<CommCall> tp_calls, std::vector<CommCall> ep_calls,
                      bool overlapped = false);

  // The overlapped all-to-all `pending` on `dev` (kNone: none): after the compute unit just
  // pushed, which it ran beside, and before anything that follows that unit on the compute stream.
  void settle_overlapped(std::uint32_t dev, std::uint32_t& pending);

  // Lays out replica group `gi`'s step, each stage's layers in `v` chunks (in schedule.cpp).
  void build_group(int gi, int v);

  // The calls of `per_layer`'s lists, each made `layers` times.
  static std::vector<CommCall> unit_calls(std::initializer_list<const std::vector<CommCall>*> per_layer, int layers);
  // A unit's TP calls: its layers', half the embedding's and the head's collectives (the other
  // half goes with the other pass, as their time does), and the regather of a split message.
  static std::vector<CommCall> unit_tp_calls(const analytic::StageCost& c, const Chunk& ch,
                                             std::initializer_list<const std::vector<CommCall>*> per_layer,
                                             bool regather);

  // Emits a compute unit: one task, or one per layer when split (backward in reverse layer
  // order). Memory: `alloc` at the start of the first task, `free` at the end of the last.
  // Returns the first task id; per-layer ids go to `layer_tasks` (in execution order).
  // `emb` and `head` (zero where the unit lacks them) ride on the tasks of the unit's first and
  // last layer: where the executor runs them too.
  // The ops ride along alike (set_ops; `c` and `ch` the unit's stage and chunk).
  std::uint32_t emit_compute(const Task& base, TaskKind kind, Duration per_layer, Duration emb, Duration head,
                             bool split, bool reverse, std::int64_t alloc, std::int64_t free,
                             std::vector<std::uint32_t>& layer_tasks, const analytic::StageCost& c, const Chunk& ch);

  // A backward unit layer by layer (ZeRO 2/3 within a group): from the last layer down, the
  // layer's recompute (when the plan recomputes) and its backward; the head's backward rides on
  // the last layer's task and the embedding's on the first layer's. Memory as emit_compute.
  // Appends the tasks to `ran`; returns the first.
  std::uint32_t emit_layerwise_backward(const Task& base, const analytic::StageCost& c, const Chunk& ch,
                                        std::int64_t alloc, std::int64_t free, std::vector<std::uint32_t>& ran);

  // A DP collective's share for one layer of a chunk: its parameters' share of the stage's sync
  // (`cross`: of the all-reduce of the shards across replica groups, StageCost::dp_cross). Once
  // per step (`mb` < 0), joined with the same layer's task in the other groups, except hybrid
  // sharding's in-group gathers; or in micro-batch `mb` (ZeRO 2/3 within a group, never joined:
  // groups' micro-batches differ).
  std::uint32_t dp_task(std::uint32_t dev, const analytic::StageCost& c, const Chunk& ch, int k, int l,
                        TaskKind kind, bool cross = false, int mb = -1);

  // The time to send one micro-batch's activation (or gradient) between two stages: the link
  // cost computed for the pair (a, a+1) in stage_costs; for the interleaved wrap-around
  // between the last stage and the first, that pair's (StageCost::send_wrap).
  static Duration send_cost(const std::vector<analytic::StageCost>& costs, int from, int to);

  // Every layer's DP collective joins the same layer's tasks in the other groups.
  void link_dp_collectives();

  struct DeviceState {
    std::uint32_t last[kStreams] = {kNone, kNone, kNone, kNone, kNone, kNone};
    std::uint32_t blocking = kNone;
  };

  const Scenario& s_;
  const plan::Plan& p_;
  std::vector<std::vector<analytic::StageCost>> costs_;
  TaskGraph g_;
  std::vector<DeviceState> state_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges_;
  std::vector<std::uint32_t> gathers_;
  std::map<std::pair<int, int>, std::vector<std::uint32_t>> dp_members_;
  std::map<std::vector<CommCall>, std::uint32_t> call_sets_;
  std::map<const std::vector<workload::Op>*, std::uint32_t> list_index_;
  std::map<std::vector<OpUse>, std::uint32_t> use_sets_;
};

}  // namespace hetsim::schedule::detail
