#include "sim/plan/detail/stage_lines.hpp"

#include <algorithm>

namespace hetsim::planner::detail {
namespace {

// Per-micro-batch time of every stage of group g: c_i.
std::vector<double> stage_times(const plan::Plan& p, std::size_t g, const std::vector<analytic::StageCost>& c) {
  const auto& grp = p.groups[g];
  const int v = virtual_of(p);
  std::vector<double> out;
  for (std::size_t i = 0; i < grp.stages.size(); ++i) {
    const int L = grp.stages[i].layers;
    const Duration t =
        c[i].fwd(L) + c[i].bwd(L) + c[i].recompute(L) + c[i].tp(L) + c[i].ep(L) + analytic::pipeline_sends(c, i, v);
    out.push_back(t.v);
  }
  return out;
}

}  // namespace

int virtual_of(const plan::Plan& p) {
  return p.schedule == cost::Schedule::Interleaved ? p.virtual_stages : 1;
}

GroupTime group_time(const plan::Plan& p, std::size_t g, const std::vector<analytic::StageCost>& c) {
  const auto t = stage_times(p, g, c);
  GroupTime gt;
  double sum = 0;
  for (double x : t) {
    gt.cmax = std::max(gt.cmax, x);
    sum += x;
  }
  gt.fill = (sum - gt.cmax) * p.pipeline_runs / virtual_of(p);
  return gt;
}

std::vector<StageLine> stage_lines(const Scenario& s, const plan::Plan& p, std::size_t g,
                                   const std::vector<analytic::StageCost>& costs) {
  const auto& grp = p.groups[g];
  const int S = static_cast<int>(grp.stages.size());
  const int v = virtual_of(p);
  std::vector<StageLine> out(static_cast<std::size_t>(S));
  for (int i = 0; i < S; ++i) {
    const auto& c = costs[static_cast<std::size_t>(i)];
    StageLine& ln = out[static_cast<std::size_t>(i)];
    ln.b = (c.layer_fwd + c.layer_bwd + c.layer_recompute + c.layer_tp_fwd + c.layer_tp_bwd + c.layer_tp_recompute +
            c.layer_ep_fwd + c.layer_ep_bwd + c.layer_ep_recompute).v;
    ln.a = (c.emb_fwd + c.emb_bwd + c.emb_tp + c.head_fwd + c.head_bwd + c.head_tp + c.pipeline_regather() +
            analytic::pipeline_sends(costs, static_cast<std::size_t>(i), v)).v;
    const auto& mi = c.memory;
    // Bytes per parameter, as cost::device_memory counts them: the routed experts' state
    // sharded over their own data-parallel ranks, their gradients at their own width.
    const double d = std::max(1, mi.dp);
    const double de = std::max(1.0, d * std::max(1, mi.expert_fold) / std::max(1, mi.ep));
    const auto per = [&](double ranks, double grads) {
      return mi.state.weights / (mi.zero >= 3 ? ranks : 1) + grads / (mi.zero >= 2 ? ranks : 1) +
             mi.state.optimizer / (mi.zero >= 1 ? ranks : 1);
    };
    const double expert_share = mi.params > 0 ? mi.expert_params / mi.params : 0;
    const double per_param = (1 - expert_share) * per(d, mi.state.grads) + expert_share * per(de, mi.state.expert_grads);
    const double inflight = cost::in_flight_micro_batches(p.schedule, i, S, p.run_micro_batches(grp), v);
    ln.k = c.params_layer * per_param + c.act_per_layer.v * inflight;
    ln.f = (c.params_emb + c.params_head) * per_param + c.act_edge.v * inflight + mi.transient.v + mi.comm_buffers.v;
    const auto& pool = s.cluster.pools[grp.stages[static_cast<std::size_t>(i)].pool];
    ln.room = (pool.device.memory.v - mi.runtime_reserve.v) / (1.0 + mi.fragmentation);
  }
  return out;
}

}  // namespace hetsim::planner::detail
