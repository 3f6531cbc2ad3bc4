#include "sim/plan/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/analytic/stage_cost.hpp"
#include "sim/plan/detail/feasibility.hpp"
#include "sim/plan/detail/mixed_partition.hpp"
#include "sim/plan/detail/search.hpp"
#include "sim/plan/detail/stage_lines.hpp"

namespace hetsim::planner {

double Candidate::score(Objective o) const {
  const double step = ranked_step_s > 0 ? ranked_step_s : step_s();
  return o == Objective::Time ? step : estimate.usd_per_million_tokens * (step / estimate.step_time.v);
}

std::vector<int> tp_choices(const Scenario& s, const hw::PoolSpec& pool) {
  std::vector<int> out;
  const auto& m = s.model;
  for (int t = 1; t <= pool.devices_per_node; ++t) {
    if (pool.devices_per_node % t || m.heads % t || m.ffn_hidden % t) continue;
    if (m.kv_heads % t && t % m.kv_heads) continue;
    out.push_back(t);
  }
  return out;
}

namespace {

using detail::GroupTime;
using detail::StageLine;
using detail::group_time;
using detail::mixed_layers;
using detail::nic_paths_ok;
using detail::partition_mixed_layers;
using detail::stage_lines;
using detail::virtual_of;

}  // namespace

bool partition_layers(const Scenario& s, plan::Plan& p, std::size_t g) {
  if (!nic_paths_ok(s, p)) return false;
  auto& grp = p.groups[g];
  const int S = static_cast<int>(grp.stages.size());
  const int v = virtual_of(p);
  const int L = s.model.layers;
  if (S * v > L) return false;
  // Provisional equal split: per-layer costs do not depend on it.
  for (int i = 0, first = 0; i < S; ++i) {
    grp.stages[i].layers = v * (L / v / S + (i < (L / v) % S ? 1 : 0));
    grp.stages[i].first_layer = first;
    first += grp.stages[i].layers;
  }
  if (L % v) return false;
  if (mixed_layers(s.model)) return partition_mixed_layers(s, p, g);
  const auto lines = stage_lines(s, p, g, analytic::stage_costs(s, p, false)[g]);
  // For stage i: time(L_i) = a_i + b_i·L_i per micro-batch; memory(L_i) = f_i + k_i·L_i.
  std::vector<double> a(S), b(S), cap_mem(S);
  for (int i = 0; i < S; ++i) {
    const StageLine& ln = lines[static_cast<std::size_t>(i)];
    a[i] = ln.a;
    b[i] = ln.b;
    const double room = ln.room - ln.f;
    cap_mem[i] = room <= 0 ? 0 : std::floor(room / ln.k / v) * v;  // in layers, a multiple of v
  }
  // Smallest bottleneck T such that the stages' capacities cover the layers: capacity of stage
  // i at T is min(memory cap, largest multiple of v with a_i + b_i·L ≤ T).
  auto cap_at = [&](int i, double T) {
    // (T − a)/b at T = a + b·l must give l back, not l − 1 through rounding: a tolerance of
    // 1e-9 layers (a one-stage plan with 4 micro-batches of 1 was dropped this way).
    const double by_time = b[i] > 0 ? std::floor((T - a[i]) / b[i] / v + 1e-9) * v : L;
    return std::max(0.0, std::min(cap_mem[i], by_time));
  };
  auto feasible = [&](double T) {
    double total = 0;
    for (int i = 0; i < S; ++i) {
      const double c = cap_at(i, T);
      if (c < v) return false;
      total += c;
    }
    return total >= L;
  };
  // The answer is the smallest feasible breakpoint a_i + b_i·l (l a multiple of v, v ≤ l ≤ L):
  // feasibility grows with T, so bisect on T, then take the smallest breakpoint above the last
  // infeasible T. O(S · 200), not O(S · L log): layer counts can be huge.
  double hi = 0, lo_t = std::numeric_limits<double>::infinity();
  for (int i = 0; i < S; ++i) {
    hi = std::max(hi, a[i] + b[i] * L);
    lo_t = std::min(lo_t, a[i] + b[i] * v);
  }
  if (!feasible(hi)) return false;
  auto breakpoint_above = [&](int i, double t) -> double {  // smallest a_i + b_i·l > t, or +inf
    if (b[i] <= 0) return a[i] + b[i] * v > t ? a[i] + b[i] * v : std::numeric_limits<double>::infinity();
    double l = std::max<double>(v, std::ceil((t - a[i]) / b[i] / v) * v);
    while (l <= L && !(a[i] + b[i] * l > t)) l += v;
    while (l - v >= v && a[i] + b[i] * (l - v) > t) l -= v;
    return l <= L ? a[i] + b[i] * l : std::numeric_limits<double>::infinity();
  };
  double T = std::numeric_limits<double>::infinity();
  if (feasible(lo_t)) {
    T = lo_t;  // the smallest breakpoint of all
  } else {
    double lo = lo_t;  // infeasible; hi feasible
    for (int it = 0; it < 200 && hi > lo; ++it) {
      const double mid = lo + (hi - lo) / 2;
      if (mid <= lo || mid >= hi) break;
      if (feasible(mid)) hi = mid;
      else lo = mid;
    }
    // Every breakpoint in (lo, hi] is a candidate; the smallest feasible one is the answer.
    std::vector<double> near;
    for (int i = 0; i < S; ++i) {
      double t = lo;
      for (int k = 0; k < 8; ++k) {  // at most one or two per stage once lo and hi are adjacent
        const double bp = breakpoint_above(i, t);
        if (!(bp <= hi)) break;
        near.push_back(bp);
        t = bp;
      }
    }
    std::sort(near.begin(), near.end());
    for (double bp : near)
      if (feasible(bp)) {
        T = bp;
        break;
      }
    if (!std::isfinite(T)) T = hi;  // rounding: hi is feasible
  }
  std::vector<int> layers(S);
  int total = 0;
  for (int i = 0; i < S; ++i) {
    layers[i] = static_cast<int>(cap_at(i, T));
    total += layers[i];
  }
  // Give back the surplus from the slowest stages first (each stays ≥ v).
  while (total > L) {
    int worst = -1;
    for (int i = 0; i < S; ++i)
      if (layers[i] > v && (worst < 0 || a[i] + b[i] * layers[i] > a[worst] + b[worst] * layers[worst])) worst = i;
    const int give = std::min(v, total - L);
    layers[worst] -= give;
    total -= give;
  }
  for (int i = 0, first = 0; i < S; ++i) {
    grp.stages[i].layers = layers[i];
    grp.stages[i].first_layer = first;
    first += layers[i];
  }
  return true;
}

bool split_batch(const Scenario& s, plan::Plan& p) {
  if (!nic_paths_ok(s, p)) return false;
  const int B = s.training.global_batch;
  if (B % p.micro_batch) return false;
  // In units of the pipeline runs (pipeline_runs): a group takes R micro-batches at a time, one
  // for each run; its time for m units is at(R·m).
  const long R = std::max(1, p.pipeline_runs);
  if ((B / p.micro_batch) % R) return false;
  const long M = B / p.micro_batch / R;
  // Data-parallel replicas of a group: its replicas are dp · cp blocks, cp to a sequence.
  auto dp = [&](std::size_t g) { return p.groups[g].replicas / std::max(1, p.cp); };
  const std::size_t G = p.groups.size();
  if (G == 1) {
    if (M % dp(0)) return false;
    p.groups[0].micro_batches = static_cast<int>(M / dp(0) * R);
    return p.groups[0].micro_batches >= 1;
  }
  const auto costs = analytic::stage_costs(s, p, false);
  std::vector<GroupTime> gt(G);
  for (std::size_t g = 0; g < G; ++g) {
    gt[g] = group_time(p, g, costs[g]);
    gt[g].cmax *= static_cast<double>(R);  // per unit of R micro-batches
  }
  // Continuous optimum: every group finishes at T*, Σ r_g·(T* − fill_g)/cmax_g = M.
  double num = static_cast<double>(M), den = 0;
  for (std::size_t g = 0; g < G; ++g) {
    num += dp(g) * gt[g].fill / gt[g].cmax;
    den += dp(g) / gt[g].cmax;
  }
  const double T = num / den;
  long used = 0;
  std::vector<long> m(G);
  for (std::size_t g = 0; g < G; ++g) {
    m[g] = std::max(1L, static_cast<long>(std::floor((T - gt[g].fill) / gt[g].cmax)));
    used += m[g] * dp(g);
  }
  // Too many: take from the group that finishes last. Too few: give to the group that would
  // finish first. A group's replicas move together.
  for (int guard = 0; used != M && guard < 100000; ++guard) {
    std::size_t pick = G;
    if (used > M) {
      for (std::size_t g = 0; g < G; ++g)
        if (m[g] > 1 && (pick == G || gt[g].at(double(m[g])) > gt[pick].at(double(m[pick])))) pick = g;
      if (pick == G) return false;
      m[pick] -= 1;
      used -= dp(pick);
    } else {
      for (std::size_t g = 0; g < G; ++g)
        if (dp(g) <= M - used &&
            (pick == G || gt[g].at(double(m[g] + 1)) < gt[pick].at(double(m[pick] + 1))))
          pick = g;
      if (pick == G) {
        // No group fits the remainder: free room from the slowest group and retry.
        std::size_t slow = G;
        for (std::size_t g = 0; g < G; ++g)
          if (m[g] > 1 && (slow == G || gt[g].at(double(m[g])) > gt[slow].at(double(m[slow])))) slow = g;
        if (slow == G) return false;
        m[slow] -= 1;
        used -= dp(slow);
        continue;
      }
      m[pick] += 1;
      used += dp(pick);
    }
  }
  if (used != M) return false;
  for (std::size_t g = 0; g < G; ++g) p.groups[g].micro_batches = static_cast<int>(m[g] * R);
  return true;
}

Result search(const Scenario& s, const Options& o) { return detail::Search(s, o).run(); }

bool spans_vendors(const hw::ClusterSpec& c, const plan::Plan& p) {
  const std::string* first = nullptr;
  for (const auto& g : p.groups)
    for (const auto& st : g.stages) {
      if (st.pool < 0 || static_cast<std::size_t>(st.pool) >= c.pools.size()) continue;
      const std::string& v = c.pools[static_cast<std::size_t>(st.pool)].device.vendor;
      if (first == nullptr) first = &v;
      else if (v != *first) return true;
    }
  return false;
}

}  // namespace hetsim::planner
