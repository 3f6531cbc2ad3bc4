#include "sim/schedule/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "models/base/assert.hpp"
#include "models/cost/memory.hpp"
#include "sim/analytic/stage_cost.hpp"

namespace hetsim::schedule {

SimTime to_ns(Duration d) { return static_cast<SimTime>(std::floor(d.v * 1e9 + 0.5)); }

namespace {

constexpr std::uint32_t kNone = 0xffffffffu;

// Bytes as the engine's integers, saturated at 2^56 (64 PiB): far above any device's memory,
// so a plan that large still "does not fit", and sums of many such terms cannot overflow.
std::int64_t to_bytes(Bytes b) {
  constexpr double kMax = static_cast<double>(1LL << 56);
  if (!(b.v > 0)) return 0;
  return b.v >= kMax ? (1LL << 56) : static_cast<std::int64_t>(std::llround(b.v));
}

// Appends `from`'s calls to `to`, each made `times` times as often.
void append(std::vector<CommCall>& to, const std::vector<CommCall>& from, double times) {
  for (CommCall c : from) {
    c.count *= times;
    to.push_back(c);
  }
}

// The order in which one stage runs its forward (F) and backward (B) units: pairs of
// (is_backward, unit index). Units are numbered per schedule (see unit_of below).
std::vector<std::pair<bool, int>> stage_order(cost::Schedule sch, int stage, int stages, int mb, int v) {
  std::vector<std::pair<bool, int>> order;
  const int units = mb * v;
  if (sch == cost::Schedule::GPipe) {
    for (int u = 0; u < units; ++u) order.push_back({false, u});
    for (int u = 0; u < units; ++u) order.push_back({true, u});
    return order;
  }
  // 1F1B (v = 1) and Megatron's interleaved 1F1B: a warm-up of forwards, a steady state of one
  // forward and one backward, a cool-down of backwards.
  const int warm = v == 1 ? std::min(stages - stage - 1, mb)
                          : std::min((stages - stage - 1) * 2 + (v - 1) * stages, units);
  for (int u = 0; u < warm; ++u) order.push_back({false, u});
  for (int u = 0; u < units - warm; ++u) {
    order.push_back({false, warm + u});
    order.push_back({true, u});
  }
  for (int u = units - warm; u < units; ++u) order.push_back({true, u});
  return order;
}

// Unit u of a stage → (local chunk, micro-batch). Interleaved: groups of p micro-batches per
// chunk, forward chunks ascending and backward chunks descending (Megatron-LM).
std::pair<int, int> unit_of(bool backward, int u, int stages, int v) {
  if (v == 1) return {0, u};
  const int per_group = stages * v;
  const int group = u / per_group;
  const int r = u % per_group;
  int chunk = r / stages;
  if (backward) chunk = v - 1 - chunk;
  return {chunk, group * stages + r % stages};
}

class Builder {
 public:
  Builder(const Scenario& s, const plan::Plan& p) : s_(s), p_(p), costs_(analytic::stage_costs(s, p)) {}

  TaskGraph build() {
    const int v = p_.schedule == cost::Schedule::Interleaved ? p_.virtual_stages : 1;
    for (std::size_t gi = 0; gi < p_.groups.size(); ++gi) build_group(static_cast<int>(gi), v);
    link_dp_collectives();
    finalize(g_, edges_);
    return std::move(g_);
  }

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
  void set_calls(Task& t, std::vector<CommCall> calls) {
    std::erase_if(calls, [](const CommCall& c) { return !(c.count > 0 && c.bytes > 0); });
    t.calls_count = static_cast<std::uint32_t>(calls.size());
    if (calls.empty()) {
      t.calls_begin = 0;
      return;
    }
    auto [it, fresh] = call_sets_.try_emplace(calls, static_cast<std::uint32_t>(g_.calls.size()));
    if (fresh) g_.calls.insert(g_.calls.end(), calls.begin(), calls.end());
    t.calls_begin = it->second;
  }

