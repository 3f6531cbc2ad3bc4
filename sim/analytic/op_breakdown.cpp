#include "sim/analytic/op_breakdown.hpp"

#include <algorithm>
#include <tuple>

#include "models/workload/layer_ops.hpp"
#include "sim/analytic/stage_cost.hpp"

namespace hetsim::analytic {
namespace {

using cost::Pass;

OpPart price(const hw::DeviceSpec& dev, hw::Dtype dt, const char* part, int repeat,
             const std::vector<workload::Op>& ops) {
  OpPart out;
  out.part = part;
  out.repeat = repeat;
  Duration sf{0}, sb{0};
  for (const workload::Op& op : ops) {
    OpCost c{op, cost::op_time_parts(dev, dt, op, Pass::Forward), cost::op_time_parts(dev, dt, op, Pass::Backward)};
    sf += c.fwd.total;
    sb += c.bwd.total;
    out.ops.push_back(std::move(c));
  }
  const Duration host = dev.efficiency.host_overhead;
  const Duration hf = host * cost::kernels(ops, Pass::Forward), hb = host * cost::kernels(ops, Pass::Backward);
  out.fwd = max(sf, hf);
  out.bwd = max(sb, hb);
  out.fwd_host_bound = hf.v > sf.v;
  out.bwd_host_bound = hb.v > sb.v;
  return out;
}

}  // namespace

Duration StageOps::compute() const {
  Duration t{0};
  for (const OpPart& p : parts) t += (p.fwd + p.bwd) * p.repeat;
  return t;
}

std::vector<StageOps> op_breakdown(const Scenario& s, const plan::Plan& p) {
  std::vector<StageOps> out;
  std::vector<std::tuple<int, int, int, int, bool, bool>> seen;  // pool, tp, layers, MoE layers, first, last
  const hw::Dtype dt = s.training.precision;
  for (std::size_t g = 0; g < p.groups.size(); ++g) {
    const auto& stages = p.groups[g].stages;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      const plan::Stage& st = stages[i];
      const bool first = i == 0, last = i + 1 == stages.size();
      // A MoE model's dense layers (first_dense_layers, moe_layer_freq) are a part of their own.
      const int n_moe = s.model.moe() ? s.model.moe_layers(st.first_layer, st.layers) : st.layers;
      const auto key = std::make_tuple(st.pool, st.tp, st.layers, n_moe, first, last);
      if (auto it = std::find(seen.begin(), seen.end(), key); it != seen.end()) {
        out[static_cast<std::size_t>(it - seen.begin())].alike += p.groups[g].replicas;
        continue;
      }
      seen.push_back(key);
      const hw::PoolSpec& pool = s.cluster.pools[st.pool];
      const workload::MicroBatchShape shape = micro_batch_shape(s, p, st);
      StageOps so;
      so.group = static_cast<int>(g);
      so.stage = static_cast<int>(i);
      so.alike = p.groups[g].replicas;
      so.pool = pool.name;
      so.device = pool.device.name;
      so.tp = st.tp;
      so.layers = st.layers;
      if (first) so.parts.push_back(price(pool.device, dt, "embedding", 1, workload::embedding_ops(s.model, shape)));
      if (n_moe > 0) so.parts.push_back(price(pool.device, dt, "layer", n_moe, workload::layer_ops(s.model, shape)));
      if (n_moe < st.layers)
        so.parts.push_back(price(pool.device, dt, "dense layer", st.layers - n_moe,
                                 workload::layer_ops(workload::dense_layer_model(s.model), shape)));
      if (last) so.parts.push_back(price(pool.device, dt, "head", 1, workload::head_ops(s.model, shape)));
      out.push_back(std::move(so));
    }
  }
  return out;
}

}  // namespace hetsim::analytic
