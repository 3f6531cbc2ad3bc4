#include "sim/analytic/stage_cost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "models/cost/collectives.hpp"
#include "models/cost/compute.hpp"
#include "models/workload/layer_ops.hpp"

namespace hetsim::analytic {
namespace {

using cost::Collective;
using cost::CommGroup;
using cost::LinkCost;
using cost::Pass;

LinkCost fabric_cost(const hw::PoolSpec& p) { return cost::fabric_link(p.fabric); }

// Whether a sequence-parallel stage's TP inputs are gathered by the framework before a local GEMM
// module (which keeps them), not by the layers themselves: TrainingSpec::sp_gather, by default
// fp8 training on Intel Gaudi (HabanaAI/Megatron-DeepSpeed runs TE's Linear on the gathered input).
bool sp_gathered_by_framework(const workload::TrainingSpec& tr, const hw::DeviceSpec& dev) {
  if (tr.sp_gather) return *tr.sp_gather == workload::TrainingSpec::SpGather::Framework;
  return tr.precision == hw::Dtype::Fp8 && dev.vendor == "intel";
}

LinkCost nic_cost(const hw::PoolSpec& p, const hw::NetworkSpec& net) {
  const double eff = p.nic.efficiency / std::max(1.0, net.oversubscription);
  return {p.nic_bandwidth_per_device() * eff, p.nic.latency, p.nic.call_latency, BytesPerSec{0},
          p.nic.all_to_all_efficiency > 0 ? p.nic.all_to_all_efficiency / p.nic.efficiency : 1.0, p.nic.peer_latency};
}

LinkCost slower(LinkCost a, LinkCost b) {
  // A full mesh's per-peer rate bounds a mixed group's (switched fabrics have none: 0).
  BytesPerSec peer = a.per_peer.v > 0 ? a.per_peer : b.per_peer;
  if (b.per_peer.v > 0 && b.per_peer < peer) peer = b.per_peer;
  const BytesPerSec bw = a.bandwidth < b.bandwidth ? a.bandwidth : b.bandwidth;
  const double a2a = std::min(a.bandwidth.v * a.all_to_all, b.bandwidth.v * b.all_to_all) / std::max(1e-300, bw.v);
  return {bw, max(a.latency, b.latency), max(a.call, b.call), peer, a2a, max(a.peer_latency, b.peer_latency)};
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

namespace {

// Where each stage's block of devices (tp × replicas) starts in its pool, placed as the SimGrid
// engine places them (hw::BlockPlacer: each pool's blocks in group, then stage order).
// [group][stage] → device index within the pool.
std::vector<std::vector<int>> block_starts(const hw::ClusterSpec& cl, const plan::Plan& p) {
  hw::BlockPlacer placer(cl);
  std::vector<std::vector<int>> out;
  for (const auto& grp : p.groups) {
    out.emplace_back();
    for (const auto& st : grp.stages) out.back().push_back(placer.place(st.pool, st.tp, st.tp * grp.replicas));
  }
  return out;
}

// Members per node of the data-parallel ring of stage (gi, si) when several replica groups hold
// its layers, as the SimGrid engine forms it: the members (one tp rank of every replica of every
// stage holding any of these layers, group by group) in ring order, grouped by node where
// consecutive; k channels when every node-run has k members, else 1 (flows.cpp's rule); 1 too
// when the members are not the plan's `ranks` replicas once each.
int dp_members_per_node(const hw::ClusterSpec& cl, const plan::Plan& p, const std::vector<std::vector<int>>& starts,
                        const plan::Stage& st, int ranks) {
  // The members' (pool, node) in ring order, as runs of members on one node (counted as they
  // come: the planner calls this for every stage of every plan it prices).
  std::pair<int, int> last{-1, -1};
  long long members = 0, runs = 0, run = 0, shortest = 0;
  for (std::size_t gi = 0; gi < p.groups.size(); ++gi)
    for (std::size_t si = 0; si < p.groups[gi].stages.size(); ++si) {
      const plan::Stage& os = p.groups[gi].stages[si];
      if (!(os.first_layer < st.first_layer + st.layers && st.first_layer < os.first_layer + os.layers)) continue;
      const int dpn = std::max(1, cl.pools[static_cast<std::size_t>(os.pool)].devices_per_node);
      for (int r = 0; r < p.groups[gi].replicas; ++r) {
        const std::pair<int, int> at{os.pool, (starts[gi][si] + r * os.tp) / dpn};
        if (members == 0 || at != last) {
          if (runs > 0) shortest = runs == 1 ? run : std::min(shortest, run);
          ++runs;
          run = 0;
        }
        ++run;
        ++members;
        last = at;
      }
    }
  if (runs > 0) shortest = runs == 1 ? run : std::min(shortest, run);
  // Stages whose layer ranges differ between groups make one replica a member twice: 1.
  if (runs == 0 || members != ranks) return 1;
  return shortest * runs == members ? static_cast<int>(shortest) : 1;
}

}  // namespace

std::vector<std::vector<StageCost>> stage_costs(const Scenario& s, const plan::Plan& p, bool with_calls) {
  const auto& m = s.model;
  const auto& tr = s.training;
  const auto& cl = s.cluster;
  const hw::Dtype dt = tr.precision;
  const double e = dt == hw::Dtype::Fp32 ? 4.0 : 2.0;  // activation bytes on the wire
  const workload::ParamCount pc = workload::count_params(m);
  const cost::StateBytes sb = cost::state_bytes(dt, tr.optimizer, tr.autocast);
  const int replicas = p.replicas();
  // Where each stage's block starts in its pool (as the SimGrid engine places it): the DP rings
  // of several groups and whether a pipeline message stays in a node depend on it.
  const std::vector<std::vector<int>> starts = block_starts(cl, p);
  // A rank's tokens of one micro-batch: seq_len/cp of each sequence under context parallelism.
  const int seq = tr.seq_len / std::max(1, p.cp);
  const double sbh = static_cast<double>(p.micro_batch) * seq * m.hidden;
  // Expert parallelism: a rank holds 1/ep of each MoE layer's routed experts.
  const int ep = m.moe() ? std::max(1, p.ep) : 1;
  // A MoE layer's parameters on one device of a stage of `tp`: the dense part split over tp,
  // the routed experts 1/ep of them split over expert_tp (docs/cost-models.md#expert-tensor-parallelism).
  auto moe_layer_params = [&](int tp) {
    return (pc.per_layer - pc.per_layer_experts) / tp + pc.per_layer_experts / ep / p.expert_tp_of(tp);
  };
  // A MoE model's dense layers (first_dense_layers, moe_layer_freq) are priced as the dense
  // model they are; a stage holding both kinds gets the mean of its layers' costs per layer.
  const workload::ModelSpec dense_m = m.moe() ? workload::dense_layer_model(m) : m;

  // Per-layer costs of a (pool, tp) pair, per micro-batch.
  struct LayerCost {
    Duration fwd, bwd, recompute, tp_fwd, tp_bwd, tp_recompute;
    Duration ag, rs, ar;  // one TP collective of the micro-batch's activation
    Duration cp_fwd, cp_bwd, cp_recompute;  // context-parallel exchange, exposed, per pass
    Duration a2a;         // one expert-parallel all-to-all of the micro-batch's routed tokens
    Duration dispatch;    // the same for a dispatch: a2a, or in fp8 (fp8_dispatch)
    // The attention block's part of fwd, bwd and recompute (the ops before mlp_norm; the MLP or
    // MoE block is the rest): where overlap_ep_comm's all-to-alls can hide.
    Duration fwd_attn, bwd_attn, recompute_attn;
    cost::Algorithm ar_algorithm = cost::Algorithm::Ring;
    // The calls behind those times (StageCost's *_calls).
    std::vector<cost::CommCall> tp_fwd_calls, tp_bwd_calls, tp_recompute_calls;
    cost::CommCall ag_call, rs_call, ar_call, a2a_call, dispatch_call;
    std::shared_ptr<const std::vector<workload::Op>> ops;  // the layer's (StageCost::layer_ops)
  };
  // Context parallelism's exchange of one layer, exposed, per pass (docs/cost-models.md#context-parallelism).
  // The cp ranks of a sequence are consecutive replicas, tp apart in the rank order: a node of
  // D devices holds D/tp of them. P2P: cp − 1 ring steps, each sending the block of keys and
  // values it holds on (backward: those and their gradients) beside the attention kernel of the
  // block before; what the kernel does not hide is exposed, plus its slow-down. AllGather: the
  // keys and values gathered before attention, and again before its backward, whose key and
  // value gradients are reduce-scattered after it. AllToAll: queries, keys and values from
  // sequence to head shards before attention, its output back after; the backward the same.
  // The gathers and all-to-alls block.
  auto context_parallel = [&](Duration& fwd, Duration& bwd, Duration& rec, const std::vector<workload::Op>& layer,
                              const std::vector<Duration>& tf, const std::vector<Duration>& tb, const hw::PoolSpec& pool,
                              int tp, const workload::MicroBatchShape& shape) {
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
      if (op.kind == workload::OpKind::Attention) share = cost::recompute_share(op, p.recompute);
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
  };
  std::map<std::tuple<int, int, bool, bool>, LayerCost> memo;
  // `sharded`: the stage's parameters are sharded over more than one replica (ZeRO 3 gathers).
  auto layer_cost = [&](int pool_index, int tp, const workload::MicroBatchShape& shape, bool moe_kind,
                        bool sharded) -> const LayerCost& {
    auto [it, fresh] = memo.try_emplace({pool_index, tp, moe_kind, sharded});
    LayerCost& lc = it->second;
    if (!fresh) return lc;
    const workload::ModelSpec& lm = moe_kind ? m : dense_m;
    const double layer_params = moe_kind || !m.moe() ? moe_layer_params(tp) : pc.per_dense_layer / tp;
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
    if (p.zero >= 3 && sharded && tr.zero3_copy_out && dev.vendor != "google") {
      // FSDP2 gathers a layer's weights into one flat buffer and copies them out into the
      // parameters' own tensors before its forward and again before its backward: the layer's
      // weights read and written, on the compute stream (docs/cost-models.md#data-parallel-sync).
      // FSDP1's flat parameters are views into the gathered buffer (zero3_copy_out = false);
      // TPUs run JAX/XLA, whose sharded all-gather writes the weights where they are read.
      const Duration copy_out = Bytes{2 * layer_params * sb.weights} / (dev.memory_bandwidth * dev.efficiency.memory) +
                                dev.efficiency.launch_overhead;
      lc.fwd += copy_out;
      lc.bwd += copy_out;
    }
    if (ep > 1 && moe_kind) {
      // Dispatch (and, the same size, combine) of a MoE layer: each rank sends its share of the
      // micro-batch's tokens (1/tp of them: the TP ranks split the dispatch) top_k times, padded
      // to capacity, h wide, to the experts' ranks: all-to-all over the ep ranks, which Megatron
      // orders tp apart (tp · ep ≤ a node keeps it on the fabric; docs/cost-models.md#experts).
      // Under routing imbalance the most loaded rank receives top_k·moe_rank_load rows per
      // token (not top_k·capacity_factor), and its traffic bounds the exchange: priced as every
      // rank moving as much (docs/cost-models.md#routing-imbalance).
      CommGroup g;
      g.ranks = ep;
      g.ranks_per_node = group_ranks_per_node(pool.devices_per_node, p.expert_tp_of(tp), ep);
      g.intra = fabric_cost(pool);
      g.inter = nic_cost(pool, cl.network);
      const double load = workload::moe_rank_load(m, ep);
      // One exchange of `width` bytes per routed value.
      auto exchange = [&](double width) {
        if (p.ep_dispatch == plan::Plan::EpDispatch::Hierarchical && g.nodes() > 1) {
          // By node (DeepEP): a token crosses the network once per other node its experts sit
          // on (moe_nodes_per_token, group-limited routing included), and its top_k copies fan
          // out over the fabric, all but the one for the receiving rank
          // (docs/cost-models.md#hierarchical-dispatch).
          const double k = g.ranks_per_node, nodes = g.nodes();
          const double remote = workload::moe_nodes_per_token(m, g.nodes()) * (nodes - 1) / nodes;
          return cost::hierarchical_dispatch_time(Bytes{sbh / tp * load * width}, remote, m.top_k * (k - 1) / k, g).total();
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
    if (p.recompute == cost::Recompute::Full) {
      lc.recompute = lc.fwd;
      lc.recompute_attn = lc.fwd_attn;
    } else {
      for (std::size_t i = 0; i < layer.size(); ++i) {
        const Duration r = tf[i] * cost::recompute_share(layer[i], p.recompute);
        lc.recompute += r;
        if (i < mlp_start) lc.recompute_attn += r;
      }
    }
    if (p.cp > 1) context_parallel(lc.cp_fwd, lc.cp_bwd, lc.cp_recompute, layer, tf, tb, pool, tp, shape);
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
    if (tp > 1) {
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
      for (const auto& b : blocks) {
        const bool moe_block = &b == &blocks[1];
        const Duration bag = moe_block ? mag : dag, brs = moe_block ? mrs : lc.rs, bar = moe_block ? mar : lc.ar;
        // The experts' gathers (the dispatcher's) stay 16-bit; a dense block's gather carries
        // fp8 values when TE gathers in fp8 training (fp8_gather).
        const bool experts = moe_block && lm.moe();
        // One collective of the block, recorded in `calls`: its exposed time.
        auto call = [&, moe_block, experts](std::vector<cost::CommCall>& calls, Collective kind, Duration comm,
                                            Duration gemm, bool overlap) {
          const Duration x = tp_exposed(comm, gemm, overlap, slow);
          const double buffer = kind == Collective::AllGather && fp8_gather && !experts ? sbh : (moe_block ? part : act).v;
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
          lc.tp_recompute += sp ? call(lc.tp_recompute_calls, Collective::AllGather, bag, col_f, ov)
                                : call(lc.tp_recompute_calls, Collective::AllReduce, bar, row_f, ov);
        if (sp) {
          const Duration f0 = call(lc.tp_fwd_calls, Collective::AllGather, bag, col_f, ov);
          const Duration f1 = call(lc.tp_fwd_calls, Collective::ReduceScatter, brs, row_f, ov);
          lc.tp_fwd += f0 + f1;
          // The column GEMM's input gathered again for its weight gradient, unless the framework
          // gathered it and the GEMM kept it (a MoE block's experts gather in the dispatcher).
          const bool regather = !by_framework || experts;
          const Duration b0 = call(lc.tp_bwd_calls, Collective::AllGather, bag, row_b, ov);
          const Duration b1 = regather ? call(lc.tp_bwd_calls, Collective::AllGather, bag, col_b, ov_bwd) : Duration{0};
          const Duration b2 = call(lc.tp_bwd_calls, Collective::ReduceScatter, brs, col_b, ov_bwd);
          lc.tp_bwd += b0 + b1 + b2;
        } else {
          lc.tp_fwd += call(lc.tp_fwd_calls, Collective::AllReduce, bar, row_f, ov);
          lc.tp_bwd += call(lc.tp_bwd_calls, Collective::AllReduce, bar, col_b, ov_bwd);
        }
      }
      if (p.recompute == cost::Recompute::Full) {
        lc.tp_recompute = lc.tp_fwd;
        lc.tp_recompute_calls = lc.tp_fwd_calls;
      }
    }
    return lc;
  };

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
      // ZeRO 2/3 keep the 40 M of before (FSDP and DeepSpeed bucket otherwise).
      c.bucket = p.zero >= 2                          ? kBucketParams
                 : !p.overlap_grad_reduce || si > 0 ? std::numeric_limits<double>::infinity()
                                                    : bucket_params(shard);
      // Per-layer costs depend on the pool and tp only: computed once per pair (a deep
      // pipeline repeats them, and the planner calls this a great deal).
      // A MoE model's stage may hold dense layers too: n_moe of its layers are MoE layers.
      const int n_moe = m.moe() ? m.moe_layers(st.first_layer, st.layers) : st.layers;
      const bool mixed = m.moe() && n_moe < st.layers;
      const LayerCost& lc = layer_cost(st.pool, st.tp, shape, m.moe() && n_moe > 0, shard > 1);
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
        if (p.recompute == cost::Recompute::Full) c.layer_ep_recompute_calls = {lc.dispatch_call, lc.a2a_call};
      }
      // Forward: dispatch and combine; backward: their gradients the same way back (the
      // combine's gradient travels as a dispatch does, fp8 under fp8_dispatch; the dispatch's as
      // a combine); full recompute re-runs the forward's pair.
      c.layer_ep_fwd = lc.dispatch + lc.a2a;
      c.layer_ep_bwd = lc.dispatch + lc.a2a;
      c.layer_ep_recompute = p.recompute == cost::Recompute::Full ? lc.dispatch + lc.a2a : Duration{0};
      if (p.overlap_ep_comm && p.schedule != cost::Schedule::GPipe && p.run_micro_batches(grp) >= 2 && lc.a2a.v > 0) {
        // overlap_ep_comm (Megatron-Core's combined 1F1B with EP all-to-all overlap, DeepSeek-V3's
        // DualPipe): in the steady state one micro-batch's forward of a layer runs merged with
        // another's backward of it, in four slots whose exchange hides behind the other pass's
        // compute (DeepSeek-V3 §3.2.1, Fig. 4): the forward's attention beside the backward's
        // combine gradient; the backward's MLP beside the forward's dispatch; the forward's MLP
        // beside the backward's dispatch gradient; the backward's attention beside the forward's
        // combine. What a slot's exchange exceeds its compute by is exposed, and the compute loses
        // overlap_slowdown of its speed while the exchange runs beside it. Full recompute's
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
        const LayerCost& dc = layer_cost(st.pool, st.tp, shape, false, shard > 1);
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
      c.params_layer = mixed ? moe_layer_params(st.tp) * moe_share + pc.per_dense_layer / st.tp * (1 - moe_share)
                             : moe_layer_params(st.tp);
      c.expert_params = pc.per_layer_experts / ep / p.expert_tp_of(st.tp) * n_moe;
      c.expert_fold = st.tp / p.expert_tp_of(st.tp);
      if (first) c.params_emb = pc.embedding / st.tp;
      const double token_embedding = static_cast<double>(m.vocab) * m.hidden;
      if (last)
        c.params_head = (m.tied_embeddings ? (pp > 1 ? token_embedding : 0) : pc.output) / st.tp + pc.final_norm;
      c.params = c.params_layer * st.layers + c.params_emb + c.params_head;

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

      // Data-parallel sync of this stage's parameters. The replicas' copies of its layers form
      // the DP group; Megatron orders ranks tp, dp, pp, so a node of D devices holds D/tp
      // replicas of the stage. A mixed group is bounded by its slowest members' links: in
      // every group, the stages that hold any of these layers. Hybrid sharding: the group's
      // own replicas, on its own links.
      auto other_links = [&](CommGroup& g) {
        for (const auto& other : p.groups)
          for (const auto& os : other.stages) {
            const bool overlaps = os.first_layer < st.first_layer + st.layers &&
                                  st.first_layer < os.first_layer + os.layers;
            if (!overlaps) continue;
            g.intra = slower(g.intra, fabric_cost(cl.pools[os.pool]));
            g.inter = slower(g.inter, nic_cost(cl.pools[os.pool], cl.network));
          }
      };
      // Expert-data-parallel ranks (docs/cost-models.md#expert-tensor-parallelism): folded TP
      // ranks hold the same experts too, so they sync even without data-parallel replicas.
      const int edp = std::max(1, shard * c.expert_fold / ep);
      if (shard > 1 || (c.expert_params > 0 && edp > 1)) {
        CommGroup g;
        g.ranks = shard;
        const int k = group_ranks_per_node(pool.devices_per_node, st.tp, shard);
        // Several groups: as many members per node as their placement gives the ring (the
        // SimGrid engine's channels), 1 when the nodes hold unequal numbers of them.
        g.ranks_per_node = p.groups.size() == 1 || hybrid ? k : dp_members_per_node(cl, p, starts, st, replicas);
        g.intra = fabric_cost(pool);
        g.inter = nic_cost(pool, cl.network);
        if (!hybrid) other_links(g);
        // Megatron-LM reduces (and gathers) bucket by bucket, c.bucket each: every bucket
        // pays the collective's latency, and runs at the bandwidth its size reaches. Under
        // expert parallelism the routed experts' parameters sync apart, over the replicas/ep
        // ranks that hold the same experts (ep·tp apart in Megatron's rank order).
        auto sync = [&](double params, const CommGroup& sg, bool first_part, bool experts = false) {
          if (params <= 0 || sg.ranks <= 1) return;
          cost::CommCall call{p.zero == 0 ? Collective::AllReduce : Collective::ReduceScatter,
                              params * tr.grad_reduce_bytes};
          call.experts = experts;
          if (with_calls) c.dp_reduce_calls.push_back(call);
          if (with_calls && p.zero > 0) {
            call.kind = Collective::AllGather;
            call.bytes = params * sb.weights;
            c.dp_gather_calls.push_back(call);
          }
          const double buckets = std::max(1.0, std::ceil(params / c.bucket));
          c.dp_buckets += buckets;
          const Bytes grads{params * tr.grad_reduce_bytes / buckets};  // in the reduce's dtype
          const Bytes weights{params * sb.weights / buckets};
          if (p.zero == 0) {
            const auto r = cost::collective_time(Collective::AllReduce, grads, sg, p.grad_sync);
            c.dp_reduce += r.time.total() * buckets;
            if (first_part) c.dp_reduce_algorithm = r.algorithm;
          } else {
            const auto r = cost::collective_time(Collective::ReduceScatter, grads, sg, p.grad_sync);
            const auto a = cost::collective_time(Collective::AllGather, weights, sg, p.grad_sync);
            c.dp_reduce += r.time.total() * buckets;
            c.dp_gather += a.time.total() * buckets;
            if (first_part) {
              c.dp_reduce_algorithm = r.algorithm;
              c.dp_gather_algorithm = a.algorithm;
            }
          }
        };
        if (ep == 1 && c.expert_fold == 1) {
          sync(c.params, g, true);
        } else {
          sync(c.params - c.expert_params, g, true);
          // The expert-data-parallel ranks: a stage's tp·shard devices over the ep·expert_tp of
          // an expert group (shard/ep when expert_tp = tp), expert_fold·ep... apart in the rank order.
          CommGroup eg = g;
          eg.ranks = edp;
          eg.ranks_per_node = group_ranks_per_node(pool.devices_per_node, ep * p.expert_tp_of(st.tp), edp);
          sync(c.expert_params, eg, shard <= 1 || c.params - c.expert_params <= 0, true);
        }
      }
      // (Expert parameters shard over their shard/ep expert-data-parallel ranks.)
      auto sharded = [&](bool on) { return on ? sharded_params(c, shard, ep) : c.params; };
      if (hybrid) {
        // Once per step, after the last micro-batch's reduce-scatter: the groups all-reduce
        // their reduced shards, one member per group (each in its own nodes: across the NICs,
        // the slowest of the pools holding these layers), bucket by bucket like the reduces.
        // A device's shard is 1/shard of its stage's gradients, so the group with the fewest
        // replicas moves the most; the schedule joins the groups' tasks at the longest.
        CommGroup x;
        x.ranks = static_cast<int>(p.groups.size());
        x.ranks_per_node = 1;
        x.intra = fabric_cost(pool);
        x.inter = nic_cost(pool, cl.network);
        other_links(x);
        const double params = sharded(true);
        const double buckets = std::max(1.0, std::ceil(params / c.bucket));
        const auto r = cost::collective_time(Collective::AllReduce, Bytes{params * tr.grad_reduce_bytes / buckets}, x,
                                             p.grad_sync);
        c.dp_cross = r.time.total() * buckets;
        c.dp_cross_algorithm = r.algorithm;
        if (with_calls) c.dp_cross_calls = {{Collective::AllReduce, params * tr.grad_reduce_bytes}};
      }
      // The step after the gradients are in: the gradient norm for clipping (read the shard's
      // gradients), Adam over the shard (read the gradient, read and write the fp32 state,
      // write the weights), and zeroing the whole local gradient buffer for the next step.
      c.optimizer = cost::optimizer_time(dev, sharded(p.zero >= 1), 2 * sb.grads + 2 * sb.optimizer + sb.weights) +
                    cost::optimizer_time(dev, sharded(p.zero >= 2), sb.grads);

      // Memory. Eager modules save more than fused kernels (memory.hpp: repeated GQA K and V,
      // SwiGLU's SiLU output).
      const bool eager = !tr.fused_kernels;
      c.act_per_layer = cost::activation_bytes_per_layer(m, p.micro_batch, seq, st.tp, sp,
                                                         p.recompute, tr.flash_attention, dt, eager, ep);
      if (mixed)
        c.act_per_layer = Bytes{c.act_per_layer.v * moe_share +
                                cost::activation_bytes_per_layer(dense_m, p.micro_batch, seq, st.tp, sp, p.recompute,
                                                                 tr.flash_attention, dt, eager)
                                        .v * (1 - moe_share)};
      if (first) c.act_edge = Bytes{e * sbh / (sp ? st.tp : 1)};  // embedding output
      // The loss's peak per logit: Megatron-LM's fused vocabulary-parallel cross-entropy keeps
      // the bf16 logits and one fp32 buffer it works in place on (6 bytes); PyTorch's eager
      // cross_entropy on .float() logits holds, at its backward's peak, the saved fp32
      // log-softmax, the fp32 gradient nll_loss's backward writes and the fp32 gradient
      // log-softmax's backward writes (12 bytes; docs/cost-models.md#other-parts).
      // A fused 16-bit cross-entropy holds the logits and their gradient written in place (2 +
      // 2 bytes at most).
      const double per_logit = tr.loss_kernel == workload::LossKernel::Fused ? 4.0 : tr.fused_kernels ? 6.0 : 12.0;
      if (last) c.logits = Bytes{per_logit * p.micro_batch * seq * m.vocab / st.tp};
      // PyTorch FSDP (ZeRO-3 on GPUs): what sharding does not shard while a unit computes
      // (docs/cost-models.md#zero-3-buffers). TPUs run JAX/XLA, which gathers each weight where
      // it is used, so only the two layers count there.
      const bool torch_fsdp = p.zero == 3 && shard > 1 && dev.vendor != "google";
      if (p.zero == 3) {
        // Two layers' weights gathered: the one computing and the one prefetched.
        c.gathered = Bytes{2 * c.params_layer * sb.weights};
        // The root unit (embedding, final norm, output layer) is not resharded after the
        // forward (FSDP's _lazy_init sets the root's post_forward_mesh_info to None): its
        // weights stay gathered through the loss and the whole backward.
        if (torch_fsdp) c.gathered += Bytes{(c.params_emb + c.params_head) * sb.weights};
      }
      c.memory.params = c.params;
      c.memory.expert_params = c.expert_params;
      c.memory.ep = ep;
      c.memory.expert_fold = c.expert_fold;
      c.memory.state = sb;
      c.memory.state.grads = s.memory.gradient_bytes;  // what the framework keeps (memory only)
      c.memory.zero = p.zero;
      c.memory.dp = shard;
      // A layer's backward holds more than what was kept for it: what recompute re-creates
      // (the whole layer under full recompute, the attention core under selective), and the
      // gradients in flight (the layer's output gradient and the MLP's intermediate
      // gradients). The head's logits are freed before the layers' backward starts, so the
      // larger of the two counts (docs/cost-models.md#other-parts).
      {
        const Bytes kept = c.act_per_layer;
        // A layer's backward at a time: the larger kind's, MoE where the stage has any.
        const workload::ModelSpec& wm = n_moe > 0 ? m : dense_m;
        const Bytes whole = cost::activation_bytes_per_layer(wm, p.micro_batch, seq, st.tp, sp,
                                                             cost::Recompute::None, tr.flash_attention, dt, eager, ep);
        const double act = m.activation == workload::Activation::SwiGlu ? 2 : 1;
        const Bytes grads{e * p.micro_batch * seq *
                          (m.hidden / (sp ? st.tp : 1.0) +
                           act * (wm.ffn_hidden * (wm.moe() ? wm.top_k : 1) + wm.shared_width()) / st.tp)};
        c.backward_working = (whole > kept ? whole - kept : Bytes{0}) + grads;
        if (torch_fsdp) {
          // FSDP's backward per layer: autograd writes the layer's unsharded weight gradients in
          // the unsharded weights' dtype, and foreach_reduce copies them into a reduce-scatter
          // input of the reduce dtype that lives until the collective ends, while the next
          // layer's gradients are computed; the root's output-layer gradient is held unsharded
          // until the root's post-backward at the end of the backward.
          c.backward_working += Bytes{c.params_layer * (sb.weights + tr.grad_reduce_bytes) + c.params_head * sb.weights};
        }
      }
      c.memory.transient = (c.logits > c.backward_working ? c.logits : c.backward_working) + c.gathered;
      c.memory.comm_buffers = s.memory.comm_buffers;
      c.memory.runtime_reserve = s.memory.runtime_reserve;
      c.memory.fragmentation = s.memory.fragmentation;
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