  // The index in TaskGraph::op_lists of a stage's op list.
  std::uint32_t list_of(const std::shared_ptr<const std::vector<workload::Op>>& ops) {
    auto [it, fresh] = list_index_.try_emplace(ops.get(), static_cast<std::uint32_t>(g_.op_lists.size()));
    if (fresh) g_.op_lists.push_back(*ops);
    return it->second;
  }
  // Gives compute task `t` the op lists it runs, as the cost model priced them: `layers` layers
  // of stage `c` (its mean over MoE and dense layers), and the embedding and the head where
  // `emb` and `head`.
  void set_ops(Task& t, const analytic::StageCost& c, int layers, bool emb, bool head) {
    std::vector<OpUse> uses;
    const double share = c.dense_layer_ops ? c.moe_share : 1.0;
    if (layers > 0 && c.layer_ops) uses.push_back({list_of(c.layer_ops), layers * share, OpRole::Layer});
    if (layers > 0 && c.dense_layer_ops) uses.push_back({list_of(c.dense_layer_ops), layers * (1 - share), OpRole::DenseLayer});
    if (emb && c.emb_ops) uses.push_back({list_of(c.emb_ops), 1, OpRole::Embedding});
    if (head && c.head_ops) uses.push_back({list_of(c.head_ops), 1, OpRole::Head});
    t.ops_count = static_cast<std::uint32_t>(uses.size());
    if (uses.empty()) return;
    auto [it, fresh] = use_sets_.try_emplace(uses, static_cast<std::uint32_t>(g_.op_uses.size()));
    if (fresh) g_.op_uses.insert(g_.op_uses.end(), uses.begin(), uses.end());
    t.ops_begin = it->second;
  }

  std::uint32_t add(Task t) {
    g_.tasks.push_back(t);
    return static_cast<std::uint32_t>(g_.tasks.size() - 1);
  }
  void edge(std::uint32_t a, std::uint32_t b) {
    if (a != kNone && b != kNone && a != b) edges_.emplace_back(a, b);
  }
  // Appends t to its device's stream: after the stream's previous task and, for compute tasks,
  // after whatever blocks the compute stream (a TP collective or a blocking send).
  std::uint32_t push(Task t) {
    const std::uint32_t id = add(t);
    auto& dev = state_[t.device];
    edge(dev.last[static_cast<int>(t.stream)], id);
    dev.last[static_cast<int>(t.stream)] = id;
    if (t.stream == Stream::Compute) {
      edge(dev.blocking, id);
      dev.blocking = id;
    }
    return id;
  }
  // A task that blocks the device's compute stream until it ends (exposed TP, synchronous p2p).
  std::uint32_t push_blocking(Task t) {
    const std::uint32_t id = push(t);
    edge(state_[t.device].blocking, id);
    state_[t.device].blocking = id;
    return id;
  }
  // A blocking communication task of a compute unit (same layers and micro-batch).
  std::uint32_t push_blocking(const Task& unit, Stream stream, TaskKind kind, Duration d, std::vector<CommCall> calls,
                              cost::Algorithm algorithm = cost::Algorithm::Ring, bool regather = false) {
    Task t = unit;
    set_calls(t, std::move(calls));
    t.stream = stream;
    t.kind = kind;
    t.duration = to_ns(d);
    t.algorithm = algorithm;
    t.regather = regather;
    t.split = (kind == TaskKind::SendActivation || kind == TaskKind::SendGradient) &&
              (p_.sequence_parallel || s_.training.pipeline_scatter_gather);
    return push_blocking(t);
  }

  // A compute unit's blocking communication: its TP collectives (`tp`), then its expert-parallel
  // all-to-alls (MoE with ep > 1: dispatch and combine of every MoE layer, the cost model's
  // exposed share of them), each on its own stream. `both` is the two together: the two tasks
  // split its rounded time, so that the unit takes what one task of both would, to the
  // nanosecond. The unit's done task becomes the last of them.
  // `overlapped`: the all-to-all task runs beside the device's next compute unit (Task::overlapped):
  // it does not block the compute stream here; settle_overlapped() places it after that unit.
  void push_unit_comm(const Task& unit, UnitIds& ids, Duration tp, Duration both, cost::Algorithm algorithm,
                      bool regather, std::vector<CommCall> tp_calls, std::vector<CommCall> ep_calls,
                      bool overlapped = false) {
    const SimTime total = to_ns(both);
    const SimTime tp_ns = std::min(total, to_ns(tp));
    if (tp_ns > 0) {
      Task t = unit;
      t.stream = Stream::TpComm;
      t.kind = TaskKind::TpCollective;
      t.duration = tp_ns;
      t.algorithm = algorithm;
      t.regather = regather;
      set_calls(t, std::move(tp_calls));
      ids.done = push_blocking(t);
    }
    if (total - tp_ns > 0) {
      Task t = unit;
      t.stream = Stream::EpComm;
      t.kind = TaskKind::EpAllToAll;
      t.duration = total - tp_ns;
      set_calls(t, std::move(ep_calls));
      if (overlapped) {
        t.overlapped = true;
        const std::uint32_t id = push(t);
        edge(ids.done, id);  // its unit's compute, or the TP collective after it
        ids.done = id;
      } else {
        ids.done = push_blocking(t);
      }
    }
  }

