#include "sim/analytic/detail/layer_cost.hpp"

#include <algorithm>

#include "models/cost/compute.hpp"
#include "sim/analytic/detail/links.hpp"
#include "sim/analytic/stage_cost.hpp"

namespace hetsim::analytic::detail {
namespace {

using cost::Collective;
using cost::CommGroup;
using cost::Pass;

// Whether a sequence-parallel stage's TP inputs are gathered by the framework before a local GEMM
// module (which keeps them), not by the layers themselves: TrainingSpec::sp_gather, by default
// fp8 training on Intel Gaudi (HabanaAI/Megatron-DeepSpeed runs TE's Linear on the gathered input).
bool sp_gathered_by_framework(const workload::TrainingSpec& tr, const hw::DeviceSpec& dev) {
  if (tr.sp_gather) return *tr.sp_gather == workload::TrainingSpec::SpGather::Framework;
  return tr.precision == hw::Dtype::Fp8 && dev.vendor == "intel";
}

// Time the TP collectives around one GEMM add to its pass. Blocking: all of it. Overlapped
// (chunked GEMM + collective, as Megatron's --tp-comm-overlap runs them): what the GEMM does not
// cover, plus the GEMM's slow-down while both run (the SMs and memory traffic the collective's
// kernels take: overlap_slowdown of the overlapped time). docs/cost-models.md#tensor-parallel.
Duration tp_exposed(Duration comm, Duration gemm, bool overlap, double slowdown) {
  if (!overlap) return comm;
  return Duration{std::max(0.0, (comm - gemm).v)} + min(comm, gemm) * slowdown;
}

// The time of the op called `name` in `times` (per op of `ops`, one pass), 0 when absent.
Duration op_named(const std::vector<workload::Op>& ops, const std::vector<Duration>& times,
                  const char* name) {
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].name == name) return times[i];
  return Duration{0};
}

}  // namespace

// Context parallelism's exchange of one layer, exposed, per pass (docs/cost-models.md#context-parallelism).
// The cp ranks of a sequence are consecutive replicas, tp apart in the rank order: a node of
// D devices holds D/tp of them. P2P: cp − 1 ring steps, each sending the block of keys and
// values it holds on (backward: those and their gradients) beside the attention kernel of the
// block before; what the kernel does not hide is exposed, plus its slow-down. AllGather: the
// keys and values gathered before attention, and again before its backward, whose key and
// value gradients are reduce-scattered after it. AllToAll: queries, keys and values from
// sequence to head shards before attention, its output back after; the backward the same.
// The gathers and all-to-alls block.
void LayerCosts::context_parallel(Duration& fwd, Duration& bwd, Duration& rec, const std::vector<workload::Op>& layer,
                                  const std::vector<Duration>& tf, const std::vector<Duration>& tb,
                                  const hw::PoolSpec& pool, int tp, const workload::MicroBatchShape& shape) const {
  const auto& m = ctx_.m;
  const auto& p = ctx_.p;
  const auto& cl = ctx_.cl;
  const double e = ctx_.e;
  const hw::DeviceSpec& dev = pool.device;
  const double kv_rank = m.kv_heads >= tp ? m.kv_width() / tp : m.head_dim();
  const double tokens = static_cast<double>(shape.micro_batch) * shape.seq_len;
  const Bytes kv{tokens * 2 * kv_rank * e};  // the rank's keys and values of one layer
  CommGroup g;
  g.ranks = p.cp;
  g.ranks_per_node = group_ranks_per_node(pool.devices_per_node, tp, p.cp);
  g.intra = fabric_cost(pool);
  g.inter = nic_cost(pool, cl.network);
  const Duration attn_f = op_named(layer, tf, "attention"), attn_b = op_named(layer, tb, "attention");
  const double slow = dev.efficiency.overlap_slowdown;
  double share = 0;  // how much of the attention a recompute re-runs
  for (const auto& op : layer)
    if (op.kind == workload::OpKind::Attention) share = cost::recompute_share(op, p.recompute, p.recompute_modules);
  switch (p.cp_comm) {
    case plan::Plan::CpComm::Ring: {
      // One step: every rank sends to the next (the slowest hop: the NICs once the ring leaves a node).
      CommGroup step = g;
      step.ranks = 2;
      step.ranks_per_node = g.ranks_per_node == p.cp ? 2 : 1;
      // Forward, cp − 1 sends of K, V, each beside one block's kernel. Backward, one send
      // beside each of the cp kernels: K, V first, then K, V with the dK, dV gathered so far,
      // and dK, dV alone last (TE's backward; at cp = 2: K, V, then dK, dV).
      const double n = p.cp - 1;
      const Duration one = cost::collective_time(Collective::SendRecv, kv, step).time.total();
      const Duration two = cost::collective_time(Collective::SendRecv, kv * 2.0, step).time.total();
      fwd = tp_exposed(one, attn_f / p.cp, true, slow) * n;
      bwd = tp_exposed(one, attn_b / p.cp, true, slow) * 2.0 + tp_exposed(two, attn_b / p.cp, true, slow) * (n - 1);
      break;
    }
    case plan::Plan::CpComm::AllGather: {
      const Bytes all = kv * static_cast<double>(p.cp);
      const Duration ag = cost::collective_time(Collective::AllGather, all, g).time.total();
      fwd = ag;
      bwd = ag + cost::collective_time(Collective::ReduceScatter, all, g).time.total();
      break;
    }
    case plan::Plan::CpComm::AllToAll: {
      // Forward Q, K, V out and O back; backward O and dO out before the kernel, dQ, dK, dV
      // back after it (DeepSpeed-Ulysses as TE runs it; docs/research-context-parallel.md §3).
      const double q = m.q_width() / tp;
      const Bytes in{tokens * (q + 2 * kv_rank) * e}, out{tokens * q * e};
      const Duration a_in = cost::collective_time(Collective::AllToAll, in, g).time.total();
      fwd = a_in + cost::collective_time(Collective::AllToAll, out, g).time.total();
      bwd = a_in + cost::collective_time(Collective::AllToAll, out * 2.0, g).time.total();
      break;
    }
  }
  rec = fwd * share;
}

