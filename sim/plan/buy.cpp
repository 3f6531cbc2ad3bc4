#include "sim/plan/buy.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <map>

#include "models/cost/memory.hpp"
#include "models/workload/model_spec.hpp"

namespace hetsim::buy {
namespace {

constexpr double kHoursPerYear = 365.25 * 24;

// Matmul FLOPs per token of forward + backward (6 per weight): the layers' projections (the
// experts a token visits) and the output head. Attention scores, norms and element-wise work
// only add to it, so the bound stays below any plan's time.
double matmul_flops_per_token(const workload::ModelSpec& m) {
  const double h = m.hidden;
  const double kv = static_cast<double>(m.kv_heads) * m.head_dim();
  const double mats = m.activation == workload::Activation::SwiGlu ? 3 : 2;
  const double per_layer = 2 * h * h + 2 * h * kv + (m.moe() ? m.top_k : 1) * mats * h * m.ffn_hidden;
  return 6.0 * (m.layers * per_layer + static_cast<double>(m.vocab) * h);
}

struct Island {
  double peak = 0;    ///< the cost model's best GEMM FLOP/s in the training's format
  double memory = 0;  ///< bytes
};

// Groups of devices that may train together: all of them, or one vendor's each.
std::vector<Island> islands(const hw::ClusterSpec& c, hw::Dtype dt, bool same_vendor) {
  std::map<std::string, Island> by;
  for (const auto& p : c.pools) {
    const auto peak = p.device.peak_for(dt);
    if (!peak || p.devices() == 0) continue;
    Island& i = by[same_vendor ? p.device.vendor : std::string()];
    // No op of the cost model runs faster than peak × the catalogue's GEMM efficiency (the
    // tile model's main loop is that rate; tiles and launches only slow it). In fp8, GEMMs kept
    // in 16 bits run at the 16-bit peak (≤ the fp8 one) × gemm: the larger fraction bounds both.
    const auto& e = p.device.efficiency;
    i.peak += peak->v * std::max(e.gemm, e.main_loop(dt)) * p.devices();
    i.memory += p.device.memory.v * p.devices();
  }
  std::vector<Island> out;
  for (auto& [k, v] : by) out.push_back(v);
  return out;
}

double hourly_amortisation(const hw::PoolSpec& p, const CostSpec& c) {
  return p.devices() * p.device.purchase_usd / (c.amortisation_years * kHoursPerYear);
}

bool dominates(double t1, double c1, double t2, double c2) { return t1 <= t2 && c1 <= c2 && (t1 < t2 || c1 < c2); }

// What the bought devices cost: their capex (own) or their rent per hour (rent), with candidate
// `scaled`'s price times `factor` (-1: none scaled).
struct Bought {
  double capex = 0, rent_per_h = 0;
};
Bought bought_cost(const PurchaseSpec& ps, bool rent, const std::vector<int>& nodes, int scaled = -1, double factor = 1) {
  Bought b;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const auto& pool = ps.candidates[k].pool;
    const double devices = static_cast<double>(nodes[k]) * pool.devices_per_node;
    const double f = static_cast<int>(k) == scaled ? factor : 1.0;
    if (rent) b.rent_per_h += devices * pool.device.price_usd_per_hour * f;
    else b.capex += devices * pool.device.purchase_usd * f;
  }
  return b;
}

// What the run costs over `hours`: the power paid for, the rent, the owned devices' amortisation.
double run_cost(double hours, double kw_powered, double usd_per_kwh, double rent_per_h, double amort_owned_per_h) {
  return hours * (kw_powered * usd_per_kwh + rent_per_h + amort_owned_per_h);
}

struct Choice {
  double time = 0, cost = 0;  ///< time until trained (lead + effective), total cost
  bool meets = true;
};

// The recommendation among front points: the fastest (time); the cheapest (cost); for the
// front, the cheapest that meets the deadline, or without one the knee (least cost × time).
// Cost and the front keep to the deadline where any point meets it.
std::size_t recommend(const std::vector<Choice>& f, const PurchaseSpec& ps) {
  const bool any_meets = std::any_of(f.begin(), f.end(), [](const Choice& c) { return c.meets; });
  double best = std::numeric_limits<double>::infinity();
  std::size_t at = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (any_meets && !f[i].meets && ps.objective != PurchaseSpec::Objective::Time) continue;
    double v = f[i].time;
    if (ps.objective == PurchaseSpec::Objective::Cost) v = f[i].cost;
    if (ps.objective == PurchaseSpec::Objective::Pareto)
      v = ps.deadline_days > 0 && any_meets ? f[i].cost : f[i].cost * f[i].time;
    if (v < best) {
      best = v;
      at = i;
    }
  }
  return at;
}