  // The overlapped all-to-all `pending` on `dev` (kNone: none): after the compute unit just
  // pushed, which it ran beside, and before anything that follows that unit on the compute stream.
  void settle_overlapped(std::uint32_t dev, std::uint32_t& pending) {
    if (pending == kNone) return;
    edge(state_[dev].last[0], pending);
    state_[dev].blocking = pending;
    pending = kNone;
  }

  void build_group(int gi, int v) {
    const plan::ReplicaGroup& grp = p_.groups[gi];
    const int P = static_cast<int>(grp.stages.size());
    const int K = P * v;
    const int M = grp.micro_batches;
    const auto& costs = costs_[gi];

    // Devices: one per stage.
    const std::uint32_t base = static_cast<std::uint32_t>(g_.devices.size());
    for (int si = 0; si < P; ++si) {
      const plan::Stage& st = grp.stages[si];
      const auto& c = costs[si];
      DeviceRep d;
      d.group = gi;
      d.stage = si;
      d.pool = st.pool;
      d.tp = st.tp;
      d.replicas = grp.replicas;
      d.count = st.tp * grp.replicas;
      d.ep = s_.model.moe() ? std::max(1, p_.ep) : 1;
      d.expert_tp = p_.expert_tp_of(st.tp);
      d.cp = std::max(1, p_.cp);
      cost::DeviceMemoryInput mi = c.memory;
      mi.transient = Bytes{0};
      mi.fragmentation = 0;
      mi.runtime_reserve = Bytes{0};
      d.baseline_bytes = to_bytes(cost::device_memory(mi).total());
      d.reserve_bytes = to_bytes(c.memory.runtime_reserve);
      d.fragmentation = c.memory.fragmentation;
      d.overlap_slowdown = s_.cluster.pools[st.pool].device.efficiency.overlap_slowdown;
      d.label = "g" + std::to_string(gi) + " s" + std::to_string(si) + " " +
                s_.cluster.pools[st.pool].name + " tp" + std::to_string(st.tp) + " ×" +
                std::to_string(grp.replicas);
      g_.devices.push_back(d);
      state_.emplace_back();
    }

    // Chunks in model order: chunk k lives on stage k mod P and holds 1/v of its layers; a stage
    // whose layers v does not divide gives its first chunks one layer more (as a custom
    // pipeline layout of Megatron-Core would: docs/cost-models.md#pipeline-time).
    std::vector<Chunk> chunks(K);
    int layer = 0;
    for (int k = 0; k < K; ++k) {
      Chunk& ch = chunks[k];
      ch.stage = k % P;
      const int stage_layers = grp.stages[ch.stage].layers;
      ch.layers = stage_layers / v + (k / P < stage_layers % v ? 1 : 0);
      ch.first_layer = layer;
      ch.has_emb = k == 0;
      ch.has_head = k == K - 1;
      layer += ch.layers;
    }
    HETSIM_ASSERT(layer == s_.model.layers, "chunks must cover the model");

    // (Folded expert parallelism syncs the experts among a replica's own TP ranks: a DP task
    // without replicas, StageCost::dp_reduce > 0.)
    const bool dp = p_.replicas() > 1 ||
                    std::any_of(costs.begin(), costs.end(), [](const analytic::StageCost& c) { return c.dp_reduce.v > 0; });
    // ZeRO ≤ 1: one reduction per step, per layer as the last backward produces it. ZeRO 2:
    // a reduce-scatter after every backward unit. ZeRO 3: also a gather before every forward
    // and backward unit. Parameter gathers once per step for ZeRO 1 and 2. Hybrid sharding
    // (ZeRO 2/3, several groups; StageCost::dp_cross): those within the group's own replicas,
    // and per layer, after its last reduce-scatter, the all-reduce of the shards across groups.
    const bool hybrid = p_.hybrid_sharding();
    const int shard = costs.empty() ? 1 : costs[0].shard_replicas;
    const bool in_group = hybrid ? shard > 1 : dp;
    // ZeRO 2/3 within a group run layer by layer, as FSDP's units (one per transformer block) do:
    // each forward and backward unit is one task per layer (a layer's recompute before its
    // backward), a layer's reduce-scatter follows its backward in every micro-batch and, ZeRO 3,
    // its gather precedes its forward and its recompute or backward, on the gather stream, issued
    // while the layer before runs (one layer of prefetch: FSDP1's limit_all_gathers, FSDP2's
    // all-gather stream waiting on the layer before).
    const bool per_unit_reduce = in_group && p_.zero >= 2;
    const bool per_unit_gather = in_group && p_.zero >= 3;
    const bool split_bwd = dp && p_.overlap_grad_reduce && !per_unit_reduce;
    const bool gather = in_group && p_.zero >= 1 && !per_unit_gather;
    const bool split_fwd = gather && p_.overlap_grad_reduce;
    std::vector<std::uint32_t> unit_reduces;
    std::map<int, std::uint32_t> last_unit_reduce;  // layer → its last micro-batch's reduce

    std::vector<std::vector<UnitIds>> F(K, std::vector<UnitIds>(M)), B(K, std::vector<UnitIds>(M));
    std::vector<std::vector<std::uint32_t>> fwd_layer_task(K), bwd_layer_task(K);  // split units

    for (int si = 0; si < P; ++si) {
      const std::uint32_t dev = base + si;
      const auto& c = costs[si];
      const auto order = stage_order(p_.schedule, si, P, M, v);
      // Layer-by-layer units: this stage's compute tasks in order, and the gather of the layer
      // of compute task `at`, issued once the task two before it has ended.
      std::vector<std::uint32_t> ran;
      auto gather_for = [&](std::size_t at, const Chunk& ch, int k, int l, int mb) {
        const std::uint32_t gt = dp_task(dev, c, ch, k, l, TaskKind::ParamGather, false, mb);
        if (at >= 2) edge(ran[at - 2], gt);
        edge(gt, ran[at]);
      };
      // The first forward and the last backward of each chunk on this stage.
      std::vector<int> first_fwd_mb(v, -1), last_bwd_mb(v, -1);
      for (const auto& [bw, u] : order) {
        const auto [lc, mb] = unit_of(bw, u, P, v);
        if (!bw && first_fwd_mb[lc] < 0) first_fwd_mb[lc] = mb;
        if (bw) last_bwd_mb[lc] = mb;
      }

      // Overlapped parameter gathers run first, on the DP stream, chunk by chunk in the order
      // of their first forward.
      if (split_fwd) {
        std::vector<int> seen;
        for (const auto& [bw, u] : order) {
          if (bw) continue;
          const int lc = unit_of(false, u, P, v).first;
          if (std::find(seen.begin(), seen.end(), lc) != seen.end()) continue;
          seen.push_back(lc);
          const Chunk& ch = chunks[lc * P + si];
          for (int l = 0; l < ch.layers; ++l)
            gathers_.push_back(dp_task(dev, c, ch, lc * P + si, l, TaskKind::ParamGather));
        }
      }

      // overlap_ep_comm (1F1B): the cost model pairs backward u with the forward after it (all
      // but a stage's last in-flight backwards have one). On the first stage, whose backwards
      // send nothing, a paired backward's all-to-alls run beside that forward's compute, as the
      // model's slots put them; the task waits after it. Elsewhere they stay where they are:
      // waiting after the forward would hold back the gradient the stage before waits for. The
      // forwards' all-to-alls, which the model hides behind the backward before them, stay too:
      // a forward's exchange cannot start before its compute (docs/simulation.md, Overlapped
      // all-to-alls).
      const bool overlap_ep = p_.overlap_ep_comm && p_.schedule == cost::Schedule::OneFOneB && M >= 2 && si == 0;
      const int in_flight =
          static_cast<int>(cost::in_flight_micro_batches(p_.schedule, si, P, M, p_.virtual_stages));
      std::uint32_t pending = kNone;  // an overlapped all-to-all waiting for the next unit
      for (std::size_t pos = 0; pos < order.size(); ++pos) {
        const auto [bw, u] = order[pos];
        const auto [lc, mb] = unit_of(bw, u, P, v);
        const bool overlapped = overlap_ep && bw && mb < M - in_flight && pos + 1 < order.size() &&
                                !order[pos + 1].first;
        const int k = lc * P + si;
        const Chunk& ch = chunks[k];
        Task base_task;
        base_task.device = dev;
        base_task.micro_batch = mb;
        base_task.chunk = k;
        base_task.first_layer = ch.first_layer;
        base_task.layers = ch.layers;
        const Bytes act = c.act_per_layer * ch.layers + (ch.has_emb ? c.act_edge : Bytes{0});
        // Short-lived buffers held while this unit computes: the logits around the head, and
        // ZeRO-3's gathered layers; a backward holds its working set (recomputed activations,
        // gradients in flight) or the head's logits, the larger (as the estimate counts it).
        const Bytes head_logits = ch.has_head ? c.logits : Bytes{0};
        const std::int64_t transient =
            to_bytes((bw ? (head_logits > c.backward_working ? head_logits : c.backward_working) : head_logits) +
                     c.gathered);
        if (!bw) {
          UnitIds& ids = F[k][mb];
          const bool gathered = split_fwd && mb == first_fwd_mb[lc];  // the step's gathers feed its layers
          std::vector<std::uint32_t> layers;
          ids.first = emit_compute(base_task, TaskKind::Forward, c.layer_fwd, ch.has_emb ? c.emb_fwd : Duration{0},
                                   ch.has_head ? c.head_fwd : Duration{0}, per_unit_reduce || gathered, false,
                                   to_bytes(act) + transient, transient, gathered ? fwd_layer_task[k] : layers, c, ch);
          if (per_unit_reduce) {
            const auto& tasks = gathered ? fwd_layer_task[k] : layers;
            for (int l = 0; l < ch.layers; ++l) {
              ran.push_back(tasks[static_cast<std::size_t>(l)]);
              if (per_unit_gather) gather_for(ran.size() - 1, ch, k, l, mb);
            }
          }
          settle_overlapped(dev, pending);
          ids.done = state_[dev].last[0];
          // The activation received from another stage, split over its sender's ranks, is
          // gathered first (StageCost::regather).
          const bool regather = to_ns(c.regather) > 0 && k > 0 && chunks[k - 1].stage != si;
          // (Summed in one order, so that the TP and EP tasks split the very time one task had.)
          const Duration emb = ch.has_emb ? c.emb_tp / 2 : Duration{0}, head = ch.has_head ? c.head_tp / 2 : Duration{0};
          const Duration rg = regather ? c.regather : Duration{0};
          // Context parallelism's exchange rides with the TP task (its exposed time, no traffic of
          // its own: docs/simulation.md).
          push_unit_comm(base_task, ids, (c.layer_tp_fwd + c.layer_cp_fwd) * ch.layers + emb + head + rg,
                         (c.layer_tp_fwd + c.layer_cp_fwd + c.layer_ep_fwd) * ch.layers + emb + head + rg, c.tp_algorithm, regather,
                         unit_tp_calls(c, ch, {&c.layer_tp_fwd_calls}, regather),
                         unit_calls({&c.layer_ep_fwd_calls}, ch.layers));
          if (k + 1 < K && chunks[k + 1].stage != si) {
            ids.send = push_blocking(base_task, Stream::PpComm, TaskKind::SendActivation,
                                     send_cost(costs, si, chunks[k + 1].stage), {c.send_call});
            edge(ids.done, ids.send);
          }
        } else {
          UnitIds& ids = B[k][mb];
          if (per_unit_reduce) {
            ids.first = emit_layerwise_backward(base_task, c, ch, transient, to_bytes(act) + transient, ran);
            const std::size_t per = to_ns(c.layer_recompute) > 0 ? 2 : 1;  // a layer's tasks: [recompute,] backward
            const std::size_t start = ran.size() - per * static_cast<std::size_t>(ch.layers);
            for (int i = 0; i < ch.layers; ++i) {
              const int l = ch.layers - 1 - i;
              const std::size_t at = start + per * static_cast<std::size_t>(i);
              const std::uint32_t layer_bwd = ran[at + per - 1];
              if (per_unit_gather) gather_for(at, ch, k, l, mb);
              const std::uint32_t r = dp_task(dev, c, ch, k, l, TaskKind::GradReduce, false, mb);
              edge(layer_bwd, r);
              unit_reduces.push_back(r);
              last_unit_reduce[ch.first_layer + l] = r;
            }
          } else {
            if (to_ns(c.layer_recompute) > 0) {
              Task t = base_task;
              t.kind = TaskKind::Recompute;
              t.duration = to_ns(c.layer_recompute * ch.layers);
              set_ops(t, c, ch.layers, false, false);
              ids.first = push(t);
            }
            const bool split = split_bwd && mb == last_bwd_mb[lc];
            const std::uint32_t b0 = emit_compute(base_task, TaskKind::Backward, c.layer_bwd,
                                                  ch.has_emb ? c.emb_bwd : Duration{0},
                                                  ch.has_head ? c.head_bwd : Duration{0}, split, true,
                                                  transient, to_bytes(act) + transient, bwd_layer_task[k], c, ch);
            if (ids.first == kNone) ids.first = b0;
          }
          ids.done = state_[dev].last[0];
          const bool regather = to_ns(c.regather) > 0 && k + 1 < K && chunks[k + 1].stage != si;  // the gradient
          const Duration emb = ch.has_emb ? c.emb_tp / 2 : Duration{0}, head = ch.has_head ? c.head_tp / 2 : Duration{0};
          const Duration rg = regather ? c.regather : Duration{0};
          const Duration cp = c.layer_cp_bwd + c.layer_cp_recompute;
          push_unit_comm(base_task, ids, (c.layer_tp_bwd + c.layer_tp_recompute + cp) * ch.layers + emb + head + rg,
                         (c.layer_tp_bwd + c.layer_tp_recompute + cp + c.layer_ep_bwd + c.layer_ep_recompute) * ch.layers + emb +
                             head + rg,
                         c.tp_algorithm, regather,
                         unit_tp_calls(c, ch, {&c.layer_tp_bwd_calls, &c.layer_tp_recompute_calls}, regather),
                         unit_calls({&c.layer_ep_bwd_calls, &c.layer_ep_recompute_calls}, ch.layers), overlapped);
          if (overlapped && g_.tasks[ids.done].overlapped) pending = ids.done;
          if (k > 0 && chunks[k - 1].stage != si) {
            ids.send = push_blocking(base_task, Stream::PpComm, TaskKind::SendGradient,
                                     send_cost(costs, si, chunks[k - 1].stage), {c.send_call});
            edge(ids.done, ids.send);
          }
        }
      }

      // Gradient reduction: per layer, right after its backward in the last micro-batch when
      // overlapped, else after the whole backward. Then the optimizer; then (not overlapped)
      // the parameter gathers.
      const std::uint32_t last_compute = state_[dev].last[0];
      std::vector<std::uint32_t> reduces;
      for (std::uint32_t r : unit_reduces)
        if (g_.tasks[r].device == dev) reduces.push_back(r);
      if (dp && (hybrid || !per_unit_reduce)) {
        for (int lc = v - 1; lc >= 0; --lc) {
          const int k = lc * P + si;
          const Chunk& ch = chunks[k];
          for (int l = ch.layers - 1; l >= 0; --l) {
            const std::uint32_t r = dp_task(dev, c, ch, k, l, TaskKind::GradReduce, hybrid);
            edge(per_unit_reduce ? last_unit_reduce.at(ch.first_layer + l)
                 : split_bwd      ? bwd_layer_task[k][ch.layers - 1 - l]
                                  : last_compute,
                 r);
            reduces.push_back(r);
          }
        }
      }
      Task opt;
      opt.device = dev;
      opt.kind = TaskKind::Optimizer;
      opt.duration = to_ns(c.optimizer);
      const std::uint32_t o = push(opt);
      for (std::uint32_t r : reduces) edge(r, o);
      if (gather && !split_fwd) {
        for (int lc = 0; lc < v; ++lc) {
          const Chunk& ch = chunks[lc * P + si];
          for (int l = 0; l < ch.layers; ++l) edge(o, dp_task(dev, c, ch, lc * P + si, l, TaskKind::ParamGather));
        }
      }
    }

    // Cross-device dependencies: a chunk's forward waits for the previous chunk's activation,
    // its backward (recompute first) for the next chunk's gradient.
    for (int k = 0; k < K; ++k)
      for (int mb = 0; mb < M; ++mb) {
        if (k > 0) edge(F[k - 1][mb].send != kNone ? F[k - 1][mb].send : F[k - 1][mb].done, F[k][mb].first);
        if (k + 1 < K) edge(B[k + 1][mb].send != kNone ? B[k + 1][mb].send : B[k + 1][mb].done, B[k][mb].first);
        else edge(F[k][mb].done, B[k][mb].first);
      }
    // Overlapped gathers feed the split first forward, layer by layer.
    if (split_fwd) {
      for (std::uint32_t gt : gathers_) {
        const Task& t = g_.tasks[gt];
        if (t.device < base) continue;
        const auto& layers = fwd_layer_task[t.chunk];
        const int idx = t.first_layer - chunks[t.chunk].first_layer;
        if (!layers.empty()) edge(gt, layers[idx]);
      }
    }
  }

