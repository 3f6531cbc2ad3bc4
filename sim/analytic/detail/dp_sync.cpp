#include "sim/analytic/detail/dp_sync.hpp"

#include <algorithm>
#include <cmath>

#include "models/cost/compute.hpp"
#include "sim/analytic/detail/links.hpp"
#include "sim/analytic/detail/placement.hpp"

namespace hetsim::analytic::detail {
namespace {

using cost::Collective;
using cost::CommGroup;

}  // namespace

void price_dp_sync(const PlanContext& ctx, const plan::Stage& st, int shard, bool hybrid, bool with_calls, StageCost& c) {
  const auto& p = ctx.p;
  const auto& tr = ctx.tr;
  const auto& cl = ctx.cl;
  const auto& sb = ctx.sb;
  const int ep = ctx.ep;
  const hw::PoolSpec& pool = cl.pools[st.pool];
  const hw::DeviceSpec& dev = pool.device;
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
  // The collectives a sync of `params` is cut into: ZeRO 3 one per layer (the embedding and the
  // head ride with the stage's first and last layer; the experts' sync likewise), else buckets
  // of c.bucket parameters.
  auto buckets_of = [&](double params) {
    return p.zero >= 3 ? std::max(1.0, static_cast<double>(st.layers)) : std::max(1.0, std::ceil(params / c.bucket));
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
    g.ranks_per_node = p.groups.size() == 1 || hybrid ? k : dp_members_per_node(cl, p, ctx.starts, st, ctx.replicas);
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
      const double buckets = buckets_of(params);
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
        // FSDP2 packs the per-parameter gradients into each reduce-scatter's input on the
        // reduce stream first (torch._chunk_cat), casting them to the reduce's dtype: read the
        // 16-bit gradient, write it in that dtype, at PyTorch's non-vectorized rate when it
        // casts (16 → 32 bits). Measured in 64-H100 FSDP2 profiles of Llama 3.1 70B: 238 ms per
        // micro-batch with fp32 reduces, 102 ms with bf16 (docs/research-nsys-reports.md).
        if (fsdp2_copies(p, tr, dev)) {
          const bool cast = tr.grad_reduce_bytes > sb.weights;  // 16 → 32 bits: not vectorized
          const double f = cast && dev.efficiency.unvectorized_memory > 0 ? dev.efficiency.unvectorized_memory
                                                                        : dev.efficiency.memory;
          c.dp_reduce += Bytes{params * (sb.weights + tr.grad_reduce_bytes)} / (dev.memory_bandwidth * f) +
                         dev.efficiency.launch_overhead * buckets;
        }
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
    const double buckets = buckets_of(params);  // ZeRO 3 (HSDP): a layer's shard at a time
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
}

}  // namespace hetsim::analytic::detail