const LayerCost& LayerCosts::get(int pool_index, int tp, const workload::MicroBatchShape& shape, bool moe_kind,
                                 bool sharded) {
  const auto& m = ctx_.m;
  const auto& p = ctx_.p;
  const auto& tr = ctx_.tr;
  const auto& cl = ctx_.cl;
  const hw::Dtype dt = ctx_.dt;
  const auto& sb = ctx_.sb;
  const int ep = ctx_.ep;
  const auto& pc = ctx_.pc;
  const auto& dense_m = ctx_.dense_m;
  auto [it, fresh] = memo_.try_emplace({pool_index, tp, moe_kind, sharded});
  LayerCost& lc = it->second;
  if (!fresh) return lc;
  const workload::ModelSpec& lm = moe_kind ? m : dense_m;
  const double layer_params = moe_kind || !m.moe() ? ctx_.moe_layer_params(tp) : pc.per_dense_layer / tp;
  const hw::PoolSpec& pool = cl.pools[pool_index];
  const hw::DeviceSpec& dev = pool.device;
  lc.ops = std::make_shared<const std::vector<workload::Op>>(workload::layer_ops(lm, shape));
  const auto& layer = *lc.ops;
  // Each op priced once per pass (the planner calls this a great deal); a pass takes at least
  // its kernels × the host's time per kernel (cost::pass_time).
  std::vector<Duration> tf(layer.size()), tb(layer.size());
  Duration sf{0}, sb_{0}, af{0}, ab{0};
  // The attention block: the ops before mlp_norm.
  const std::size_t mlp_start = static_cast<std::size_t>(
      std::find_if(layer.begin(), layer.end(), [](const workload::Op& o) { return o.name == "mlp_norm"; }) - layer.begin());
  for (std::size_t i = 0; i < layer.size(); ++i) {
    tf[i] = cost::op_time(dev, dt, layer[i], Pass::Forward);
    tb[i] = cost::op_time(dev, dt, layer[i], Pass::Backward);
    sf += tf[i];
    sb_ += tb[i];
    if (i < mlp_start) {
      af += tf[i];
      ab += tb[i];
    }
  }
  lc.fwd = max(sf, dev.efficiency.host_overhead * cost::kernels(layer, Pass::Forward));
  lc.bwd = max(sb_, dev.efficiency.host_overhead * cost::kernels(layer, Pass::Backward));
  // A host-bound pass stretches both blocks alike.
  lc.fwd_attn = sf.v > 0 ? lc.fwd * (af / sf) : Duration{0};
  lc.bwd_attn = sb_.v > 0 ? lc.bwd * (ab / sb_) : Duration{0};
  Duration copy_out{0};
  if (sharded && fsdp2_copies(p, tr, dev)) {
    // FSDP2 gathers a layer's weights into one flat buffer and copies them out into the
    // parameters' own tensors before its forward and again before its backward: the layer's
    // weights read and written, on the compute stream (docs/cost-models.md#data-parallel-sync).
    // FSDP1's flat parameters are views into the gathered buffer (zero3_copy_out = false);
    // TPUs run JAX/XLA, whose sharded all-gather writes the weights where they are read.
    // A full recompute runs on the weights the backward's gather brought in: no copy of its own
    // (two copy-outs per layer and micro-batch in the FSDP2 profiles of docs/research-nsys-reports.md).
    copy_out = Bytes{2 * layer_params * sb.weights} / (dev.memory_bandwidth * dev.efficiency.memory) +
               dev.efficiency.launch_overhead;
  }
  lc.fwd += copy_out;
  lc.bwd += copy_out;
  if (ep > 1 && moe_kind) expert_exchange(lc, tp, pool);
  if (p.recompute == cost::Recompute::Full) {
    lc.recompute = lc.fwd - copy_out;
    lc.recompute_attn = lc.fwd_attn;
  } else {
    // The re-run ops, each kernel issued again among the backward's: where the host issues the
    // two together more slowly than the device runs them, it sets their pace (kernels ·
    // host_overhead, as for a pass; a GEMM re-run in part is still one kernel).
    double kernels = 0;
    for (std::size_t i = 0; i < layer.size(); ++i) {
      const double share = cost::recompute_share(layer[i], p.recompute, p.recompute_modules);
      const Duration r = tf[i] * share;
      lc.recompute += r;
      if (i < mlp_start) lc.recompute_attn += r;
      if (share > 0) kernels += layer[i].fwd_kernels;
    }
    const Duration host = dev.efficiency.host_overhead * (kernels + cost::kernels(layer, Pass::Backward)) - lc.bwd;
    if (host > lc.recompute && lc.recompute.v > 0) {
      lc.recompute_attn = lc.recompute_attn * (host / lc.recompute);
      lc.recompute = host;
    }
  }
  if (p.cp > 1) context_parallel(lc.cp_fwd, lc.cp_bwd, lc.cp_recompute, layer, tf, tb, pool, tp, shape);
  if (tp > 1) tensor_parallel(lc, lm, tp, pool, shape, tf, tb);
  return lc;
}