  // The calls of `per_layer`'s lists, each made `layers` times.
  static std::vector<CommCall> unit_calls(std::initializer_list<const std::vector<CommCall>*> per_layer, int layers) {
    std::vector<CommCall> calls;
    for (const auto* l : per_layer) append(calls, *l, layers);
    return calls;
  }
  // A unit's TP calls: its layers', half the embedding's and the head's collectives (the other
  // half goes with the other pass, as their time does), and the regather of a split message.
  static std::vector<CommCall> unit_tp_calls(const analytic::StageCost& c, const Chunk& ch,
                                             std::initializer_list<const std::vector<CommCall>*> per_layer,
                                             bool regather) {
    std::vector<CommCall> calls;
    if (regather) calls.push_back(c.regather_call);  // first: the unit reads what it gathers
    append(calls, unit_calls(per_layer, ch.layers), 1);
    if (ch.has_emb) append(calls, c.emb_tp_calls, 0.5);
    if (ch.has_head) append(calls, c.head_tp_calls, 0.5);
    return calls;
  }

  // Emits a compute unit: one task, or one per layer when split (backward in reverse layer
  // order). Memory: `alloc` at the start of the first task, `free` at the end of the last.
  // Returns the first task id; per-layer ids go to `layer_tasks` (in execution order).
  // `emb` and `head` (zero where the unit lacks them) ride on the tasks of the unit's first and
  // last layer: where the executor runs them too.
  // The ops ride along alike (set_ops; `c` and `ch` the unit's stage and chunk).
  std::uint32_t emit_compute(const Task& base, TaskKind kind, Duration per_layer, Duration emb, Duration head,
                             bool split, bool reverse, std::int64_t alloc, std::int64_t free,
                             std::vector<std::uint32_t>& layer_tasks, const analytic::StageCost& c, const Chunk& ch) {
    Task t = base;
    t.kind = kind;
    if (!split) {
      set_ops(t, c, base.layers, ch.has_emb, ch.has_head);
      t.duration = to_ns(per_layer * base.layers + emb + head);
      t.alloc_bytes = alloc;
      t.free_bytes = free;
      return push(t);
    }
    std::uint32_t first = kNone;
    layer_tasks.clear();
    for (int i = 0; i < base.layers; ++i) {
      const int l = reverse ? base.layers - 1 - i : i;
      Task lt = base;
      lt.kind = kind;
      lt.first_layer = base.first_layer + l;
      lt.layers = 1;
      lt.duration = to_ns(per_layer + (l == 0 ? emb : Duration{0}) + (l == base.layers - 1 ? head : Duration{0}));
      set_ops(lt, c, 1, l == 0 && ch.has_emb, l == base.layers - 1 && ch.has_head);
      lt.alloc_bytes = i == 0 ? alloc : 0;
      lt.free_bytes = i == base.layers - 1 ? free : 0;
      const std::uint32_t id = push(lt);
      if (first == kNone) first = id;
      layer_tasks.push_back(id);
    }
    return first;
  }

