#include "sim/plan/detail/feasibility.hpp"

namespace hetsim::planner::detail {

bool nic_paths_ok(const Scenario& s, const plan::Plan& p) {
  for (const auto& g : p.groups)
    for (std::size_t i = 0; i < g.stages.size(); ++i) {
      const auto& pool = s.cluster.pools[static_cast<std::size_t>(g.stages[i].pool)];
      // A device without the training's number format cannot hold a stage (validate_plan
      // refuses it too); the search leaves such pools out.
      if (!pool.device.peak_for(s.training.precision)) return false;
      if (pool.nics_per_node > 0) continue;
      const bool crosses = p.groups.size() > 1 || (i + 1 < g.stages.size() && g.stages[i + 1].pool != g.stages[i].pool) ||
                           (i > 0 && g.stages[i - 1].pool != g.stages[i].pool) ||
                           g.replicas * g.stages[i].tp > pool.devices_per_node;
      if (crosses) return false;
    }
  return true;
}

}  // namespace hetsim::planner::detail
