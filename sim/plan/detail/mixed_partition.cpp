#include "sim/plan/detail/mixed_partition.hpp"

#include <algorithm>
#include <vector>

#include "sim/analytic/stage_cost.hpp"
#include "sim/plan/detail/stage_lines.hpp"

namespace hetsim::planner::detail {

bool mixed_layers(const workload::ModelSpec& m) {
  return m.moe() && m.moe_layers(0, m.layers) < m.layers;
}

bool partition_mixed_layers(const Scenario& s, plan::Plan& p, std::size_t g) {
  const workload::ModelSpec& m = s.model;
  auto& grp = p.groups[g];
  const int S = static_cast<int>(grp.stages.size());
  const int v = virtual_of(p);
  const int L = m.layers;
  Scenario all_moe = s;
  all_moe.model.first_dense_layers = 0;
  all_moe.model.moe_layer_freq = 1;
  Scenario all_dense = s;
  all_dense.model = workload::dense_layer_model(m);
  plan::Plan dense_plan = p;
  dense_plan.ep = 1;  // no experts to spread
  const auto moe = stage_lines(s, p, g, analytic::stage_costs(all_moe, p, false)[g]);
  const auto dense = stage_lines(s, dense_plan, g, analytic::stage_costs(all_dense, dense_plan, false)[g]);
  auto within = [&](int i, int first, int l, double T) {
    const auto& lm = moe[static_cast<std::size_t>(i)];
    const auto& ld = dense[static_cast<std::size_t>(i)];
    const double n = m.moe_layers(first, l), rest = l - n;
    return lm.a + lm.b * n + ld.b * rest <= T && lm.f + lm.k * n + ld.k * rest <= lm.room;
  };
  auto fill = [&](double T, std::vector<int>* layers) {
    int first = 0;
    for (int i = 0; i < S; ++i) {
      const int most = L - first - (S - 1 - i) * v;  // v layers left for each later stage
      if (most < v) return false;
      int l = most;
      if (i + 1 < S) {
        if (!within(i, first, v, T)) return false;
        int lo = 1, hi = most / v;  // in chunks of v: lo fits, the answer is in [lo, hi]
        while (lo < hi) {
          const int mid = lo + (hi - lo + 1) / 2;
          if (within(i, first, mid * v, T)) lo = mid;
          else hi = mid - 1;
        }
        l = lo * v;
      } else if (!within(i, first, l, T)) {
        return false;
      }
      if (layers) layers->push_back(l);
      first += l;
    }
    return true;
  };
  double hi = 0;
  for (int i = 0; i < S; ++i)
    hi = std::max(hi, moe[static_cast<std::size_t>(i)].a +
                          std::max(moe[static_cast<std::size_t>(i)].b, dense[static_cast<std::size_t>(i)].b) * L);
  if (!fill(hi, nullptr)) return false;  // memory: no split fits
  double lo = 0;
  for (int it = 0; it < 200; ++it) {
    const double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    if (fill(mid, nullptr)) hi = mid;
    else lo = mid;
  }
  std::vector<int> layers;
  if (!fill(hi, &layers)) return false;
  for (int i = 0, first = 0; i < S; ++i) {
    grp.stages[static_cast<std::size_t>(i)].layers = layers[static_cast<std::size_t>(i)];
    grp.stages[static_cast<std::size_t>(i)].first_layer = first;
    first += layers[static_cast<std::size_t>(i)];
  }
  return true;
}

}  // namespace hetsim::planner::detail