  // A backward unit layer by layer (ZeRO 2/3 within a group): from the last layer down, the
  // layer's recompute (when the plan recomputes) and its backward; the head's backward rides on
  // the last layer's task and the embedding's on the first layer's. Memory as emit_compute.
  // Appends the tasks to `ran`; returns the first.
  std::uint32_t emit_layerwise_backward(const Task& base, const analytic::StageCost& c, const Chunk& ch,
                                        std::int64_t alloc, std::int64_t free, std::vector<std::uint32_t>& ran) {
    std::uint32_t first = kNone, last = kNone;
    for (int i = 0; i < ch.layers; ++i) {
      const int l = ch.layers - 1 - i;
      Task lt = base;
      lt.first_layer = base.first_layer + l;
      lt.layers = 1;
      if (to_ns(c.layer_recompute) > 0) {
        lt.kind = TaskKind::Recompute;
        lt.duration = to_ns(c.layer_recompute);
        set_ops(lt, c, 1, false, false);
        last = push(lt);
        ran.push_back(last);
        if (first == kNone) first = last;
      }
      lt.kind = TaskKind::Backward;
      lt.duration = to_ns(c.layer_bwd + (l == 0 && ch.has_emb ? c.emb_bwd : Duration{0}) +
                          (l == ch.layers - 1 && ch.has_head ? c.head_bwd : Duration{0}));
      set_ops(lt, c, 1, l == 0 && ch.has_emb, l == ch.layers - 1 && ch.has_head);
      last = push(lt);
      ran.push_back(last);
      if (first == kNone) first = last;
    }
    if (first == kNone) return kNone;  // no layers (validation refuses such stages)
    g_.tasks[first].alloc_bytes = alloc;
    g_.tasks[last].free_bytes = free;
    return first;
  }