// Dispatch (and, the same size, combine) of a MoE layer: each rank sends its share of the
// micro-batch's tokens (1/tp of them: the TP ranks split the dispatch) top_k times, padded
// to capacity, h wide, to the experts' ranks: all-to-all over the ep ranks, which Megatron
// orders tp apart (tp · ep ≤ a node keeps it on the fabric; docs/cost-models.md#experts).
// Under routing imbalance the most loaded rank receives top_k·moe_rank_load rows per
// token (not top_k·capacity_factor), and its traffic bounds the exchange: priced as every
// rank moving as much (docs/cost-models.md#routing-imbalance).
void LayerCosts::expert_exchange(LayerCost& lc, int tp, const hw::PoolSpec& pool) const {
  const auto& m = ctx_.m;
  const auto& p = ctx_.p;
  const auto& cl = ctx_.cl;
  const double e = ctx_.e;
  const double sbh = ctx_.sbh;
  const int ep = ctx_.ep;
  CommGroup g;
  g.ranks = ep;
  g.ranks_per_node = group_ranks_per_node(pool.devices_per_node, p.expert_tp_of(tp), ep);
  g.intra = fabric_cost(pool);
  g.inter = nic_cost(pool, cl.network);
  const double load = workload::moe_rank_load(m, ep);
  // One exchange of `width` bytes per routed value.
  auto exchange = [&](double width) {
    if (p.ep_dispatch == plan::Plan::EpDispatch::Hierarchical) {
      // By node and by rank (DeepEP): a token crosses the network once per other node its
      // experts sit on (moe_nodes_per_token over the nodes, group-limited routing included),
      // and goes over the fabric once per other rank that holds any of its experts, not once
      // per expert (DeepEP's is_token_in_rank; the receiving rank expands it to its experts):
      // moe_nodes_per_token over the ep ranks, all but the receiving one
      // (docs/cost-models.md#hierarchical-dispatch).
      const double k = g.ranks_per_node, nodes = g.nodes();
      const double remote = nodes > 1 ? workload::moe_nodes_per_token(m, g.nodes()) * (nodes - 1) / nodes : 0.0;
      const double ranks = workload::moe_nodes_per_token(m, ep);
      return cost::hierarchical_dispatch_time(Bytes{sbh / tp * load * width}, remote, ranks * (k - 1) / k, g,
                                              pool.device.efficiency.dispatch_bandwidth)
          .total();
    }
    return cost::collective_time(Collective::AllToAll, Bytes{sbh / tp * m.top_k * load * width}, g).time.total();
  };
  // The send buffer of one exchange: the rank's routed rows, `width` bytes per value (the
  // hierarchical dispatch moves these bytes too, by node).
  auto exchange_call = [&](double width) {
    return cost::CommCall{Collective::AllToAll, sbh / tp * m.top_k * load * width};
  };
  lc.a2a = exchange(e);
  lc.a2a_call = exchange_call(e);
  // fp8_dispatch: one byte per value and a 4-byte scale per 128 (docs/cost-models.md#fp8-dispatch).
  lc.dispatch = p.fp8_dispatch ? exchange(1 + 4.0 / 128) : lc.a2a;
  lc.dispatch_call = p.fp8_dispatch ? exchange_call(1 + 4.0 / 128) : lc.a2a_call;
}

