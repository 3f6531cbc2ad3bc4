#include "sim/plan/planner.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <queue>

#include "sim/analytic/stage_cost.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/engine/variability.hpp"
#include "sim/schedule/schedule.hpp"

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

int virtual_of(const plan::Plan& p) {
  return p.schedule == cost::Schedule::Interleaved ? p.virtual_stages : 1;
}

// Per-micro-batch time of every stage of group g: c_i, and the pipeline time for m
// micro-batches, T(m) = m·max c + R·(Σ c − max c)/v for R pipeline runs (docs/cost-models.md#pipeline).
struct GroupTime {
  double cmax = 0, fill = 0;
  [[nodiscard]] double at(double m) const { return m * cmax + fill; }
};

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

// Stage i of a group as partition_layers sees it, per micro-batch: time = a + b·layers; memory
// = f + k·layers, which must stay within room (the device less its reserve and fragmentation).
struct StageLine {
  double a = 0, b = 0, f = 0, k = 0, room = 0;
};

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
    const double d = std::max(1, mi.dp);
    const double per_param = mi.state.weights / (mi.zero >= 3 ? d : 1) + mi.state.grads / (mi.zero >= 2 ? d : 1) +
                             mi.state.optimizer / (mi.zero >= 1 ? d : 1);
    const double inflight = cost::in_flight_micro_batches(p.schedule, i, S, p.run_micro_batches(grp), v);
    ln.k = c.params_layer * per_param + c.act_per_layer.v * inflight;
    ln.f = (c.params_emb + c.params_head) * per_param + c.act_edge.v * inflight + mi.transient.v + mi.comm_buffers.v;
    const auto& pool = s.cluster.pools[grp.stages[static_cast<std::size_t>(i)].pool];
    ln.room = (pool.device.memory.v - mi.runtime_reserve.v) / (1.0 + mi.fragmentation);
  }
  return out;
}

// A mixture-of-experts model with dense layers (first_dense_layers, moe_layer_freq): a MoE
// layer and a dense one cost differently, so where a stage's layers fall matters.
bool mixed_layers(const workload::ModelSpec& m) {
  return m.moe() && m.moe_layers(0, m.layers) < m.layers;
}

// The layer split of such a model. Stage i holding l layers from `first`, n of them MoE layers,
// takes a_i + b_moe·n + b_dense·(l − n) per micro-batch and f_i + k_moe·n + k_dense·(l − n) of
// memory, as stage_costs prices a mixed stage (the mean of its MoE and dense layers; the two
// lines come from pricing the plan as if every layer were MoE and as if every layer were
// dense). The smallest bottleneck T is bisected; at each T the stages are filled in order, each
// taking the most layers (a multiple of v, leaving v for each later stage) that keep it within T
// and its memory. A stage's time and memory only grow with its range, so the fill finds a split
// whenever one exists within T. O(stages · log layers) per fill.
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

}  // namespace

// A plan whose traffic leaves a node from a pool without NICs (a send to another pool, replicas
// in several groups), or that puts a stage on a device without the training's number format,
// cannot run: validate_plan refuses it, the search never prices it.
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
  const long M = B / p.micro_batch;
  // Data-parallel replicas of a group: its replicas are dp · cp blocks, cp to a sequence.
  auto dp = [&](std::size_t g) { return p.groups[g].replicas / std::max(1, p.cp); };
  const std::size_t G = p.groups.size();
  if (G == 1) {
    if (M % dp(0)) return false;
    p.groups[0].micro_batches = static_cast<int>(M / dp(0));
    return p.groups[0].micro_batches >= 1;
  }
  const auto costs = analytic::stage_costs(s, p, false);
  std::vector<GroupTime> gt(G);
  for (std::size_t g = 0; g < G; ++g) gt[g] = group_time(p, g, costs[g]);
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
  for (std::size_t g = 0; g < G; ++g) p.groups[g].micro_batches = static_cast<int>(m[g]);
  return true;
}

namespace {

const std::vector<int> kPipelineDepths = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64, 80, 96, 128};

struct Settings {
  int micro_batch = 1;
  cost::Schedule schedule = cost::Schedule::OneFOneB;
  cost::Recompute recompute = cost::Recompute::None;
  int zero = 1;
  bool operator<(const Settings& o) const {
    return std::tie(micro_batch, schedule, recompute, zero) < std::tie(o.micro_batch, o.schedule, o.recompute, o.zero);
  }
};