  // A DP collective's share for one layer of a chunk: its parameters' share of the stage's sync
  // (`cross`: of the all-reduce of the shards across replica groups, StageCost::dp_cross). Once
  // per step (`mb` < 0), joined with the same layer's task in the other groups, except hybrid
  // sharding's in-group gathers; or in micro-batch `mb` (ZeRO 2/3 within a group, never joined:
  // groups' micro-batches differ).
  std::uint32_t dp_task(std::uint32_t dev, const analytic::StageCost& c, const Chunk& ch, int k, int l,
                        TaskKind kind, bool cross = false, int mb = -1) {
    double params = c.params_layer;
    if (ch.has_emb && l == 0) params += c.params_emb;
    if (ch.has_head && l == ch.layers - 1) params += c.params_head;
    const double share = c.params > 0 ? params / c.params : 0;
    Task t;
    t.device = dev;
    t.stream = kind == TaskKind::ParamGather ? Stream::DpGather : Stream::DpComm;
    t.kind = kind;
    t.first_layer = ch.first_layer + l;
    t.layers = 1;
    t.chunk = k;
    t.duration = to_ns((cross ? c.dp_cross : kind == TaskKind::GradReduce ? c.dp_reduce : c.dp_gather) * share);
    t.algorithm = cross ? c.dp_cross_algorithm
                        : kind == TaskKind::GradReduce ? c.dp_reduce_algorithm : c.dp_gather_algorithm;
    t.across_groups = cross;
    // The layer's share of the stage's buffers.
    std::vector<CommCall> calls = cross ? c.dp_cross_calls : kind == TaskKind::GradReduce ? c.dp_reduce_calls : c.dp_gather_calls;
    for (auto& call : calls) call.bytes *= share;
    set_calls(t, std::move(calls));
    if (mb >= 0) t.micro_batch = mb;
    const std::uint32_t id = push(t);
    if (mb < 0 && (cross || !p_.hybrid_sharding())) dp_members_[{static_cast<int>(kind), t.first_layer}].push_back(id);
    return id;
  }