// Prices every planned point again with one price scaled, keeps the points within the budget,
// takes their front and its recommendation. Over the planned compositions only: one pruned under
// the real prices is not planned again.
std::vector<int> recommendation_under(const Scenario& s, const Result& r, int candidate, double price_factor,
                                      double electricity_factor) {
  const PurchaseSpec& ps = *s.purchase;
  const bool rent = s.cost.mode == CostSpec::Mode::Rent;
  struct P {
    Choice c;
    const std::vector<int>* nodes;
  };
  std::vector<P> all;
  for (const auto& q : r.planned_points) {
    const Bought b = bought_cost(ps, rent, q.nodes, candidate, price_factor);
    const double total = b.capex + run_cost(q.time_s / 3600.0, q.kw_powered,
                                            s.cost.electricity_usd_per_kwh * electricity_factor, b.rent_per_h,
                                            q.amort_owned_per_h);
    if (ps.budget_usd > 0 && (rent ? total : b.capex) > ps.budget_usd) continue;
    all.push_back({{q.lead_s + q.time_s, total, q.meets_deadline}, &q.nodes});
  }
  std::vector<P> front;
  for (const auto& a : all)
    if (std::none_of(all.begin(), all.end(), [&](const P& b) { return dominates(b.c.time, b.c.cost, a.c.time, a.c.cost); }))
      front.push_back(a);
  if (front.empty()) return {};
  std::sort(front.begin(), front.end(), [](const P& a, const P& b) { return a.c.time < b.c.time; });
  std::vector<Choice> f;
  for (const auto& p : front) f.push_back(p.c);
  return *front[recommend(f, ps)].nodes;
}

