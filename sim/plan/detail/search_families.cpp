#include "sim/plan/detail/search.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

#include "sim/analytic/stage_cost.hpp"

namespace hetsim::planner::detail {
namespace {

const std::vector<int> kPipelineDepths = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64, 80, 96, 128};

}  // namespace

void Search::expert_parallel(std::vector<Candidate>& all) {
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

std::vector<Candidate> Search::single_pool(int pi) {
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
        // (Each replica's micro-batches split into the pipeline runs.)
        while (r > 1 && (M % r || (M / r) % runs_)) --r;
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

void Search::pool_local(const std::vector<std::vector<Candidate>>& alone, std::vector<Candidate>& all) {
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

void Search::mixed_pipelines(const std::vector<std::vector<Candidate>>& alone, std::vector<Candidate>& all) {
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
            if (M % R || (M / R) % runs_) continue;
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

bool Search::vendors_compatible(unsigned mask) const {
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

std::optional<Candidate> Search::uniform(std::vector<Candidate>& all) {
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
        if (R == 0 || M % R || (M / R) % runs_) continue;
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

const Search::StageRates& Search::stage_rates(int pool, int tp, const Settings& st) {
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
}  // namespace hetsim::planner::detail
