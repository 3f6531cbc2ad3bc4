#include "sim/analytic/detail/placement.hpp"

#include <algorithm>
#include <utility>

namespace hetsim::analytic::detail {

std::vector<std::vector<int>> block_starts(const hw::ClusterSpec& cl, const plan::Plan& p) {
  hw::BlockPlacer placer(cl);
  std::vector<std::vector<int>> out;
  for (const auto& grp : p.groups) {
    out.emplace_back();
    for (const auto& st : grp.stages) out.back().push_back(placer.place(st.pool, st.tp, st.tp * grp.replicas));
  }
  return out;
}

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

}  // namespace hetsim::analytic::detail
