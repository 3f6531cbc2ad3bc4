#include "sim/schedule/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "models/base/assert.hpp"
#include "models/cost/memory.hpp"
#include "sim/schedule/detail/builder.hpp"
#include "sim/schedule/detail/unit_order.hpp"

namespace hetsim::schedule {

SimTime to_ns(Duration d) {
  // Clamped (a cast of a double beyond int64 is undefined): a task past 10^17 ns (3 years) means
  // an absurd scenario, which run_simulation refuses before building (kMaxSimulatedStepS).
  const double ns = std::floor(d.v * 1e9 + 0.5);
  if (!(ns > 0)) return 0;  // (NaN too)
  return ns >= 1e17 ? SimTime{100'000'000'000'000'000} : static_cast<SimTime>(ns);
}

namespace {

// Bytes as the engine's integers, saturated at 2^56 (64 PiB): far above any device's memory,
// so a plan that large still "does not fit", and sums of many such terms cannot overflow.
std::int64_t to_bytes(Bytes b) {
  constexpr double kMax = static_cast<double>(1LL << 56);
  if (!(b.v > 0)) return 0;
  return b.v >= kMax ? (1LL << 56) : static_cast<std::int64_t>(std::llround(b.v));
}

}  // namespace

namespace detail {

TaskGraph Builder::build() {
  const int v = p_.schedule == cost::Schedule::Interleaved ? p_.virtual_stages : 1;
  for (std::size_t gi = 0; gi < p_.groups.size(); ++gi) build_group(static_cast<int>(gi), v);
  link_dp_collectives();
  finalize(g_, edges_);
  return std::move(g_);
}

void Builder::build_group(int gi, int v) {
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
    const auto order = stage_order(p_.schedule, si, P, M, v, p_.pipeline_runs);
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

    // overlap_ep_comm (1F1B, interleaved): the cost model pairs a backward with the forward after
    // it (all but a stage's last in-flight backwards have one). On the model's first chunk (the
    // first stage's; interleaved, its first chunk only), whose backwards send nothing, a paired
    // backward's all-to-alls run beside that forward's compute, as the model's slots put them;
    // the task waits after it. Elsewhere they stay where they are: waiting after the forward
    // would hold back the gradient the chunk before waits for (interleaved, the first stage's
    // later chunks send theirs to the last stage). The forwards' all-to-alls, which the model
    // hides behind the backward before them, stay too: a forward's exchange cannot start before
    // its compute (docs/simulation.md, Overlapped all-to-alls).
    // (Per pipeline run: a run's last backward is followed by the next run's first forward, which
    // the model does not pair with it.)
    const int Mr = p_.run_micro_batches(grp);
    const int run_units = Mr * v;
    const bool overlap_ep = p_.overlap_ep_comm && p_.schedule != cost::Schedule::GPipe && Mr >= 2 && si == 0;
    std::uint32_t pending = kNone;  // an overlapped all-to-all waiting for the next unit
    for (std::size_t pos = 0; pos < order.size(); ++pos) {
      const auto [bw, u] = order[pos];
      const auto [lc, mb] = unit_of(bw, u, P, v);
      const int k = lc * P + si;
      // (Any backward the stage's order follows with a forward of the same run: under 1F1B the
      // backwards before the cool-down, the first Mr − in-flight of a run.)
      const bool overlapped = overlap_ep && bw && k == 0 && pos + 1 < order.size() && !order[pos + 1].first &&
                              order[pos + 1].second / run_units == u / run_units;
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
    // overlapped, else after the whole backward: its compute and the blocking collectives and
    // sends that end it (a backward's TP collectives run inside it, between its GEMMs; the task
    // graph puts them after its compute). Then the optimizer; then (not overlapped) the
    // parameter gathers.
    const std::uint32_t backward_end = state_[dev].blocking;
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
                                : backward_end,
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

}  // namespace detail

TaskGraph build_schedule(const Scenario& s, const plan::Plan& p) { return detail::Builder(s, p).build(); }

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