// Tensor-parallel collectives of each block (attention: column-parallel qkv, row-parallel
// attn_out; MLP: mlp_up, mlp_down), as Megatron-LM issues them; the buffer is the
// micro-batch's full activation b·s·h (docs/cost-models.md#tensor-parallel-communication).
//  forward,  sequence parallel: all-gather before the column GEMM, reduce-scatter after the
//            row GEMM (Korthikanti et al. §4.2.2); without: an all-reduce after the row GEMM.
//  backward, sequence parallel: all-gather of the row GEMM's output gradient; for the column
//            GEMM the input is gathered again for its weight gradient (beside the
//            data-gradient GEMM) and the input gradient reduce-scattered (beside the
//            weight-gradient GEMM); without: the column GEMM's input gradient all-reduced
//            (beside the weight-gradient GEMM).
// Overlapped collectives (overlap_tp_comm: all; overlap_tp_backward: the backward's column
// ones, Megatron-LM's default since 2022) cost what their GEMM does not hide plus the
// GEMM's slow-down; the others block.
void LayerCosts::tensor_parallel(LayerCost& lc, const workload::ModelSpec& lm, int tp, const hw::PoolSpec& pool,
                                 const workload::MicroBatchShape& shape, const std::vector<Duration>& tf,
                                 const std::vector<Duration>& tb) const {
  const auto& m = ctx_.m;
  const auto& p = ctx_.p;
  const auto& tr = ctx_.tr;
  const hw::Dtype dt = ctx_.dt;
  const double e = ctx_.e;
  const double sbh = ctx_.sbh;
  const hw::DeviceSpec& dev = pool.device;
  const auto& layer = *lc.ops;
  const bool sp = shape.sequence_parallel;
  CommGroup g;
  g.ranks = tp;
  g.ranks_per_node = tp;
  g.intra = fabric_cost(pool);
  const Bytes act{sbh * e};
  lc.ag_call = {Collective::AllGather, act.v};
  lc.rs_call = {Collective::ReduceScatter, act.v};
  lc.ar_call = {Collective::AllReduce, act.v};
  lc.ag = cost::collective_time(Collective::AllGather, act, g).time.total();
  lc.rs = cost::collective_time(Collective::ReduceScatter, act, g).time.total();
  const auto ar = cost::collective_time(Collective::AllReduce, act, g);
  lc.ar = ar.time.total();
  lc.ar_algorithm = ar.algorithm;
  const bool ov = p.overlap_tp_comm;
  const bool ov_bwd = p.overlap_tp_comm || p.overlap_tp_backward;
  const double slow = dev.efficiency.overlap_slowdown;
  const char* blocks[2][2] = {{"qkv", "attn_out"},
                              {lm.moe() ? "expert_up" : "mlp_up", lm.moe() ? "expert_down" : "mlp_down"}};
  // The MoE block's collectives run over the expert tensor-parallel group, on its share of
  // the tokens (expert_tp < tp: the folded TP ranks dispatch their own sequence shards; 1:
  // none), unless shared experts, split over all tp ranks like a dense MLP, need the whole
  // group's gather (docs/cost-models.md#expert-tensor-parallelism).
  const int et = lm.moe() && m.shared_experts == 0 ? p.expert_tp_of(tp) : tp;
  // fp8 training with sequence parallelism: Transformer Engine's modules (LayerNormLinear,
  // LayerNormMLP, Linear) all-gather their inputs and output gradients after the fp8 cast,
  // one byte per element; the reduce-scatters stay in the activation's dtype (TE 1.x
  // module/*.py; docs/cost-models.md#tensor-parallel-communication). The MoE block's gathers
  // are the token dispatcher's, in the activation's dtype.
  // Intel Gaudi's Megatron-DeepSpeed gathers in bf16 before TE's local GEMM and keeps the
  // gathered input for the weight gradient (megatron/core/tensor_parallel/layers.py,
  // ColumnParallelLinear.forward on HPU): no second gather in the backward
  // (TrainingSpec::sp_gather, sp_gathered_by_framework).
  const bool by_framework = sp_gathered_by_framework(tr, dev);
  const bool fp8_gather = sp && dt == hw::Dtype::Fp8 && !by_framework;
  const Duration dag =
      fp8_gather ? cost::collective_time(Collective::AllGather, Bytes{sbh}, g).time.total() : lc.ag;
  Duration mag = lm.moe() ? lc.ag : dag, mrs = lc.rs, mar = lc.ar;
  Bytes part = act;
  if (et != tp) {
    CommGroup eg = g;
    eg.ranks = eg.ranks_per_node = et;
    part = Bytes{sbh * e * et / tp};
    mag = cost::collective_time(Collective::AllGather, part, eg).time.total();
    mrs = cost::collective_time(Collective::ReduceScatter, part, eg).time.total();
    mar = cost::collective_time(Collective::AllReduce, part, eg).time.total();
  }
  // Multi-head latent attention: the attention block's column-parallel GEMMs are the up
  // projections, so its column-side collectives carry the compressed latents (q_lora_rank +
  // kv_lora_rank wide; the hidden width for queries without a bottleneck), and under sequence
  // parallelism the shared RoPE key, not the hidden state (Megatron-Core
  // multi_latent_attention.py; docs/cost-models.md#multi-head-latent-attention).
  const double col_elems =
      m.mla() ? sbh / m.hidden * ((m.q_lora_rank > 0 ? m.q_lora_rank : m.hidden) + m.kv_lora_rank + (sp ? m.qk_rope_dim : 0))
              : sbh;
  // The backward's re-gather is of the up projections' inputs alone (no RoPE key).
  const double regather_elems = m.mla() && sp ? col_elems - sbh / m.hidden * m.qk_rope_dim : col_elems;
  Duration cag = dag, crs = lc.rs, car = lc.ar, crg = dag;
  if (m.mla()) {
    crg = cost::collective_time(Collective::AllGather, Bytes{regather_elems * (fp8_gather ? 1.0 : e)}, g).time.total();
    cag = cost::collective_time(Collective::AllGather, Bytes{col_elems * (fp8_gather ? 1.0 : e)}, g).time.total();
    crs = cost::collective_time(Collective::ReduceScatter, Bytes{col_elems * e}, g).time.total();
    car = cost::collective_time(Collective::AllReduce, Bytes{col_elems * e}, g).time.total();
  }
  for (const auto& b : blocks) {
    const bool moe_block = &b == &blocks[1];
    // The row-side collectives (of the output's width) and the column-side ones.
    const Duration bag = moe_block ? mag : dag, brs = moe_block ? mrs : lc.rs, bar = moe_block ? mar : lc.ar;
    const Duration cbag = moe_block ? mag : cag, cbrs = moe_block ? mrs : crs, cbar = moe_block ? mar : car;
    const Duration crgb = moe_block ? mag : crg;
    // The experts' gathers (the dispatcher's) stay 16-bit; a dense block's gather carries
    // fp8 values when TE gathers in fp8 training (fp8_gather).
    const bool experts = moe_block && lm.moe();
    // One collective of the block, recorded in `calls`: its exposed time; `col`: its elements on
    // the column GEMM's input side (0: the hidden state's).
    auto call = [&, moe_block, experts](std::vector<cost::CommCall>& calls, Collective kind, Duration comm,
                                        Duration gemm, bool overlap, double col = 0) {
      const Duration x = tp_exposed(comm, gemm, overlap, slow);
      const double elems = col > 0 && !moe_block ? col : sbh;
      const double buffer =
          kind == Collective::AllGather && fp8_gather && !experts ? elems : (moe_block ? part.v : elems * e);
      cost::CommCall c{kind, buffer};
      c.ranks = moe_block && et != tp ? et : 0;
      c.exposed = comm.v > 0 ? x / comm : 1.0;
      calls.push_back(c);
      return x;
    };
    const Duration col_f = op_named(layer, tf, b[0]), row_f = op_named(layer, tf, b[1]);
    // A GEMM's backward is its data- and weight-gradient kernels, about half each.
    const Duration col_b = op_named(layer, tb, b[0]) / 2, row_b = op_named(layer, tb, b[1]) / 2;
    // Per-op selective checkpointing re-runs the block's collectives that the policy does
    // not keep: the all-gathers (reduce-scatter outputs are kept), or the all-reduce.
    if (p.recompute == cost::Recompute::SelectiveOp)
      lc.tp_recompute += sp ? call(lc.tp_recompute_calls, Collective::AllGather, cbag, col_f, ov, col_elems)
                            : call(lc.tp_recompute_calls, Collective::AllReduce, bar, row_f, ov);
    // Selective recompute of a whole block re-runs its forward collectives: a dense layer's MLP
    // ("mlp"), a MoE layer's block ("moe"), or its shared experts ("shared_experts": the
    // block's TP collectives are theirs, a dense MLP's over all tp ranks); MLA's up projections
    // ("mla_up_proj") their input's gather under sequence parallelism
    // (docs/research-recompute-modules.md).
    if (p.recompute == cost::Recompute::Selective) {
      const bool shared = lm.moe() && m.shared_experts > 0 && p.recomputes(workload::RecomputeModule::SharedExperts);
      const bool whole =
          moe_block && (shared || p.recomputes(lm.moe() ? workload::RecomputeModule::Moe : workload::RecomputeModule::Mlp));
      if (whole && sp)
        lc.tp_recompute += call(lc.tp_recompute_calls, Collective::AllGather, cbag, col_f, ov, col_elems) +
                           call(lc.tp_recompute_calls, Collective::ReduceScatter, brs, row_f, ov);
      else if (whole)
        lc.tp_recompute += call(lc.tp_recompute_calls, Collective::AllReduce, bar, row_f, ov);
      else if (!moe_block && sp && lm.mla() && p.recomputes(workload::RecomputeModule::MlaUpProj))
        lc.tp_recompute += call(lc.tp_recompute_calls, Collective::AllGather, cbag, col_f, ov, col_elems);
    }
    if (sp) {
      const Duration f0 = call(lc.tp_fwd_calls, Collective::AllGather, cbag, col_f, ov, col_elems);
      const Duration f1 = call(lc.tp_fwd_calls, Collective::ReduceScatter, brs, row_f, ov);
      lc.tp_fwd += f0 + f1;
      // The column GEMM's input gathered again for its weight gradient, unless the framework
      // gathered it and the GEMM kept it (a MoE block's experts gather in the dispatcher).
      const bool regather = !by_framework || experts;
      const Duration b0 = call(lc.tp_bwd_calls, Collective::AllGather, bag, row_b, ov);
      const Duration b1 =
          regather ? call(lc.tp_bwd_calls, Collective::AllGather, crgb, col_b, ov_bwd, regather_elems) : Duration{0};
      const Duration b2 = call(lc.tp_bwd_calls, Collective::ReduceScatter, cbrs, col_b, ov_bwd, col_elems);
      lc.tp_bwd += b0 + b1 + b2;
    } else {
      lc.tp_fwd += call(lc.tp_fwd_calls, Collective::AllReduce, bar, row_f, ov);
      lc.tp_bwd += call(lc.tp_bwd_calls, Collective::AllReduce, cbar, col_b, ov_bwd, col_elems);
    }
  }
  if (p.recompute == cost::Recompute::Full) {
    lc.tp_recompute = lc.tp_fwd;
    lc.tp_recompute_calls = lc.tp_fwd_calls;
  }
}

}  // namespace hetsim::analytic::detail
