#include "sim/analytic/stage_cost.hpp"

#include <algorithm>
#include <limits>

#include "models/cost/collectives.hpp"
#include "models/cost/compute.hpp"
#include "models/workload/layer_ops.hpp"
#include "sim/analytic/detail/context.hpp"
#include "sim/analytic/detail/dp_sync.hpp"
#include "sim/analytic/detail/layer_cost.hpp"
#include "sim/analytic/detail/links.hpp"
#include "sim/analytic/detail/stage_memory.hpp"

namespace hetsim::analytic {
namespace {

using cost::Collective;
using cost::CommGroup;
using cost::Pass;
using detail::fabric_cost;
using detail::nic_cost;
using detail::slower;

}  // namespace

workload::MicroBatchShape micro_batch_shape(const Scenario& s, const plan::Plan& p, const plan::Stage& st) {
  workload::MicroBatchShape shape;
  shape.micro_batch = p.micro_batch;
  shape.seq_len = s.training.seq_len / std::max(1, p.cp);  // the rank's share of each sequence
  shape.cp = std::max(1, p.cp);
  shape.cp_exchange = p.cp_comm;
  shape.tp = st.tp;
  shape.ep = s.model.moe() ? p.ep : 1;
  shape.expert_tp = s.model.moe() ? p.expert_tp_of(st.tp) : 0;
  shape.sequence_parallel = p.sequence_parallel && st.tp > 1;
  shape.dtype = s.training.precision;
  shape.flash_attention = s.training.flash_attention;
  shape.causal = s.training.causal;
  shape.fused_kernels = s.training.fused_kernels;
  shape.autocast = s.training.autocast;
  shape.norm_kernel = s.training.norm_kernel;
  shape.loss_kernel = s.training.loss_kernel;
  shape.grouped_experts = s.training.grouped_experts();
  shape.fp8_current_scaling = s.training.fp8_scaling == workload::Fp8Scaling::Current;
  shape.grad_accumulation = s.training.grad_accumulation;
  shape.attention_kernel = s.training.resolved_attention_kernel();
  return shape;
}

std::vector<std::vector<StageCost>> stage_costs(const Scenario& s, const plan::Plan& p, bool with_calls) {
  // What every stage reads (detail/context.hpp), and each layer kind priced once per (pool, tp).
  const detail::PlanContext ctx = detail::plan_context(s, p);
  const auto& m = ctx.m;
  const auto& tr = ctx.tr;
  const auto& cl = ctx.cl;
  const hw::Dtype dt = ctx.dt;
  const double e = ctx.e;
  const auto& pc = ctx.pc;
  const int replicas = ctx.replicas;
  const auto& starts = ctx.starts;
  const double sbh = ctx.sbh;
  const int ep = ctx.ep;
  detail::LayerCosts layer_costs(ctx);

  std::vector<std::vector<StageCost>> out;
  for (const auto& grp : p.groups) {
    const int pp = static_cast<int>(grp.stages.size());
    std::vector<StageCost> costs(pp);
    for (int si = 0; si < pp; ++si) {
      const plan::Stage& st = grp.stages[si];
      const hw::PoolSpec& pool = cl.pools[st.pool];
      const hw::DeviceSpec& dev = pool.device;
      const bool first = si == 0, last = si == pp - 1;
      const workload::MicroBatchShape shape = micro_batch_shape(s, p, st);
      const bool sp = shape.sequence_parallel;
      // ZeRO 2 and 3 shard over the replicas of every group at once, except with several
      // replica groups: their micro-batch counts differ, so no per-micro-batch collective can
      // span them. Each group then shards within its own replicas and the groups all-reduce
      // their shards once per step (hybrid sharding, as PyTorch's HSDP;
      // docs/cost-models.md#hybrid-sharding).
      const bool hybrid = p.hybrid_sharding();
      const int shard = hybrid ? grp.replicas : replicas;

      StageCost& c = costs[si];
      c.shard_replicas = shard;
      // Megatron-LM's DDP and distributed optimizer (ZeRO ≤ 1) size their buckets by the DP
      // group, and use one bucket without overlap_grad_reduce and on pipeline stages after the
      // first ("not on the critical path"; distributed_data_parallel.py of core_r0.7–0.9); the
      // interleaved schedule's later chunks of the first stage are bucketed like its first here.
      // ZeRO 2 keeps buckets of 40 M; ZeRO 3 gathers and reduces a layer at a time (below).
      c.bucket = p.zero >= 2                          ? kBucketParams
                 : !p.overlap_grad_reduce || si > 0 ? std::numeric_limits<double>::infinity()
                                                    : bucket_params(shard);
      // Per-layer costs depend on the pool and tp only: computed once per pair (a deep
      // pipeline repeats them, and the planner calls this a great deal).
      // A MoE model's stage may hold dense layers too: n_moe of its layers are MoE layers.
      const int n_moe = m.moe() ? m.moe_layers(st.first_layer, st.layers) : st.layers;
      const bool mixed = m.moe() && n_moe < st.layers;
      const detail::LayerCost& lc = layer_costs.get(st.pool, st.tp, shape, m.moe() && n_moe > 0, shard > 1);
      c.layer_fwd = lc.fwd;
      c.layer_bwd = lc.bwd;
      c.layer_ops = lc.ops;
      c.layer_recompute = lc.recompute;
      c.layer_cp_fwd = lc.cp_fwd;
      c.layer_cp_bwd = lc.cp_bwd;
      c.layer_cp_recompute = lc.cp_recompute;
      c.layer_tp_fwd = lc.tp_fwd;
      // With sequence parallelism the TP collectives are all-gathers and reduce-scatters: rings.
      c.tp_algorithm = sp ? cost::Algorithm::Ring : lc.ar_algorithm;
      c.layer_tp_bwd = lc.tp_bwd;
      c.layer_tp_recompute = lc.tp_recompute;
      if (with_calls) {
        c.layer_tp_fwd_calls = lc.tp_fwd_calls;
        c.layer_tp_bwd_calls = lc.tp_bwd_calls;
        c.layer_tp_recompute_calls = lc.tp_recompute_calls;
      }
      if (with_calls && lc.a2a.v > 0) {
        c.layer_ep_fwd_calls = {lc.dispatch_call, lc.a2a_call};
        c.layer_ep_bwd_calls = {lc.dispatch_call, lc.a2a_call};
        if (p.recomputes(workload::RecomputeModule::Moe)) c.layer_ep_recompute_calls = {lc.dispatch_call, lc.a2a_call};
      }
      // Forward: dispatch and combine; backward: their gradients the same way back (the
      // combine's gradient travels as a dispatch does, fp8 under fp8_dispatch; the dispatch's as
      // a combine); recompute of the MoE block (full, or selective's "moe") re-runs the forward's pair.
      c.layer_ep_fwd = lc.dispatch + lc.a2a;
      c.layer_ep_bwd = lc.dispatch + lc.a2a;
      c.layer_ep_recompute = p.recomputes(workload::RecomputeModule::Moe) ? lc.dispatch + lc.a2a : Duration{0};
      if (p.overlap_ep_comm && p.schedule != cost::Schedule::GPipe && p.run_micro_batches(grp) >= 2 && lc.a2a.v > 0) {
        // overlap_ep_comm (Megatron-Core's combined 1F1B with EP all-to-all overlap, DeepSeek-V3's
        // DualPipe): in the steady state one micro-batch's forward of a layer runs merged with
        // another's backward of it, in four slots whose exchange hides behind the other pass's
        // compute (DeepSeek-V3 §3.2.1, Fig. 4): the forward's attention beside the backward's
        // combine gradient; the backward's MLP beside the forward's dispatch; the forward's MLP
        // beside the backward's dispatch gradient; the backward's attention beside the forward's
        // combine. What a slot's exchange exceeds its compute by is exposed, and the compute loses
        // overlap_slowdown of its speed while the exchange runs beside it. A recomputed MoE block's
        // exchanges go with the backward's first slot, its compute with the backward's blocks.
        // The warm-up forwards (and as many cool-down backwards) have no partner: their
        // exchanges are exposed (docs/cost-models.md#expert-parallelism).
        const double slow = dev.efficiency.overlap_slowdown;
        const Duration f_attn = lc.fwd_attn, f_mlp = lc.fwd - lc.fwd_attn;
        const Duration b_attn = lc.bwd_attn + lc.recompute_attn, b_mlp = lc.bwd - lc.bwd_attn + lc.recompute - lc.recompute_attn;
        const std::pair<Duration, Duration> slots[4] = {{f_attn, lc.dispatch + c.layer_ep_recompute},
                                                        {b_mlp, lc.dispatch},
                                                        {f_mlp, lc.a2a},
                                                        {b_attn, lc.a2a}};
        Duration a2a{0}, exposed{0};
        for (const auto& [compute, exchange] : slots) {
          a2a += exchange;
          exposed += max(exchange - compute, Duration{0}) + min(exchange, compute) * slow;
        }
        // (Per pipeline run: a run's last in-flight backwards have no forward after them.)
        const double unpaired = cost::in_flight_micro_batches(p.schedule, si, pp, p.run_micro_batches(grp), p.virtual_stages) /
                                p.run_micro_batches(grp);
        const double keep = unpaired + (1 - unpaired) * (exposed / a2a);  // each pass keeps its share
        c.layer_ep_fwd = c.layer_ep_fwd * keep;
        c.layer_ep_bwd = c.layer_ep_bwd * keep;
        c.layer_ep_recompute = c.layer_ep_recompute * keep;
        for (auto* calls : {&c.layer_ep_fwd_calls, &c.layer_ep_bwd_calls, &c.layer_ep_recompute_calls})
          for (auto& call : *calls) call.exposed = keep;
      }
      // The mean per layer over the stage's MoE and dense layers (the schedule and the estimate
      // multiply it by the stage's layers; a chunk of an interleaved stage gets the mean too).
      const double moe_share = st.layers > 0 ? static_cast<double>(n_moe) / st.layers : 0;
      if (mixed) {
        const detail::LayerCost& dc = layer_costs.get(st.pool, st.tp, shape, false, shard > 1);
        c.dense_layer_ops = dc.ops;
        c.moe_share = moe_share;
        auto mean = [&](Duration a, Duration d) { return a * moe_share + d * (1 - moe_share); };
        c.layer_fwd = mean(c.layer_fwd, dc.fwd);
        c.layer_bwd = mean(c.layer_bwd, dc.bwd);
        c.layer_recompute = mean(c.layer_recompute, dc.recompute);
        c.layer_tp_fwd = mean(c.layer_tp_fwd, dc.tp_fwd);
        c.layer_tp_bwd = mean(c.layer_tp_bwd, dc.tp_bwd);
        c.layer_tp_recompute = mean(c.layer_tp_recompute, dc.tp_recompute);
        c.layer_ep_fwd = c.layer_ep_fwd * moe_share;
        c.layer_ep_bwd = c.layer_ep_bwd * moe_share;
        c.layer_ep_recompute = c.layer_ep_recompute * moe_share;
        // Each kind's calls, counted by its share of the stage's layers.
        auto mix = [&](std::vector<cost::CommCall>& calls, const std::vector<cost::CommCall>& dense) {
          for (auto& call : calls) call.count *= moe_share;
          for (cost::CommCall call : dense) {
            call.count *= 1 - moe_share;
            calls.push_back(call);
          }
        };
        if (with_calls) {
          mix(c.layer_tp_fwd_calls, dc.tp_fwd_calls);
          mix(c.layer_tp_bwd_calls, dc.tp_bwd_calls);
          mix(c.layer_tp_recompute_calls, dc.tp_recompute_calls);
        }
        for (auto* calls : {&c.layer_ep_fwd_calls, &c.layer_ep_bwd_calls, &c.layer_ep_recompute_calls})
          for (auto& call : *calls) call.count *= moe_share;
      }
      if (first) {
        c.emb_ops = std::make_shared<const std::vector<workload::Op>>(workload::embedding_ops(m, shape));
        const auto& emb = *c.emb_ops;
        c.emb_fwd = cost::pass_time(dev, dt, emb, Pass::Forward);
        c.emb_bwd = cost::pass_time(dev, dt, emb, Pass::Backward);
        if (st.tp > 1) {
          c.emb_tp = sp ? lc.rs + lc.ag : lc.ar;  // vocabulary-parallel output reduced
          if (with_calls)
            c.emb_tp_calls = sp ? std::vector<cost::CommCall>{lc.rs_call, lc.ag_call} : std::vector<cost::CommCall>{lc.ar_call};
        }
      }
      if (last) {
        c.head_ops = std::make_shared<const std::vector<workload::Op>>(workload::head_ops(m, shape));
        const auto& head = *c.head_ops;
        c.head_fwd = cost::pass_time(dev, dt, head, Pass::Forward);
        c.head_bwd = cost::pass_time(dev, dt, head, Pass::Backward);
        if (st.tp > 1) {
          c.head_tp = sp ? lc.ag + lc.rs : lc.ar;  // the head's input gathered
          if (with_calls)
            c.head_tp_calls = sp ? std::vector<cost::CommCall>{lc.ag_call, lc.rs_call} : std::vector<cost::CommCall>{lc.ar_call};
        }
      }

      // Parameters on one device of this stage. With tied embeddings and pp > 1 the last stage
      // keeps its own copy of the token embedding (not the position table).
      c.params_layer = mixed ? ctx.moe_layer_params(st.tp) * moe_share + pc.per_dense_layer / st.tp * (1 - moe_share)
                             : ctx.moe_layer_params(st.tp);
      c.expert_params = pc.per_layer_experts / ep / p.expert_tp_of(st.tp) * n_moe;
      c.expert_fold = st.tp / p.expert_tp_of(st.tp);
      if (first) c.params_emb = pc.embedding / st.tp;
      const double token_embedding = static_cast<double>(m.vocab) * m.hidden;
      if (last)
        c.params_head = (m.tied_embeddings ? (pp > 1 ? token_embedding : 0) : pc.output) / st.tp + pc.final_norm;
      c.params = c.params_layer * st.layers + c.params_emb + c.params_head;
      // ZeRO 3 (FSDP, FSDP2, Megatron-FSDP) gathers and reduce-scatters a wrapped block's
      // parameters at a time: a layer's, not Megatron-LM's 40 M-parameter buckets (64-H100 nsys
      // profiles of Llama 3.1 70B count one to two all-gathers per layer and pass under FSDP2
      // and Megatron-FSDP, docs/research-nsys-reports.md); price_dp_sync cuts each sync into
      // one collective per layer.
      if (p.zero >= 3) c.bucket = c.params_layer;

      // Pipeline point-to-point to the next stage: the activation, 1/tp of it per rank when
      // sequence parallelism has split it already or the framework scatters it
      // (pipeline_scatter_gather). Scattered without sequence parallelism, the receiving ranks
      // all-gather it with their TP group before they use it (the next stage in the forward,
      // this one in the backward): `regather`, with the stage's TP collectives. Neighbouring
      // stages share a node only when both stages' tp × replicas blocks lie in one node of one
      // pool (Megatron rank order tp, dp, pp; below); otherwise the message crosses the NICs.
      if (pp > 1 && !p.sequence_parallel && tr.pipeline_scatter_gather) {
        const int v = p.schedule == cost::Schedule::Interleaved ? p.virtual_stages : 1;
        c.regather = lc.ag;  // 0 at tp 1: nothing to gather
        if (st.tp > 1) c.regather_call = lc.ag_call;
        c.regathers_fwd = v - (first ? 1 : 0);
        c.regathers_bwd = v - (last ? 1 : 0);
      }
      if (pp > 1) c.send_call = {Collective::SendRecv, sbh * e};
      // One message between this stage and stage `o` of its group. It stays in a node when the
      // two stages' blocks lie in the same node (Megatron's rank order tp, dp, pp puts a stage's
      // tp·replicas devices together and the next stage's right after: on nodes of 8, blocks of
      // 4 pair stages 0–1, not 1–2; the first and the last stage only when every block is there).
      auto send_to = [&](int o) {
        const plan::Stage& os = grp.stages[static_cast<std::size_t>(o)];
        const double scatter = p.sequence_parallel || tr.pipeline_scatter_gather ? std::max(st.tp, os.tp) : 1;
        const int gi = static_cast<int>(&grp - p.groups.data());
        const int lo = std::min(si, o), hi = std::max(si, o);
        // (Priced from the pair alone, whichever end asks: the lower stage's node and fabric.)
        const hw::PoolSpec& lo_pool = cl.pools[grp.stages[static_cast<std::size_t>(lo)].pool];
        const int dpn = std::max(1, lo_pool.devices_per_node);
        // (The blocks of a group are placed in stage order: hi's follows lo's.)
        const int lo_device = starts[gi][lo];
        const int hi_device = starts[gi][hi] + grp.stages[static_cast<std::size_t>(hi)].tp * grp.replicas - 1;
        CommGroup g;
        g.ranks = 2;
        g.ranks_per_node = st.pool == os.pool && lo_device / dpn == hi_device / dpn ? 2 : 1;
        g.intra = fabric_cost(lo_pool);
        g.inter = slower(nic_cost(pool, cl.network), nic_cost(cl.pools[os.pool], cl.network));
        return cost::collective_time(Collective::SendRecv, Bytes{sbh * e / scatter}, g).time.total();
      };
      if (!last) c.send_next = send_to(si + 1);
      // Interleaved: the last stage's chunks hand their activation on to the first stage's next
      // chunk, and the first stage sends the gradients back: that pair's own message.
      if (last && pp > 1 && p.schedule == cost::Schedule::Interleaved && p.virtual_stages > 1) c.send_wrap = send_to(0);

      detail::price_dp_sync(ctx, st, shard, hybrid, with_calls, c);
      detail::price_memory(ctx, st, sp, first, last, n_moe, shard, c);
    }
    out.push_back(std::move(costs));
  }
  return out;
}

int group_ranks_per_node(int devices_per_node, int stride, int ranks) {
  int k = std::max(1, std::min(ranks, devices_per_node / std::max(1, stride)));
  while (ranks % k != 0) --k;
  return k;
}

Duration pipeline_sends(const std::vector<StageCost>& costs, std::size_t i, int v) {
  Duration t = costs[i].send_next * v;
  if (i > 0) t += costs[i - 1].send_next * v;
  if (v > 1 && costs.size() > 1 && (i == 0 || i + 1 == costs.size())) t += costs.back().send_wrap * (v - 1);
  return t;
}

double sharded_params(const StageCost& c, int shard, int ep) {
  return (c.params - c.expert_params) / shard + c.expert_params / std::max(1, shard * c.expert_fold / std::max(1, ep));
}

}  // namespace hetsim::analytic