#include "exec/replay/dp_groups.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace hetsim::exec {

int rank_in(const std::vector<int>& group, int real) {
  const auto it = std::lower_bound(group.begin(), group.end(), real);
  return it != group.end() && *it == real ? static_cast<int>(it - group.begin()) : -1;
}

Result<DpLayout> dp_layout(const schedule::TaskGraph& g) {
  using schedule::TaskKind;
  DpLayout out;
  out.first_real.resize(g.devices.size());
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    out.first_real[d] = out.real_devices;
    out.real_devices += g.devices[d].count;
  }
  out.member_of.resize(g.size());
  std::map<std::vector<int>, int> index;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    if (t.kind != TaskKind::GradReduce && t.kind != TaskKind::ParamGather) continue;
    std::vector<std::uint32_t> members{i};
    if (t.collective != schedule::kNoCollective) members = g.collectives[t.collective];
    const auto& info = g.devices[t.device];
    const int tp = info.tp;
    for (std::uint32_t m : members) {
      const auto& other = g.devices[g.tasks[m].device];
      if (other.tp == tp) continue;
      const std::string layers = t.layers > 1 ? "layers " + std::to_string(t.first_layer) + "-" +
                                                    std::to_string(t.first_layer + t.layers - 1)
                                              : "layer " + std::to_string(t.first_layer);
      return Diagnostic{{}, "plan", layers + ": its data-parallel " + std::string(schedule::task_kind_name(t.kind)) +
                                        " joins tensor-parallel degree " + std::to_string(tp) + " (" + info.label +
                                        ") and " + std::to_string(other.tp) + " (" + other.label +
                                        "): the executor does not reshard between tensor-parallel degrees yet",
                        "give every replica group the same tp for each layer (docs/executor.md, Limits)"};
    }
    for (int k = 0; k < tp; ++k) {
      std::vector<int> reals;
      for (std::uint32_t m : members) {
        const auto d = g.tasks[m].device;
        for (int r = 0; r < g.devices[d].replicas; ++r) reals.push_back(out.first_real[d] + r * tp + k);
      }
      std::sort(reals.begin(), reals.end());
      reals.erase(std::unique(reals.begin(), reals.end()), reals.end());
      const auto [it, fresh] = index.try_emplace(reals, static_cast<int>(out.groups.size()));
      if (fresh) out.groups.push_back(reals);
      out.member_of[i].push_back(it->second);
    }
  }
  return out;
}

}  // namespace hetsim::exec