// ZeRO stages searched: 1 (Megatron's distributed optimizer) first; 2 and 3 trade DP traffic
// for memory. 0 is never better than 1 here (same traffic, more memory).
constexpr int kZeroStages[] = {1, 2, 3};

class Search {
 public:
  Search(const Scenario& s, const Options& o) : s_(s), o_(o) {
    for (int mb : {1, 2, 4, 8})
      if (s.training.global_batch % mb == 0) micro_batches_.push_back(mb);
  }

  Result run() {
    Result r;
    const std::size_t P = s_.cluster.pools.size();
    // 1. Each pool alone: the building blocks, and baselines (b) and (c).
    std::vector<std::vector<Candidate>> alone(P);
    for (std::size_t pi = 0; pi < P && !stopped(r); ++pi) {
      alone[pi] = single_pool(static_cast<int>(pi));
      progress(0.4 * double(pi + 1) / double(P));
    }
    // 2. Heterogeneous plans. Only the best of each kind can be verified (see compact), so the
    // list is compacted as it grows: memory stays bounded however many plans are estimated.
    std::vector<Candidate> all;
    all_ = &all;
    for (auto& v : alone) all.insert(all.end(), v.begin(), v.end());
    if (P > 1 && !stopped(r)) {
      pool_local(alone, all);
      progress(0.55);
      if (!stopped(r)) mixed_pipelines(alone, all);
      progress(0.75);
    }
    if (!stopped(r)) expert_parallel(all);
    all_ = nullptr;
    std::optional<Candidate> uniform_best = stopped(r) ? std::nullopt : uniform(all);
    progress(0.8);
    // 3. Rank by the estimate, verify the best (and every baseline's best) with the engine.
    std::sort(all.begin(), all.end(), [&](const Candidate& a, const Candidate& b) { return better(a, b); });
    r.evaluated = evaluated_;
    r.pruned = pruned_;
    if (all.empty()) return r;
    std::vector<Candidate> verified;
    auto verify = [&](Candidate c) {
      // Stopped: the rest keep their closed-form estimates.
      if (!stopped(r) && simulate(c)) ++r.simulated;
      else ++r.unverified;
      verified.push_back(std::move(c));
    };
    // Verify the best estimates, at most three of each kind (family and ZeRO stage) first, so
    // that one kind the closed form flatters cannot crowd out the others.
    const std::size_t n = std::min<std::size_t>(all.size(), static_cast<std::size_t>(std::max(o_.verify, o_.top)));
    std::map<std::pair<std::string, int>, int> per_kind;
    std::vector<bool> taken(all.size(), false);
    for (std::size_t i = 0; i < all.size() && verified.size() < n; ++i)
      if (per_kind[{all[i].family, all[i].plan.zero}]++ < 3) {
        taken[i] = true;
        verify(all[i]);
      }
    for (std::size_t i = 0; i < all.size() && verified.size() < n; ++i)
      if (!taken[i]) verify(all[i]);
    // A pool's baseline: its best few estimates (one per ZeRO stage first), simulated.
    auto best_of = [&](int pool) -> std::optional<Candidate> {
      std::optional<Candidate> b;
      std::map<int, int> per_zero;
      int tried = 0;
      for (const auto& c : all) {
        if (c.family != "single pool" || c.plan.groups[0].stages[0].pool != pool) continue;
        if (per_zero[c.plan.zero]++ >= 1 && tried >= 3) continue;
        Candidate v = c;
        if (!stopped(r) && simulate(v)) ++r.simulated;
        else ++r.unverified;
        if (!b || better(v, *b)) b = v;
        if (++tried >= 5) break;
      }
      return b;
    };
    if (uniform_best) {
      if (!stopped(r) && simulate(*uniform_best)) ++r.simulated;
      else ++r.unverified;
    }
    r.baselines.push_back({"uniform Megatron over all devices", uniform_best});
    std::optional<Candidate> fastest;
    for (std::size_t pi = 0; pi < P; ++pi) {
      Baseline b{s_.cluster.pools[pi].name + " alone", best_of(static_cast<int>(pi))};
      if (b.best && (!fastest || b.best->step_s() < fastest->step_s())) fastest = b.best;
      r.baselines.push_back(std::move(b));
    }
    r.baselines.insert(r.baselines.begin() + 1, Baseline{"fastest pool alone", fastest});
    // A baseline can only win if the verified ranking missed it: keep the answer honest.
    for (const auto& b : r.baselines)
      if (b.best) verified.push_back(*b.best);
    std::stable_sort(verified.begin(), verified.end(), [&](const Candidate& a, const Candidate& b) { return better(a, b); });
    // Distinct plans only.
    for (auto& c : verified) {
      bool dup = false;
      for (const auto& t : r.top) dup = dup || same(t.plan, c.plan);
      if (!dup && static_cast<int>(r.top.size()) < o_.top) r.top.push_back(std::move(c));
    }
    r.rank_percentile = o_.rank_percentile > 0 && s_.variability ? o_.rank_percentile : 0;
    r.sampled = sampled_;
    r.unsampled = unsampled_;
    progress(1.0);
    return r;
  }