  // The time to send one micro-batch's activation (or gradient) between two stages: the link
  // cost computed for the pair (a, a+1) in stage_costs; for the interleaved wrap-around from
  // the last stage to the first, the first stage's link.
  static Duration send_cost(const std::vector<analytic::StageCost>& costs, int from, int to) {
    const int lo = std::min(from, to);
    const int hi = std::max(from, to);
    if (hi == lo + 1) return costs[lo].send_next;
    return costs[0].send_next;
  }

  // Every layer's DP collective joins the same layer's tasks in the other groups.
  void link_dp_collectives() {
    if (p_.groups.size() <= 1) return;
    for (const auto& [key, members] : dp_members_) {
      if (members.size() <= 1) continue;
      const auto id = static_cast<std::uint32_t>(g_.collectives.size());
      // One collective ends for all its members at once: it lasts as long as its slowest side.
      SimTime longest = 0;
      for (std::uint32_t t : members) longest = std::max(longest, g_.tasks[t].duration);
      for (std::uint32_t t : members) {
        g_.tasks[t].collective = id;
        g_.tasks[t].duration = longest;
      }
      g_.collectives.push_back(members);
    }
  }

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

}  // namespace

TaskGraph build_schedule(const Scenario& s, const plan::Plan& p) { return Builder(s, p).build(); }

double estimated_tasks(const Scenario& s, const plan::Plan& p) {
  const double v = p.schedule == cost::Schedule::Interleaved ? p.virtual_stages : 1;
  double n = 0;
  // Per stage and micro-batch at most: F, TP, EP, send, R, B, TP, EP, send (EP: MoE with
  // ep > 1); plus per layer the split units and two DP collectives, and the optimizer.
  // ZeRO 2/3: per layer and micro-batch also a forward, a recompute, a backward, two gathers and
  // a reduce-scatter.
  const double per_unit = s.model.moe() && p.ep > 1 ? 9 : 7;
  for (const auto& g : p.groups) {
    n += static_cast<double>(g.stages.size()) * g.micro_batches * v * per_unit + static_cast<double>(g.stages.size());
    if (p.zero >= 2) n += 6.0 * g.micro_batches * s.model.layers;
  }
  return n + 4.0 * s.model.layers * static_cast<double>(p.groups.size());
}

}  // namespace hetsim::schedule
