#include "sim/analytic/estimate.hpp"

#include <algorithm>
#include <cmath>

#include "models/cost/collectives.hpp"
#include "models/cost/compute.hpp"
#include "models/cost/memory.hpp"
#include "models/workload/layer_ops.hpp"

namespace hetsim::analytic {
namespace {

using cost::Collective;
using cost::CommGroup;
using cost::LinkCost;
using cost::Pass;

// Megatron-LM's default gradient bucket: 40 M parameters.
constexpr double kBucketParams = 40e6;

LinkCost fabric_cost(const hw::PoolSpec& p) {
  return {p.fabric.effective(), p.fabric.latency};
}

LinkCost nic_cost(const hw::PoolSpec& p, const hw::NetworkSpec& net) {
  const double eff = p.nic.efficiency / std::max(1.0, net.oversubscription);
  return {p.nic_bandwidth_per_device() * eff, p.nic.latency};
}

LinkCost slower(LinkCost a, LinkCost b) {
  return {a.bandwidth < b.bandwidth ? a.bandwidth : b.bandwidth, max(a.latency, b.latency)};
}

// The TP group of a stage: tp ranks inside one node.
CommGroup tp_group(const hw::PoolSpec& p, int tp) {
  CommGroup g;
  g.ranks = tp;
  g.ranks_per_node = tp;
  g.intra = fabric_cost(p);
  return g;
}

struct StageWork {
  Duration fwd, bwd, recompute, tp_comm, pp_comm;
  double params = 0;  // parameters on one device of the stage (after TP, before ZeRO)
  Duration per_micro_batch() const { return fwd + bwd + recompute + tp_comm + pp_comm; }
};

// Time of the TP collectives around one GEMM pair, after overlap with that GEMM if enabled.
Duration tp_exposed(Duration comm, Duration gemm, bool overlap) {
  if (!overlap) return comm;
  return Duration{std::max(0.0, (comm - gemm).v)};
}

Duration op_named(const std::vector<workload::Op>& ops, const hw::DeviceSpec& dev, hw::Dtype dt,
                  const char* name, Pass pass) {
  for (const auto& op : ops)
    if (op.name == name) return cost::op_time(dev, dt, op, pass);
  return Duration{0};
}

}  // namespace

Estimate estimate(const Scenario& s, const plan::Plan& p) {
  const auto& m = s.model;
  const auto& tr = s.training;
  const auto& cl = s.cluster;
  const hw::Dtype dt = tr.precision;
  const double e = dt == hw::Dtype::Fp32 ? 4.0 : 2.0;  // activation bytes on the wire
  const workload::ParamCount pc = workload::count_params(m);
  const cost::StateBytes sb = cost::state_bytes(dt, tr.optimizer);
  const int replicas = p.replicas();

  Estimate est;
  est.tokens_per_step = static_cast<double>(p.sequences_per_step()) * tr.seq_len;
  est.model_flops_per_step = workload::model_flops_per_step(m, tr);
  // The scenario's global batch may differ from the plan's only if the plan was built for it;
  // count the model FLOPs of the sequences the plan actually processes.
  est.model_flops_per_step =
      est.model_flops_per_step * (static_cast<double>(p.sequences_per_step()) / tr.global_batch);

  Duration pipe_max{0};
  cost::TimeBreakdown critical;  // decomposition of the slowest replica's pipeline
  Duration dp_exposed_max{0}, dp_comm_max{0}, optimizer_max{0};

  for (std::size_t gi = 0; gi < p.groups.size(); ++gi) {
    const auto& grp = p.groups[gi];
    const int pp = static_cast<int>(grp.stages.size());
    const int v = p.schedule == cost::Schedule::Interleaved ? p.virtual_stages : 1;
    std::vector<StageWork> work(pp);

    for (int si = 0; si < pp; ++si) {
      const plan::Stage& st = grp.stages[si];
      const hw::PoolSpec& pool = cl.pools[st.pool];
      const hw::DeviceSpec& dev = pool.device;
      workload::MicroBatchShape shape;
      shape.micro_batch = p.micro_batch;
      shape.seq_len = tr.seq_len;
      shape.tp = st.tp;
      shape.sequence_parallel = p.sequence_parallel && st.tp > 1;
      shape.dtype = dt;
      shape.flash_attention = tr.flash_attention;
      shape.causal = tr.causal;
      const bool first = si == 0, last = si == pp - 1;

      StageWork& w = work[si];
      const auto layer = workload::layer_ops(m, shape);
      const Duration lf = cost::ops_time(dev, dt, layer, Pass::Forward);
      const Duration lb = cost::ops_time(dev, dt, layer, Pass::Backward);
      w.fwd = lf * st.layers;
      w.bwd = lb * st.layers;
      if (p.recompute == cost::Recompute::Full) {
        w.recompute = lf * st.layers;
      } else if (p.recompute == cost::Recompute::Selective) {
        Duration sel{0};
        for (const auto& op : layer)
          if (op.selective_recompute) sel += cost::op_time(dev, dt, op, Pass::Forward);
        w.recompute = sel * st.layers;
      }
      if (first) {
        const auto emb = workload::embedding_ops(m, shape);
        w.fwd += cost::ops_time(dev, dt, emb, Pass::Forward);
        w.bwd += cost::ops_time(dev, dt, emb, Pass::Backward);
      }
      if (last) {
        const auto head = workload::head_ops(m, shape);
        w.fwd += cost::ops_time(dev, dt, head, Pass::Forward);
        w.bwd += cost::ops_time(dev, dt, head, Pass::Backward);
      }

      // Tensor-parallel collectives: with sequence parallelism, an all-gather before and a
      // reduce-scatter after each of the attention and MLP blocks, forward and backward
      // (Korthikanti et al. §4.2.2); without it, one all-reduce after each block. The full
      // activation of the micro-batch (b·s·h) is the buffer.
      if (st.tp > 1) {
        const Bytes act{static_cast<double>(p.micro_batch) * tr.seq_len * m.hidden * e};
        const CommGroup g = tp_group(pool, st.tp);
        const bool sp = shape.sequence_parallel;
        const Duration ag = cost::collective_time(Collective::AllGather, act, g).time.total();
        const Duration rs = cost::collective_time(Collective::ReduceScatter, act, g).time.total();
        const Duration ar = cost::collective_time(Collective::AllReduce, act, g).time.total();
        const bool ov = p.overlap_tp_comm;
        // Forward: AG ↔ qkv, RS ↔ attn_out, AG ↔ mlp_up, RS ↔ mlp_down (each hides behind the
        // GEMM it feeds when overlapped); without sequence parallelism an all-reduce follows
        // attn_out and mlp_down. Backward mirrors it with the data-gradient GEMMs.
        const char* pairs[4] = {"qkv", "attn_out", m.moe() ? "expert_up" : "mlp_up",
                                m.moe() ? "expert_down" : "mlp_down"};
        const Duration none{0};
        const Duration comm[4] = {sp ? ag : none, sp ? rs : ar, sp ? ag : none, sp ? rs : ar};
        Duration fwd_tp{0}, bwd_tp{0};
        for (int k = 0; k < 4; ++k) {
          fwd_tp += tp_exposed(comm[k], op_named(layer, dev, dt, pairs[k], Pass::Forward), ov);
          bwd_tp += tp_exposed(comm[k], op_named(layer, dev, dt, pairs[k], Pass::Backward) / 2, ov);
        }
        w.tp_comm = (fwd_tp + bwd_tp) * st.layers;
        if (p.recompute == cost::Recompute::Full) w.tp_comm += fwd_tp * st.layers;
        // Vocabulary-parallel embedding output is reduced; the head's input is gathered.
        if (first) w.tp_comm += sp ? rs + ag : ar;
        if (last) w.tp_comm += sp ? ag + rs : ar;
      }

      // Parameters on one device of this stage.
      w.params = (pc.per_layer * st.layers) / st.tp;
      if (first) w.params += pc.embedding / st.tp;
      // With tied embeddings and pp > 1 the last stage keeps its own copy of the token
      // embedding (not the position table) for the output layer.
      const double token_embedding = static_cast<double>(m.vocab) * m.hidden;
      if (last) w.params += (m.tied_embeddings ? (pp > 1 ? token_embedding : 0) : pc.output) / st.tp +
                           pc.final_norm;
    }

    // Pipeline point-to-point: the activation (1/tp of it per rank with the scatter-gather
    // optimisation) forward, its gradient backward. Neighbouring stages share a node only when
    // both stages' tp × replicas block fits in one node of one pool (Megatron rank order
    // tp, dp, pp); otherwise the message crosses the NICs.
    for (int si = 0; si + 1 < pp; ++si) {
      const plan::Stage& a = grp.stages[si];
      const plan::Stage& b = grp.stages[si + 1];
      const hw::PoolSpec& pa = cl.pools[a.pool];
      const hw::PoolSpec& pb = cl.pools[b.pool];
      const double scatter = p.sequence_parallel ? std::max(a.tp, b.tp) : 1;
      const Bytes msg{static_cast<double>(p.micro_batch) * tr.seq_len * m.hidden * e / scatter};
      CommGroup g;
      g.ranks = 2;
      const bool same_node = a.pool == b.pool && 2 * a.tp * grp.replicas <= pa.devices_per_node;
      g.ranks_per_node = same_node ? 2 : 1;
      g.intra = fabric_cost(pa);
      g.inter = slower(nic_cost(pa, cl.network), nic_cost(pb, cl.network));
      const Duration t = cost::collective_time(Collective::SendRecv, msg, g).time.total() * v;
      work[si].pp_comm += t;      // forward send
      work[si + 1].pp_comm += t;  // backward send
    }

    // Pipeline time (docs/cost-models.md#pipeline): with c_i the per-micro-batch time of stage
    // i and m micro-batches, T = m·max c + (Σ c − max c)/v. Uniform stages give the closed form
    // (m + p − 1)·c for 1F1B and GPipe, and (m + (p − 1)/v)·c for interleaved 1F1B.
    Duration cmax{0}, csum{0};
    int bottleneck = 0;
    for (int si = 0; si < pp; ++si) {
      const Duration c = work[si].per_micro_batch();
      csum += c;
      if (c > cmax) { cmax = c; bottleneck = si; }
    }
    const double mb = grp.micro_batches;
    const Duration pipe = cmax * mb + (csum - cmax) / v;
    est.groups.push_back({grp.replicas, grp.micro_batches, pipe});
    if (pipe >= pipe_max) {
      pipe_max = pipe;
      const StageWork& w = work[bottleneck];
      critical = {};
      critical.add("compute", (w.fwd + w.bwd) * mb);
      critical.add("recompute", w.recompute * mb);
      critical.add("tp comm", w.tp_comm * mb);
      critical.add("pp comm", w.pp_comm * mb);
      critical.add("pipeline bubble", pipe - cmax * mb);
    }

    // Data-parallel sync per stage, memory per stage.
    for (int si = 0; si < pp; ++si) {
      const plan::Stage& st = grp.stages[si];
      const hw::PoolSpec& pool = cl.pools[st.pool];
      const StageWork& w = work[si];
      StageEstimate se;
      se.group = static_cast<int>(gi);
      se.stage = si;
      se.pool = pool.name;
      se.tp = st.tp;
      se.first_layer = st.first_layer;
      se.layers = st.layers;
      se.per_micro_batch.add("forward", w.fwd);
      se.per_micro_batch.add("backward", w.bwd);
      se.per_micro_batch.add("recompute", w.recompute);
      se.per_micro_batch.add("tp comm", w.tp_comm);
      se.per_micro_batch.add("pp comm", w.pp_comm);

      if (replicas > 1) {
        // The replicas' copies of this stage form the DP group. Megatron orders ranks tp, dp,
        // pp, so a node of D devices holds D/tp replicas of the stage. A mixed DP group is
        // bounded by its slowest member's links.
        CommGroup g;
        g.ranks = replicas;
        int k = std::max(1, std::min(replicas, pool.devices_per_node / st.tp));
        while (replicas % k) --k;
        g.ranks_per_node = p.groups.size() == 1 ? k : 1;
        g.intra = fabric_cost(pool);
        g.inter = nic_cost(pool, cl.network);
        // Members: in every group, the stages that hold any of this stage's layers.
        for (const auto& other : p.groups)
          for (const auto& os : other.stages) {
            const bool overlaps = os.first_layer < st.first_layer + st.layers &&
                                  st.first_layer < os.first_layer + os.layers;
            if (!overlaps) continue;
            g.intra = slower(g.intra, fabric_cost(cl.pools[os.pool]));
            g.inter = slower(g.inter, nic_cost(cl.pools[os.pool], cl.network));
          }
        const Bytes grads{w.params * sb.grads};
        const Bytes weights{w.params * sb.weights};
        Duration reduce, gather;
        if (p.zero == 0) {
          reduce = cost::collective_time(Collective::AllReduce, grads, g, p.grad_sync).time.total();
        } else {
          reduce = cost::collective_time(Collective::ReduceScatter, grads, g, p.grad_sync).time.total();
          gather = cost::collective_time(Collective::AllGather, weights, g, p.grad_sync).time.total();
          if (p.zero == 3) gather = gather * 2;  // gathered again for the backward pass
        }
        se.dp_comm = reduce + gather;
        if (p.overlap_grad_reduce) {
          // Buckets are reduced as the last micro-batch's backward produces them; the last
          // bucket cannot hide. Parameter gathers hide behind the next step's first forward.
          const double bucket = std::min(1.0, kBucketParams / std::max(1.0, w.params));
          const Duration hide_b = w.bwd + w.recompute;
          const Duration hide_f = w.fwd;
          se.dp_exposed = max(reduce - hide_b, reduce * bucket) + max(gather - hide_f, gather * bucket);
          if (se.dp_exposed < Duration{0}) se.dp_exposed = Duration{0};
        } else {
          se.dp_exposed = se.dp_comm;
        }
      }
      const double opt_params = w.params / (p.zero >= 1 ? replicas : 1);
      se.optimizer = cost::optimizer_time(pool.device, opt_params, sb.grads + 2 * sb.optimizer + sb.weights);
      dp_exposed_max = max(dp_exposed_max, se.dp_exposed);
      dp_comm_max = max(dp_comm_max, se.dp_comm);
      optimizer_max = max(optimizer_max, se.optimizer);

      // Memory.
      se.in_flight = cost::in_flight_micro_batches(p.schedule, si, pp, grp.micro_batches, v);
      const bool sp = p.sequence_parallel && st.tp > 1;
      Bytes act = cost::activation_bytes_per_layer(m, p.micro_batch, tr.seq_len, st.tp, sp,
                                                   p.recompute, tr.flash_attention, dt) *
                  st.layers;
      const double sbh = static_cast<double>(p.micro_batch) * tr.seq_len * m.hidden;
      if (si == 0) act += Bytes{e * sbh / (sp ? st.tp : 1)};  // embedding output
      cost::DeviceMemoryInput mi;
      mi.params = w.params;
      mi.state = sb;
      mi.zero = p.zero;
      mi.dp = replicas;
      mi.activations_per_micro_batch = act;
      mi.in_flight = se.in_flight;
      Bytes transient{0};
      if (si == pp - 1)  // bf16 logits and their fp32 copy for the loss
        transient = Bytes{6.0 * p.micro_batch * tr.seq_len * m.vocab / st.tp};
      if (p.zero == 3)  // two layers' weights gathered ahead of use
        transient = transient + Bytes{2 * pc.per_layer / st.tp * sb.weights};
      mi.transient = transient;
      mi.comm_buffers = s.memory.comm_buffers;
      mi.runtime_reserve = s.memory.runtime_reserve;
      mi.fragmentation = s.memory.fragmentation;
      se.memory = cost::device_memory(mi);
      est.stages.push_back(std::move(se));
    }
  }

  est.step = critical;
  est.step.add("dp comm", dp_exposed_max);
  est.step.add("optimizer", optimizer_max);
  est.step_time = est.step.total();
  est.bubble_fraction = est.step_time.v > 0 ? est.step.get("pipeline bubble") / est.step_time : 0;
  est.tokens_per_s = est.tokens_per_step / est.step_time.v;

  // Per device type: count, peak memory of the worst stage, verdict.
  double peak_sum = 0, watts = 0, usd_per_hour = 0;
  for (std::size_t pi = 0; pi < cl.pools.size(); ++pi) {
    const hw::PoolSpec& pool = cl.pools[pi];
    DeviceEstimate de;
    de.pool = pool.name;
    de.device = pool.device.name;
    de.capacity = pool.device.memory;
    for (const auto& g : p.groups)
      for (const auto& st : g.stages)
        if (st.pool == static_cast<int>(pi)) de.count += g.replicas * st.tp;
    de.idle = pool.devices() - de.count;
    for (const auto& se : est.stages) {
      if (se.pool != pool.name) continue;
      const Bytes peak = se.memory.total();
      if (peak > de.peak_memory) {
        de.peak_memory = peak;
        de.memory = se.memory;
        de.worst_stage = "group " + std::to_string(se.group) + " stage " + std::to_string(se.stage);
      }
    }
    de.fits = de.count == 0 || de.peak_memory <= de.capacity;
    est.fits = est.fits && de.fits;
    est.devices += de.count;
    peak_sum += de.count * pool.device.peak_for(dt).value_or(FlopRate{0}).v;
    watts += de.count * pool.device.tdp.v;
    const double hourly =
        s.cost.mode == CostSpec::Mode::Rent
            ? pool.device.price_usd_per_hour
            : pool.device.purchase_usd / (s.cost.amortisation_years * 365.25 * 24) +
                  pool.device.tdp.v * s.cost.pue / 1000.0 * s.cost.electricity_usd_per_kwh;
    // Rented devices are paid while used; owned ones cost their amortisation (and, idle, no
    // power) whether the plan uses them or not.
    usd_per_hour += de.count * hourly;
    if (s.cost.mode == CostSpec::Mode::Own)
      usd_per_hour += de.idle * pool.device.purchase_usd / (s.cost.amortisation_years * 365.25 * 24);
    est.device_types.push_back(std::move(de));
  }
  const double model_rate = est.model_flops_per_step.v / est.step_time.v;
  est.flops_per_device = FlopRate{model_rate / std::max(1, est.devices)};
  est.mfu = peak_sum > 0 ? model_rate / peak_sum : 0;
  if (tr.tokens > 0) {
    est.time_to_train = Duration{tr.tokens / est.tokens_per_s};
    const double hours = est.time_to_train.v / 3600.0;
    est.cost_to_train_usd = usd_per_hour * hours;
    est.energy_kwh = watts * s.cost.pue / 1000.0 * hours;
  }
  return est;
}

}  // namespace hetsim::analytic