 private:
  bool better(const Candidate& a, const Candidate& b) const {
    const double sa = a.score(o_.objective), sb = b.score(o_.objective);
    if (sa != sb) return sa < sb;
    if (a.estimate.devices != b.estimate.devices) return a.estimate.devices < b.estimate.devices;  // fewer devices on a tie
    return a.order < b.order;  // then the one estimated first: a total order, so any subset ranks alike
  }

  // Keeps, of the heterogeneous candidates, the best `keep` of each kind (family and ZeRO
  // stage), and every single-pool and uniform one. Verification takes at most three of each kind
  // first and then the best overall until max(verify, top): a candidate that is not among the
  // best max(verify, top) of its own kind is never reached, so dropping it changes nothing (the
  // ranking is a total order). Baselines use single-pool candidates only.
  void compact(std::vector<Candidate>& all) const {
    const std::size_t keep = std::max<std::size_t>(3, reach());
    std::map<std::pair<std::string, int>, std::vector<std::size_t>> kinds;
    std::vector<Candidate> kept;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].family == "single pool" || all[i].family == "uniform") kept.push_back(std::move(all[i]));
      else kinds[{all[i].family, all[i].plan.zero}].push_back(i);
    }
    for (auto& [kind, idx] : kinds) {
      const std::size_t n = std::min(keep, idx.size());
      std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(),
                        [&](std::size_t a, std::size_t b) { return better(all[a], all[b]); });
      for (std::size_t k = 0; k < n; ++k) kept.push_back(std::move(all[idx[k]]));
    }
    all = std::move(kept);
  }

  static bool same(const plan::Plan& a, const plan::Plan& b) {
    if (a.micro_batch != b.micro_batch || a.schedule != b.schedule || a.recompute != b.recompute ||
        a.virtual_stages != b.virtual_stages || a.ep != b.ep || a.expert_tp != b.expert_tp ||
        a.groups.size() != b.groups.size())
      return false;
    for (std::size_t g = 0; g < a.groups.size(); ++g) {
      const auto &x = a.groups[g], &y = b.groups[g];
      if (x.replicas != y.replicas || x.micro_batches != y.micro_batches || x.stages.size() != y.stages.size())
        return false;
      for (std::size_t i = 0; i < x.stages.size(); ++i)
        if (x.stages[i].pool != y.stages[i].pool || x.stages[i].tp != y.stages[i].tp ||
            x.stages[i].layers != y.stages[i].layers)
          return false;
    }
    return true;
  }

  // Whether the caller asked the search to stop; remembered in the result.
  bool stopped(Result& r) const {
    if (o_.stop.stop_requested()) r.stopped = true;
    return r.stopped;
  }

  void progress(double f) const {
    if (o_.progress) o_.progress(f);
  }

  plan::Plan base(const Settings& st) const {
    plan::Plan p;
    // How the framework runs, as the scenario's [parallel] says (Scenario::framework): the
    // search chooses the layout, micro-batch, schedule, recompute, ZeRO, ep and expert_tp, not
    // these.
    plan::copy_framework(s_.framework, p);
    p.micro_batch = st.micro_batch;
    p.schedule = st.schedule;
    p.virtual_stages = st.schedule == cost::Schedule::Interleaved ? 2 : 1;
    p.recompute = st.recompute;
    p.zero = st.zero;
    return p;
  }

  // Mixture-of-experts models: every plan found so far again with each expert-parallel degree
  // that divides the experts and every group's replicas (fewer expert weights per device, the
  // experts' DP sync over fewer ranks, all-to-alls added; docs/cost-models.md#expert-parallelism).
  //
  // With sequence parallelism, also every folded layout (MoE parallel folding,
  // docs/cost-models.md#expert-tensor-parallelism): each power-of-two expert_tp below the
  // largest stage tp that divides every stage's tp, with each power-of-two ep whose product with
  // it divides every stage's tp × replicas (the devices its expert groups are cut from).
  void expert_parallel(std::vector<Candidate>& all) {
    if (!s_.model.moe()) return;
    const std::vector<Candidate> found = all;  // evaluate may compact `all`
    for (const auto& c : found) {
      int common_tp = 0, max_tp = 1;  // gcd and maximum of the stages' tp
      for (const auto& g : c.plan.groups)
        for (const auto& st : g.stages) {
          common_tp = std::gcd(common_tp, st.tp);
          max_tp = std::max(max_tp, st.tp);
        }
      // expert_tp 0 (the experts split like each stage's dense layers: no folding), then each
      // power of two below the widest stage's tp that divides every stage's tp.
      std::vector<int> expert_tps{0};
      if (c.plan.sequence_parallel)
        for (int et = 1; et < max_tp && common_tp % et == 0; et *= 2) expert_tps.push_back(et);
      for (const int et : expert_tps) {
        for (int ep = 2; ep <= s_.model.experts; ep *= 2) {
          if (s_.model.experts % ep != 0) continue;
          bool divides = true;
          for (const auto& g : c.plan.groups)
            for (const auto& st : g.stages)
              divides = divides && (st.tp * g.replicas) % (ep * (et > 0 ? et : st.tp)) == 0;
          if (!divides) break;
          plan::Plan p = c.plan;
          p.ep = ep;
          p.expert_tp = et;
          evaluate(std::move(p), c.family, all);
        }
      }
    }
  }

  // Estimates a complete plan; keeps it when it fits.
  bool evaluate(plan::Plan p, const std::string& family, std::vector<Candidate>& out) {
    if (!io_valid(p)) return false;
    ++evaluated_;
    Candidate c;
    c.estimate = analytic::estimate(s_, p);
    if (!c.estimate.fits) return false;
    c.plan = std::move(p);
    c.family = family;
    c.order = evaluated_;
    note_best(c);
    out.push_back(std::move(c));
    if (&out == all_ && out.size() >= compact_at_) {
      compact(out);
      compact_at_ = std::max(o_.compact_at, 2 * out.size());
    }
    return true;
  }

  // The invariants validate_plan checks, cheaply (the search only builds valid shapes).
  bool io_valid(const plan::Plan& p) const {
    if (!nic_paths_ok(s_, p)) return false;
    std::vector<int> used(s_.cluster.pools.size(), 0);
    for (const auto& g : p.groups) {
      int covered = 0;
      for (const auto& st : g.stages) {
        used[st.pool] += g.replicas * st.tp;
        covered += st.layers;
        if (st.layers < 1) return false;
      }
      if (covered != s_.model.layers || g.micro_batches < 1) return false;
      if (g.micro_batches % p.pipeline_runs) return false;
      if (p.schedule == cost::Schedule::Interleaved && p.run_micro_batches(g) % static_cast<int>(g.stages.size()))
        return false;
    }
    for (std::size_t pi = 0; pi < used.size(); ++pi)
      if (used[pi] > s_.cluster.pools[pi].devices()) return false;
    return p.sequences_per_step() == s_.training.global_batch;
  }

  std::vector<Settings> settings() const {
    std::vector<Settings> out;
    for (int mb : micro_batches_)
      for (auto sch : {cost::Schedule::OneFOneB, cost::Schedule::Interleaved})
        for (int z : kZeroStages)
          for (auto rc : {cost::Recompute::None, cost::Recompute::Selective, cost::Recompute::Full})
            out.push_back({mb, sch, rc, z});
    return out;
  }

  // Every (tp, pipeline depth, replicas, settings) of one pool, layers split by partition_layers.
  std::vector<Candidate> single_pool(int pi) {
    std::vector<Candidate> out;
    const auto& pool = s_.cluster.pools[pi];
    const int L = s_.model.layers;
    for (int tp : tp_choices(s_, pool))
      for (int pp : kPipelineDepths) {
        if (pp > L || pp * tp > pool.devices()) continue;
        const int rmax = pool.devices() / (tp * pp);
        std::map<std::tuple<int, cost::Schedule, int>, bool> fitted;  // recompute only adds time
        for (const Settings& st : settings()) {
          if (st.schedule == cost::Schedule::Interleaved && (pp == 1 || L < 2 * pp)) continue;
          if (st.zero > 1 && rmax == 1) continue;  // nothing to shard without data parallelism
          auto& done = fitted[{st.micro_batch, st.schedule, st.zero}];
          if (done) continue;
          const long M = s_.training.global_batch / st.micro_batch;
          int r = rmax;
          while (r > 1 && M % r) --r;
          plan::Plan p = base(st);
          plan::ReplicaGroup g;
          g.replicas = r;
          g.micro_batches = static_cast<int>(M / r);
          g.stages.assign(pp, plan::Stage{pi, tp, 0, 0});
          p.groups.push_back(g);
          if (!partition_layers(s_, p, 0)) continue;
          done = evaluate(std::move(p), "single pool", out);
        }
      }
    std::sort(out.begin(), out.end(), [&](const Candidate& a, const Candidate& b) { return better(a, b); });
    return out;
  }

  // Each pool runs its own replicas (its best few configurations); the batch is split unevenly
  // so the groups finish together.
  void pool_local(const std::vector<std::vector<Candidate>>& alone, std::vector<Candidate>& all) {
    const std::size_t P = alone.size();
    constexpr std::size_t kPerPool = 3;
    for (unsigned mask = 1; mask < (1u << P); ++mask) {
      if (std::popcount(mask) < 2 || !vendors_compatible(mask)) continue;
      // Configurations per pool, by shared settings.
      std::map<Settings, std::vector<std::vector<const Candidate*>>> by;
      for (std::size_t pi = 0; pi < P; ++pi) {
        if (!(mask & (1u << pi))) continue;
        for (const auto& c : alone[pi]) {
          const Settings key{c.plan.micro_batch, c.plan.schedule, c.plan.recompute, c.plan.zero};
          auto& lists = by[key];
          lists.resize(P);
          if (lists[pi].size() < kPerPool) lists[pi].push_back(&c);
        }
      }
      for (auto& [key, lists] : by) {
        std::vector<std::size_t> pools;
        for (std::size_t pi = 0; pi < P; ++pi)
          if (mask & (1u << pi)) pools.push_back(pi);
        bool complete = true;
        for (auto pi : pools) complete = complete && !lists[pi].empty();
        if (!complete) continue;
        std::vector<std::size_t> idx(pools.size(), 0);
        while (true) {
          plan::Plan p = base(key);
          for (std::size_t k = 0; k < pools.size(); ++k) p.groups.push_back(lists[pools[k]][idx[k]]->plan.groups[0]);
          if (split_batch(s_, p)) {
            bool ok = true;
            for (std::size_t g = 0; g < p.groups.size() && ok; ++g) ok = partition_layers(s_, p, g);
            if (ok) evaluate(std::move(p), "pool-local replicas", all);
          }
          std::size_t k = 0;
          while (k < pools.size() && ++idx[k] == lists[pools[k]].size()) idx[k++] = 0;
          if (k == pools.size()) break;
        }
      }
    }
  }

  // Every replica's pipeline spans several pools (in each order); the layer split follows the
  // stages' speeds and memories.
  void mixed_pipelines(const std::vector<std::vector<Candidate>>& alone, std::vector<Candidate>& all) {
    const std::size_t P = alone.size();
    const int L = s_.model.layers;
    for (unsigned mask = 1; mask < (1u << P); ++mask) {
      if (std::popcount(mask) < 2 || !vendors_compatible(mask)) continue;
      std::vector<int> pools;
      for (std::size_t pi = 0; pi < P; ++pi)
        if (mask & (1u << pi)) pools.push_back(static_cast<int>(pi));
      // TP per pool: what the pool chose alone (its best plan) and its largest; every
      // combination over the pools.
      std::vector<std::vector<int>> tp_opts;
      for (int pi : pools) {
        std::vector<int> t;
        if (!alone[pi].empty()) t.push_back(alone[pi][0].plan.groups[0].stages[0].tp);
        if (auto all_tp = tp_choices(s_, s_.cluster.pools[pi]); !all_tp.empty() &&
            std::find(t.begin(), t.end(), all_tp.back()) == t.end())
          t.push_back(all_tp.back());
        tp_opts.push_back(t);
      }
      bool any = true;
      for (const auto& t : tp_opts) any = any && !t.empty();
      if (!any) continue;
      std::vector<std::size_t> ti(pools.size(), 0);
      while (true) {
      std::map<int, int> tp;
      for (std::size_t k = 0; k < pools.size(); ++k) tp[pools[k]] = tp_opts[k][ti[k]];
      std::vector<int> order = pools;
      do {
        for (int mb : micro_batches_) {
          const long M = s_.training.global_batch / mb;
          for (long R = 1; R <= M; ++R) {
            if (M % R) continue;
            // Stages per pool: fill the pool, or half of that.
            std::vector<std::vector<int>> depth_opts;
            bool fits = true;
            for (int pi : order) {
              const int full = s_.cluster.pools[pi].devices() / (static_cast<int>(R) * tp[pi]);
              if (full < 1) { fits = false; break; }
              std::vector<int> d{std::min(full, L)};
              if (full / 2 >= 1 && full / 2 != d[0]) d.push_back(full / 2);
              depth_opts.push_back(d);
            }
            if (!fits) continue;
            std::vector<std::size_t> di(order.size(), 0);
            while (true) {
              int stages = 0;
              for (std::size_t k = 0; k < order.size(); ++k) stages += depth_opts[k][di[k]];
              // A lower bound on the step of every plan of this shape (docs/planner.md#pruning):
              // with c_i the per-micro-batch time of stage i, a_i its embedding or head and b_i
              // one layer's compute and exposed TP time there (recompute none: the least), the
              // pipeline takes (m − 1)·max c + Σ c. No layer split gets max c below the
              // continuous optimum T* = (L + Σ a_i/b_i) / Σ 1/b_i, and Σ c ≥ Σ a_i + Σ b_i +
              // (L − S)·min b (a layer on every stage). At or above the worst estimate its kind
              // keeps for verification, no plan of this shape can be verified: skip them all
              // unestimated (the search's answer does not change; tests/sim/planner_test.cpp).
              double bound = 0;
              if (stages <= L && o_.prune && o_.objective == Objective::Time) {
                const Settings least{mb, cost::Schedule::OneFOneB, cost::Recompute::None, 1};
                double inv = 0, sum_b = 0, min_b = std::numeric_limits<double>::infinity();
                for (std::size_t k = 0; k < order.size(); ++k) {
                  const StageRates& r = stage_rates(order[k], tp[order[k]], least);
                  const int d = depth_opts[k][di[k]];
                  inv += d / r.layer;
                  sum_b += d * r.layer;
                  min_b = std::min(min_b, r.layer);
                }
                const StageRates& first = stage_rates(order.front(), tp[order.front()], least);
                const StageRates& last = stage_rates(order.back(), tp[order.back()], least);
                const double t_star = (L + first.emb / first.layer + last.head / last.layer) / inv;
                bound = static_cast<double>(M / R - 1) * t_star + first.emb + last.head + sum_b + (L - stages) * min_b;
              }
              if (stages <= L) {
                for (int z : {1, 2})  // ZeRO 3's per-micro-batch gathers do not pay in a pipeline
                for (auto rc : {cost::Recompute::None, cost::Recompute::Selective, cost::Recompute::Full}) {
                  if (out_of_reach("mixed pipeline", z, bound)) {
                    ++pruned_;
                    break;
                  }
                  plan::Plan p = base({mb, cost::Schedule::OneFOneB, rc, z});
                  plan::ReplicaGroup g;
                  g.replicas = static_cast<int>(R);
                  g.micro_batches = static_cast<int>(M / R);
                  for (std::size_t k = 0; k < order.size(); ++k)
                    for (int d = 0; d < depth_opts[k][di[k]]; ++d) g.stages.push_back({order[k], tp[order[k]], 0, 0});
                  p.groups.push_back(std::move(g));
                  if (partition_layers(s_, p, 0) && evaluate(std::move(p), "mixed pipeline", all)) break;
                }
              }
              std::size_t k = 0;
              while (k < order.size() && ++di[k] == depth_opts[k].size()) di[k++] = 0;
              if (k == order.size()) break;
            }
          }
        }
      } while (std::next_permutation(order.begin(), order.end()));
      std::size_t k = 0;
      while (k < pools.size() && ++ti[k] == tp_opts[k].size()) ti[k++] = 0;
      if (k == pools.size()) break;
      }
    }
  }

  // Baseline (a): one tp and pp for every pool, equal layers per stage, equal micro-batches per
  // replica, as a homogeneous framework would run the cluster.
  // With Options::same_vendor, a combination of pools must share one vendor.
  bool vendors_compatible(unsigned mask) const {
    if (!o_.same_vendor) return true;
    std::string vendor;
    for (std::size_t pi = 0; pi < s_.cluster.pools.size(); ++pi) {
      if (!(mask & (1u << pi))) continue;
      const std::string& v = s_.cluster.pools[pi].device.vendor;
      if (vendor.empty()) vendor = v;
      else if (v != vendor) return false;
    }
    return true;
  }

  std::optional<Candidate> uniform(std::vector<Candidate>& all) {
    if (!vendors_compatible((1u << s_.cluster.pools.size()) - 1)) return std::nullopt;
    std::vector<Candidate> found;
    const int L = s_.model.layers;
    std::vector<int> tps = tp_choices(s_, s_.cluster.pools[0]);
    for (const auto& pool : s_.cluster.pools) {
      const auto t = tp_choices(s_, pool);
      std::vector<int> both;
      std::set_intersection(tps.begin(), tps.end(), t.begin(), t.end(), std::back_inserter(both));
      tps = both;
    }
    for (int tp : tps)
      for (int pp = 1; pp <= L; ++pp) {
        if (L % pp) continue;
        for (int mb : micro_batches_) {
          const long M = s_.training.global_batch / mb;
          int R = 0;
          for (const auto& pool : s_.cluster.pools) R += pool.devices() / (tp * pp);
          if (R == 0 || M % R) continue;
          for (auto rc : {cost::Recompute::None, cost::Recompute::Selective, cost::Recompute::Full}) {
            plan::Plan p = base({mb, cost::Schedule::OneFOneB, rc});
            for (std::size_t pi = 0; pi < s_.cluster.pools.size(); ++pi) {
              const int r = s_.cluster.pools[pi].devices() / (tp * pp);
              if (r == 0) continue;
              plan::ReplicaGroup g;
              g.replicas = r;
              g.micro_batches = static_cast<int>(M / R);
              for (int k = 0; k < pp; ++k) g.stages.push_back({static_cast<int>(pi), tp, k * (L / pp), L / pp});
              p.groups.push_back(std::move(g));
            }
            if (evaluate(std::move(p), "uniform", found)) break;
          }
        }
      }
    if (found.empty()) return std::nullopt;
    std::sort(found.begin(), found.end(), [&](const Candidate& a, const Candidate& b) { return better(a, b); });
    all.insert(all.end(), found.begin(), found.begin() + std::min<std::size_t>(found.size(), 3));
    return found.front();
  }

  // Verifies c by the engine within the task bounds; false (c keeps its estimate) when it is
  // too large.
  bool simulate(Candidate& c) {
    const double n = schedule::estimated_tasks(s_, c.plan);
    if (n > o_.max_verify_tasks || tasks_simulated_ + n > o_.verify_task_budget) return false;
    tasks_simulated_ += n;
    const auto g = schedule::build_schedule(s_, c.plan);
    auto t = engine::run_native(g);
    if (t) c.simulated_step_s = static_cast<double>(t->makespan) * 1e-9;
    if (t && o_.rank_percentile > 0 && s_.variability) sample(c, g, t->makespan, n);
    return true;
  }

  // Ranks c by the percentile of its sampled steps, within the sampling budget.
  void sample(Candidate& c, const schedule::TaskGraph& g, engine::SimTime nominal, double tasks) {
    const VariabilitySpec& v = *s_.variability;
    const double cost = tasks * v.steps;
    if (tasks_sampled_ + cost > o_.sample_task_budget) {
      ++unsampled_;
      return;
    }
    tasks_sampled_ += cost;
    auto d = engine::sample_steps(g, v, nominal);
    if (!d) return;
    std::vector<double> sorted = d->steps_s;
    std::sort(sorted.begin(), sorted.end());
    c.ranked_step_s = engine::percentile(sorted, o_.rank_percentile);
    ++sampled_;
  }

  // The best max(verify, top) scores of each kind (family, ZeRO stage) estimated so far, as a
  // max-heap: a candidate whose score is provably above the worst of them is never verified
  // (see compact) and need not be estimated.
  void note_best(const Candidate& c) {
    auto& h = best_[{c.family, c.plan.zero}];
    const double sc = c.score(o_.objective);
    if (h.size() < reach()) h.push(sc);
    else if (sc < h.top()) {
      h.pop();
      h.push(sc);
    }
  }
  // Whether every plan of this kind whose step time is at least `bound` is out of reach (a bound
  // of 0, none computed, never is).
  bool out_of_reach(const std::string& family, int zero, double bound) const {
    auto it = best_.find({family, zero});
    // A relative margin: the bound is summed in another order than the estimate, and a plan
    // whose estimate ties the worst kept score must not be lost to the last bit.
    return it != best_.end() && it->second.size() >= reach() && bound * (1 - 1e-12) > it->second.top();
  }
  // How many candidates verification takes: max(verify, top), at least 1.
  std::size_t reach() const { return static_cast<std::size_t>(std::max({1, o_.verify, o_.top})); }
  // What a stage of `pool` at `tp` pays per micro-batch (micro-batch and recompute of `st`),
  // whatever else the plan holds: per layer (compute and exposed TP collectives), and for the
  // embedding and the head when it holds them. Cached.
  struct StageRates {
    double layer = 0, emb = 0, head = 0;
  };
  const StageRates& stage_rates(int pool, int tp, const Settings& st) {
    const auto key = std::make_tuple(pool, tp, st.micro_batch, static_cast<int>(st.recompute));
    if (auto it = rates_.find(key); it != rates_.end()) return it->second;
    if (!s_.cluster.pools[static_cast<std::size_t>(pool)].device.peak_for(s_.training.precision)) {
      // No stage can run there (nic_paths_ok refuses it): an unbounded rate.
      const double inf = std::numeric_limits<double>::infinity();
      return rates_[key] = StageRates{inf, 0, 0};
    }
    plan::Plan p = base({st.micro_batch, cost::Schedule::OneFOneB, st.recompute, 1});
    p.groups.push_back({1, 1, {{pool, tp, 0, s_.model.layers}}});
    const auto costs = analytic::stage_costs(s_, p, false);
    const auto& c = costs[0][0];
    StageRates r;
    r.layer = (c.layer_fwd + c.layer_bwd + c.layer_recompute + c.layer_tp_fwd + c.layer_tp_bwd + c.layer_tp_recompute +
               c.layer_ep_fwd + c.layer_ep_bwd + c.layer_ep_recompute).v;
    r.emb = (c.emb_fwd + c.emb_bwd + c.emb_tp).v;
    r.head = (c.head_fwd + c.head_bwd + c.head_tp).v;
    return rates_[key] = r;
  }

  const Scenario& s_;
  const Options& o_;
  std::vector<int> micro_batches_;
  std::map<std::pair<std::string, int>, std::priority_queue<double>> best_;
  std::map<std::tuple<int, int, int, int>, StageRates> rates_;
  std::size_t pruned_ = 0;
  std::size_t evaluated_ = 0;
  double tasks_simulated_ = 0;
  double tasks_sampled_ = 0;
  std::size_t sampled_ = 0, unsampled_ = 0;
  std::vector<Candidate>* all_ = nullptr;  ///< the list compact() bounds, while it grows
  std::size_t compact_at_ = o_.compact_at;
};

}  // namespace

Result search(const Scenario& s, const Options& o) { return Search(s, o).run(); }

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
