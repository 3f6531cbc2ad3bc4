#include "sim/analytic/detail/context.hpp"

#include <algorithm>

#include "sim/analytic/detail/placement.hpp"

namespace hetsim::analytic::detail {

double PlanContext::moe_layer_params(int tp) const {
  return (pc.per_layer - pc.per_layer_experts) / tp + pc.per_layer_experts / ep / p.expert_tp_of(tp);
}

PlanContext plan_context(const Scenario& s, const plan::Plan& p) {
  const auto& m = s.model;
  const auto& tr = s.training;
  const auto& cl = s.cluster;
  const hw::Dtype dt = tr.precision;
  const int seq = tr.seq_len / std::max(1, p.cp);
  return PlanContext{
      .s = s,
      .p = p,
      .m = m,
      .tr = tr,
      .cl = cl,
      .dt = dt,
      .e = dt == hw::Dtype::Fp32 ? 4.0 : 2.0,
      .pc = workload::count_params(m),
      .sb = cost::state_bytes(dt, tr.optimizer, tr.autocast),
      .replicas = p.replicas(),
      .starts = block_starts(cl, p),
      .seq = seq,
      .sbh = static_cast<double>(p.micro_batch) * seq * m.hidden,
      .ep = m.moe() ? std::max(1, p.ep) : 1,
      .dense_m = m.moe() ? workload::dense_layer_model(m) : m,
  };
}

}  // namespace hetsim::analytic::detail