std::vector<Sensitivity> sensitivity(const Scenario& s, const Result& r) {
  std::vector<Sensitivity> out;
  if (r.front.empty()) return out;
  const std::vector<int>& now = r.front[r.recommended].nodes;
  const PurchaseSpec& ps = *s.purchase;
  for (std::size_t k = 0; k < ps.candidates.size(); ++k)
    for (double f : {0.8, 1.2}) {
      Sensitivity x{ps.candidates[k].pool.name + " price", f, false, recommendation_under(s, r, static_cast<int>(k), f, 1.0)};
      x.changes = x.nodes != now;
      out.push_back(std::move(x));
    }
  for (double f : {0.5, 1.5}) {
    Sensitivity x{"electricity", f, false, recommendation_under(s, r, -1, 1.0, f)};
    x.changes = x.nodes != now;
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

double lead_time_s(const PurchaseSpec& ps, const std::vector<int>& nodes) {
  double days = 0;
  for (std::size_t k = 0; k < nodes.size() && k < ps.candidates.size(); ++k)
    if (nodes[k] > 0) days = std::max(days, ps.candidates[k].lead_time_days);
  return days * 86400.0;
}

double composition_count(const PurchaseSpec& ps) {
  double n = 1;
  for (const auto& c : ps.candidates) n *= c.max_nodes / c.node_step + 1;
  return n;
}

double time_lower_bound_s(const Scenario& s, bool same_vendor) {
  double peak = 0;
  for (const auto& i : islands(s.cluster, s.training.precision, same_vendor)) peak = std::max(peak, i.peak);
  if (peak <= 0) return std::numeric_limits<double>::infinity();
  return s.training.tokens * matmul_flops_per_token(s.model) / peak;
}

// Fastest first; equal times, cheapest first.
void sort_front(std::vector<Point>& front) {
  std::sort(front.begin(), front.end(), [](const Point& a, const Point& b) {
    return a.trained_in_s < b.trained_in_s || (a.trained_in_s == b.trained_in_s && a.total_usd < b.total_usd);
  });
}

Result search(const Scenario& s, const Options& o) {
  const auto began = std::chrono::steady_clock::now();
  Result r;
  const PurchaseSpec& ps = *s.purchase;
  const bool rent = s.cost.mode == CostSpec::Mode::Rent;
  const std::size_t K = ps.candidates.size();
  const std::size_t owned = s.cluster.pools.size();

  // Every composition: 0, step, 2·step, … ≤ max_nodes nodes of each candidate.
  std::vector<std::vector<int>> all;
  {
    if (composition_count(ps) > static_cast<double>(o.max_compositions)) return r;  // sim/api refuses it first
    const auto n = static_cast<std::size_t>(composition_count(ps));
    std::vector<int> cur(K, 0);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t rest = i;
      for (std::size_t k = 0; k < K; ++k) {
        const std::size_t choices = static_cast<std::size_t>(ps.candidates[k].max_nodes / ps.candidates[k].node_step + 1);
        cur[k] = static_cast<int>(rest % choices) * ps.candidates[k].node_step;
        rest /= choices;
      }
      const bool buys = std::any_of(cur.begin(), cur.end(), [](int x) { return x > 0; });
      if (buys || owned > 0) all.push_back(cur);
    }
  }
  r.compositions = all.size();

  struct Screened {
    std::vector<int> nodes;
    Scenario scenario;
    double t_lb = 0, c_lb = 0, capex = 0, rent_per_h = 0, amort_owned_per_h = 0, power_kw = 0;
    double lead = 0;  ///< lead time, s: the time axis bound is lead + t_lb
  };
  const cost::StateBytes sb = cost::state_bytes(s.training.precision, s.training.optimizer, s.training.autocast);
  const double state = workload::count_params(s.model).total(s.model.layers) *
                       (sb.weights + s.memory.gradient_bytes + sb.optimizer);
  double amort_owned_per_h = 0, owned_kw = 0;
  for (const auto& p : s.cluster.pools) {
    amort_owned_per_h += hourly_amortisation(p, s.cost);
    owned_kw += p.devices() * p.device.tdp.v * s.cost.pue / 1000.0;
  }
  std::vector<Screened> todo, refused;  // refused: by the budget or the power limit alone
  auto big_enough = [&](const Screened& c) {
    double memory = 0;
    for (const auto& i : islands(c.scenario.cluster, s.training.precision, o.same_vendor)) memory = std::max(memory, i.memory);
    return std::isfinite(c.t_lb) && memory >= state;
  };
  for (const auto& nodes : all) {
    Screened c;
    c.nodes = nodes;
    c.scenario = s;
    c.scenario.purchase.reset();
    c.scenario.plan.reset();
    c.power_kw = owned_kw;
    for (std::size_t k = 0; k < K; ++k) {
      if (nodes[k] == 0) continue;
      hw::PoolSpec pool = ps.candidates[k].pool;
      pool.nodes = nodes[k];
      c.power_kw += pool.devices() * pool.device.tdp.v * s.cost.pue / 1000.0;
      c.scenario.cluster.pools.push_back(std::move(pool));
    }
    const Bought b = bought_cost(ps, rent, nodes);
    c.capex = b.capex;
    c.rent_per_h = b.rent_per_h;
    c.amort_owned_per_h = amort_owned_per_h;
    c.t_lb = time_lower_bound_s(c.scenario, o.same_vendor);
    c.lead = lead_time_s(ps, nodes);
    c.c_lb = c.capex + (std::isfinite(c.t_lb) ? run_cost(c.t_lb / 3600.0, 0, 0, c.rent_per_h, c.amort_owned_per_h) : 0);
    if (ps.power_kw > 0 && c.power_kw > ps.power_kw) {
      ++r.over_power;
      if (big_enough(c)) refused.push_back(std::move(c));
      continue;
    }
    // The budget: the capex when buying; the rent over the run (at least the lower bound's)
    // when renting.
    if (ps.budget_usd > 0 && (rent ? c.c_lb : c.capex) > ps.budget_usd) {
      ++r.over_budget;
      if (big_enough(c)) refused.push_back(std::move(c));
      continue;
    }
    if (!big_enough(c)) {
      ++r.too_small;
      continue;
    }
    todo.push_back(std::move(c));
  }
  // Fastest bounds first: the points found early prune the slower compositions.
  // Among equal bounds (a composition that adds another vendor's devices to the same island)
  // the cheaper first, so that it prunes the dearer.
  std::stable_sort(todo.begin(), todo.end(), [](const Screened& a, const Screened& b) {
    return a.lead + a.t_lb < b.lead + b.t_lb || (a.lead + a.t_lb == b.lead + b.t_lb && a.c_lb < b.c_lb);
  });

  planner::Options po;
  po.top = 1;
  po.verify = o.verify;
  po.same_vendor = o.same_vendor;
  po.stop = o.stop;
  auto make_point = [&](Screened& c, planner::Candidate best, Priced& priced) {
    Point p;
    p.nodes = c.nodes;
    p.best = std::move(best);
    const analytic::Estimate& e = p.best.estimate;
    // The verified step when the engine ran: the estimate's figures scale with it.
    const double scale = p.best.verified() ? p.best.simulated_step_s / e.step_time.v : 1.0;
    p.effective_time_s = e.time_to_train.v * scale / e.goodput.fraction;
    p.lead_time_s = c.lead;
    p.trained_in_s = c.lead + p.effective_time_s;
    const double hours = p.effective_time_s / 3600.0;
    double kw_used = 0, kw_rented = 0;
    for (std::size_t pi = 0; pi < e.device_types.size(); ++pi) {
      const double kw = e.device_types[pi].count * c.scenario.cluster.pools[pi].device.tdp.v * s.cost.pue / 1000.0;
      kw_used += kw;
      if (pi >= owned && rent) kw_rented += kw;  // rent includes the power
      if (pi < owned) p.idle_owned_devices += e.device_types[pi].idle;
    }
    p.capex_usd = c.capex;
    p.run_usd = run_cost(hours, kw_used - kw_rented, s.cost.electricity_usd_per_kwh, c.rent_per_h, c.amort_owned_per_h);
    priced.nodes = c.nodes;
    priced.time_s = p.effective_time_s;
    priced.lead_s = p.lead_time_s;
    priced.kw_powered = kw_used - kw_rented;
    priced.amort_owned_per_h = c.amort_owned_per_h;
    p.total_usd = p.capex_usd + p.run_usd;
    p.power_kw = c.power_kw;
    p.usd_per_million_tokens = p.total_usd / s.training.tokens * 1e6;
    p.meets_deadline = ps.deadline_days <= 0 || p.trained_in_s <= ps.deadline_days * 86400.0;
    p.scenario = std::move(c.scenario);
    return p;
  };
  std::vector<Point> front;
  auto pruned = [&](const Screened& c) {
    return !o.exhaustive && std::any_of(front.begin(), front.end(), [&](const Point& p) {
      return p.trained_in_s <= c.lead + c.t_lb && p.total_usd <= c.c_lb;
    });
  };
  // The planner runs on two compositions at a time (it shares nothing); the front they join
  // is updated in composition order, so the result does not depend on the timing.
  constexpr std::size_t kWorkers = 2;
  std::size_t next = 0;
  while (next < todo.size()) {
    if (o.stop.stop_requested()) {
      r.stopped = true;
      break;
    }
    if (o.progress) o.progress(static_cast<double>(next) / static_cast<double>(todo.size()));
    std::vector<std::size_t> batch;
    while (next < todo.size() && batch.size() < kWorkers) {
      if (pruned(todo[next])) ++r.pruned;
      else batch.push_back(next);
      ++next;
    }
    std::vector<std::future<planner::Result>> runs;
    for (std::size_t i : batch)
      runs.push_back(std::async(std::launch::async, [&, i] { return planner::search(todo[i].scenario, po); }));
    bool changed = false;
    for (std::size_t b = 0; b < batch.size(); ++b) {
      Screened& c = todo[batch[b]];
      planner::Result pr = runs[b].get();
      ++r.planned;
      if (pr.top.empty()) {
        ++r.none_fits;
        continue;
      }
      Priced priced;
      Point p = make_point(c, std::move(pr.top.front()), priced);
      if (ps.budget_usd > 0 && p.total_usd > ps.budget_usd && rent) {
        ++r.over_budget;
        continue;
      }
      priced.meets_deadline = p.meets_deadline;
      r.planned_points.push_back(std::move(priced));
      if (std::any_of(front.begin(), front.end(), [&](const Point& q) {
            return dominates(q.trained_in_s, q.total_usd, p.trained_in_s, p.total_usd) ||
                   (q.trained_in_s == p.trained_in_s && q.total_usd == p.total_usd);
          }))
        continue;
      std::erase_if(front, [&](const Point& q) {
        return dominates(p.trained_in_s, p.total_usd, q.trained_in_s, q.total_usd);
      });
      front.push_back(std::move(p));
      changed = true;
      if (r.first_point_s < 0)
        r.first_point_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    }
    if (changed && o.on_front) {
      std::vector<Point> sofar = front;
      sort_front(sofar);
      o.on_front(sofar);
    }
  }
  if (o.progress) o.progress(1.0);
  sort_front(front);
  r.front = std::move(front);
  if (r.front.empty()) {
    // Nothing within the limits: the cheapest composition over them that has a plan, so the
    // report can say what the answer would cost. A few tries, least capex (rent: least
    // lower-bound cost) first, then least power.
    std::stable_sort(refused.begin(), refused.end(), [](const Screened& a, const Screened& b) {
      return a.c_lb < b.c_lb || (a.c_lb == b.c_lb && a.power_kw < b.power_kw);
    });
    constexpr std::size_t kTries = 8;
    for (std::size_t i = 0; i < refused.size() && i < kTries && !r.stopped; ++i) {
      if (o.stop.stop_requested()) {
        r.stopped = true;
        break;
      }
      planner::Result pr = planner::search(refused[i].scenario, po);
      if (pr.top.empty()) continue;
      Priced priced;
      r.smallest_fit = make_point(refused[i], std::move(pr.top.front()), priced);
      break;
    }
    return r;
  }
  std::vector<Choice> choices;
  for (const auto& p : r.front) choices.push_back({p.trained_in_s, p.total_usd, p.meets_deadline});
  r.recommended = recommend(choices, ps);
  r.sensitivity = sensitivity(s, r);
  return r;
}

}  // namespace hetsim::buy
