#include "sim/plan/buy_pricing.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace hetsim::buy {
namespace {

constexpr double kHoursPerYear = 365.25 * 24;

bool dominates(const Point& a, const Point& b) {
  return a.trained_in_s <= b.trained_in_s && a.total_usd <= b.total_usd &&
         (a.trained_in_s < b.trained_in_s || a.total_usd < b.total_usd);
}

bool renting(const Scenario& s) { return s.cost.mode == CostSpec::Mode::Rent; }

// The point's costs, time and limits under `s`, without its scenario and plan.
Point costed(const Scenario& s, const Priced& q) {
  const PurchaseSpec& ps = *s.purchase;
  Point p;
  p.nodes = q.nodes;
  p.effective_time_s = q.time_s;
  p.lead_time_s = lead_time_s(ps, q.nodes);
  p.trained_in_s = p.lead_time_s + p.effective_time_s;
  const double hours = p.effective_time_s / 3600.0;
  const Bought b = bought_cost(s, q.nodes);
  // Rent includes the rented devices' power.
  const double kw_powered = (q.kw_used - (renting(s) ? q.kw_bought : 0.0)) * s.cost.pue;
  p.capex_usd = b.capex;
  p.energy_usd = hours * kw_powered * s.cost.electricity_usd_per_kwh;
  p.rent_usd = hours * b.rent_per_h;
  p.amortisation_usd = hours * amortisation_per_h(s);
  p.run_usd = p.energy_usd + p.rent_usd + p.amortisation_usd;
  p.total_usd = p.capex_usd + p.run_usd;
  p.power_kw = installed_kw(s, q.nodes);
  p.usd_per_million_tokens = p.total_usd / s.training.tokens * 1e6;
  p.meets_deadline = ps.deadline_days <= 0 || p.trained_in_s <= ps.deadline_days * 86400.0;
  p.idle_owned_devices = q.idle_owned_devices;
  return p;
}

// The front of `planned` priced under `s`, within its limits, fastest first: (point without
// scenario and plan, index into planned). `refused` counts those over the limits. Among points
// of equal time and cost the first planned stays, as in the search.
std::vector<std::pair<Point, std::size_t>> front_of(const Scenario& s, const std::vector<Priced>& planned,
                                                    std::size_t* refused = nullptr,
                                                    std::vector<std::pair<Point, std::size_t>>* over = nullptr) {
  std::vector<std::pair<Point, std::size_t>> all;
  for (std::size_t i = 0; i < planned.size(); ++i) {
    Point p = costed(s, planned[i]);
    if (within_limits(s, p)) {
      all.emplace_back(std::move(p), i);
    } else {
      if (refused) ++*refused;
      if (over) over->emplace_back(std::move(p), i);
    }
  }
  std::vector<std::pair<Point, std::size_t>> front;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Point& a = all[i].first;
    bool out = false;
    for (std::size_t j = 0; j < all.size() && !out; ++j) {
      const Point& b = all[j].first;
      out = dominates(b, a) || (j < i && b.trained_in_s == a.trained_in_s && b.total_usd == a.total_usd);
    }
    if (!out) front.push_back(all[i]);
  }
  std::stable_sort(front.begin(), front.end(), [](const auto& a, const auto& b) {
    return a.first.trained_in_s < b.first.trained_in_s ||
           (a.first.trained_in_s == b.first.trained_in_s && a.first.total_usd < b.first.total_usd);
  });
  return front;
}

std::vector<Point> points_of(const std::vector<std::pair<Point, std::size_t>>& f) {
  std::vector<Point> out;
  out.reserve(f.size());
  for (const auto& [p, i] : f) out.push_back(p);
  return out;
}

// Candidate k's purchase and rental prices (k < 0: electricity) times f.
Scenario scaled(Scenario s, int k, double f) {
  if (k < 0) {
    s.cost.electricity_usd_per_kwh *= f;
  } else {
    auto& d = s.purchase->candidates[static_cast<std::size_t>(k)].pool.device;
    d.purchase_usd *= f;
    d.price_usd_per_hour *= f;
  }
  return s;
}

// Adds `value` to the part named `name`, or appends it.
void add_part(std::vector<Part>& parts, const std::string& name, double value) {
  for (Part& x : parts)
    if (x.name == name) {
      x.value += value;
      return;
    }
  parts.push_back({name, value});
}

}  // namespace

Bought bought_cost(const Scenario& s, const std::vector<int>& nodes) {
  const PurchaseSpec& ps = *s.purchase;
  Bought b;
  for (std::size_t k = 0; k < nodes.size() && k < ps.candidates.size(); ++k) {
    const auto& pool = ps.candidates[k].pool;
    const double devices = static_cast<double>(nodes[k]) * pool.devices_per_node;
    if (renting(s)) b.rent_per_h += devices * pool.device.price_usd_per_hour;
    else b.capex += devices * pool.device.purchase_usd;
  }
  return b;
}

double amortisation_per_h(const Scenario& s) {
  double usd = 0;
  for (const auto& p : s.cluster.pools)
    usd += p.devices() * p.device.purchase_usd / (s.cost.amortisation_years * kHoursPerYear);
  return usd;
}

double installed_kw(const Scenario& s, const std::vector<int>& nodes) {
  double kw = 0;
  for (const auto& p : s.cluster.pools) kw += p.devices() * p.device.tdp.v * s.cost.pue / 1000.0;
  const PurchaseSpec& ps = *s.purchase;
  for (std::size_t k = 0; k < nodes.size() && k < ps.candidates.size(); ++k) {
    if (nodes[k] == 0) continue;
    const auto& pool = ps.candidates[k].pool;
    kw += static_cast<double>(nodes[k]) * pool.devices_per_node * pool.device.tdp.v * s.cost.pue / 1000.0;
  }
  return kw;
}

double cost_lower_bound(const Scenario& s, const std::vector<int>& nodes, double time_lb_s) {
  const Bought b = bought_cost(s, nodes);
  return b.capex + time_lb_s / 3600.0 * (b.rent_per_h + amortisation_per_h(s));
}

Scenario composition_scenario(const Scenario& s, const std::vector<int>& nodes) {
  Scenario c = s;
  c.purchase.reset();
  c.plan.reset();
  const PurchaseSpec& ps = *s.purchase;
  for (std::size_t k = 0; k < nodes.size() && k < ps.candidates.size(); ++k) {
    if (nodes[k] == 0) continue;
    hw::PoolSpec pool = ps.candidates[k].pool;
    pool.nodes = nodes[k];
    c.cluster.pools.push_back(std::move(pool));
  }
  return c;
}

Point price(const Scenario& s, const Priced& q, Scenario composition) {
  Point p = costed(s, q);
  p.best = q.best;
  p.scenario = std::move(composition);
  return p;
}

Point price(const Scenario& s, const Priced& q) { return price(s, q, composition_scenario(s, q.nodes)); }

bool within_limits(const Scenario& s, const Point& p) {
  const PurchaseSpec& ps = *s.purchase;
  if (ps.power_kw > 0 && p.power_kw > ps.power_kw) return false;
  return ps.budget_usd <= 0 || (renting(s) ? p.total_usd : p.capex_usd) <= ps.budget_usd;
}

void sort_front(std::vector<Point>& front) {
  std::sort(front.begin(), front.end(), [](const Point& a, const Point& b) {
    return a.trained_in_s < b.trained_in_s || (a.trained_in_s == b.trained_in_s && a.total_usd < b.total_usd);
  });
}

std::vector<std::size_t> ranking(const std::vector<Point>& front, const PurchaseSpec& ps) {
  const bool any_meets = std::any_of(front.begin(), front.end(), [](const Point& p) { return p.meets_deadline; });
  auto value = [&](const Point& p) {
    if (ps.objective == PurchaseSpec::Objective::Cost) return p.total_usd;
    if (ps.objective == PurchaseSpec::Objective::Pareto)
      return ps.deadline_days > 0 && any_meets ? p.total_usd : p.total_usd * p.trained_in_s;
    return p.trained_in_s;
  };
  // Points that miss the deadline come last, unless the objective is time.
  auto late = [&](const Point& p) {
    return any_meets && !p.meets_deadline && ps.objective != PurchaseSpec::Objective::Time;
  };
  std::vector<std::size_t> order(front.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (late(front[a]) != late(front[b])) return !late(front[a]);
    return value(front[a]) < value(front[b]);
  });
  return order;
}

namespace {

// The sensitivity's settings: each candidate's price (k its index) at 0.8 and 1.2, then
// electricity (k = -1) at 0.5 and 1.5.
struct Setting {
  std::string what;
  int k;
  double factor;
};
std::vector<Setting> settings(const PurchaseSpec& ps) {
  std::vector<Setting> out;
  for (std::size_t k = 0; k < ps.candidates.size(); ++k)
    for (double f : {0.8, 1.2}) out.push_back({ps.candidates[k].pool.name + " price", static_cast<int>(k), f});
  for (double f : {0.5, 1.5}) out.push_back({"electricity", -1, f});
  return out;
}

}  // namespace

std::vector<Sensitivity> sensitivity(const Scenario& s, const Result& r) {
  std::vector<Sensitivity> out;
  if (r.front.empty()) return out;
  const Point& now = r.front[r.recommended];
  for (const Setting& setting : settings(*s.purchase)) {
    Sensitivity x;
    x.what = setting.what;
    x.factor = setting.factor;
    const Scenario t = scaled(s, setting.k, setting.factor);
    const std::vector<Point> front = points_of(front_of(t, r.planned_points));
    if (!front.empty()) {
      const Point& p = front[ranking(front, *t.purchase).front()];
      x.nodes = p.nodes;
      x.total_usd = p.total_usd;
      x.trained_in_s = p.trained_in_s;
      x.total_change_usd = p.total_usd - now.total_usd;
      x.time_change_s = p.trained_in_s - now.trained_in_s;
    }
    x.changes = x.nodes != now.nodes;
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<PointSensitivity> point_sensitivity(const Scenario& s, const Result& r, std::size_t i) {
  std::vector<PointSensitivity> out;
  if (i >= r.front.size()) return out;
  const Point& p = r.front[i];
  const auto q = std::find_if(r.planned_points.begin(), r.planned_points.end(),
                              [&](const Priced& x) { return x.nodes == p.nodes; });
  if (q == r.planned_points.end()) return out;
  for (const Setting& setting : settings(*s.purchase)) {
    const Point priced = price(scaled(s, setting.k, setting.factor), *q);
    out.push_back({setting.what, setting.factor, priced.total_usd, priced.trained_in_s,
                   priced.total_usd - p.total_usd, priced.trained_in_s - p.trained_in_s});
  }
  return out;
}

Repriced reprice(const Scenario& changed, const Result& r) {
  Repriced out;
  Result& n = out.result;
  n.planned_points = r.planned_points;
  n.unplanned = r.unplanned;
  n.compositions = r.compositions;
  n.over_budget = r.over_budget;
  n.over_power = r.over_power;
  n.too_small = r.too_small;
  n.pruned = r.pruned;
  n.planned = r.planned;
  n.none_fits = r.none_fits;
  n.stopped = r.stopped;
  n.first_point_s = r.first_point_s;
  std::vector<std::pair<Point, std::size_t>> over;
  for (auto& [p, i] : front_of(changed, r.planned_points, &out.refused, &over)) {
    const Priced& q = r.planned_points[i];
    p.best = q.best;
    p.scenario = composition_scenario(changed, q.nodes);
    n.front.push_back(std::move(p));
  }
  if (n.front.empty()) {
    // Nothing within the new limits: the planned composition of least capex (rent: least total)
    // over them, then least power, to say what it would take.
    const bool rent = renting(changed);
    auto key = [&](const Point& p) { return std::make_pair(rent ? p.total_usd : p.capex_usd, p.power_kw); };
    const auto least = std::min_element(over.begin(), over.end(), [&](const auto& a, const auto& b) {
      return key(a.first) < key(b.first);
    });
    if (least != over.end()) n.smallest_fit = price(changed, r.planned_points[least->second]);
  } else {
    const std::vector<std::size_t> order = ranking(n.front, *changed.purchase);
    n.recommended = order[0];
    n.runner_up = order.size() > 1 ? order[1] : order[0];
    n.sensitivity = sensitivity(changed, n);
  }
  // What a new search could add: compositions never planned whose bounds pass the new limits
  // and are not dominated by the new front.
  const PurchaseSpec& ps = *changed.purchase;
  for (const Unplanned& u : r.unplanned) {
    if (ps.power_kw > 0 && installed_kw(changed, u.nodes) > ps.power_kw) continue;
    const double c_lb = cost_lower_bound(changed, u.nodes, u.time_lb_s);
    const double budgeted = renting(changed) ? c_lb : bought_cost(changed, u.nodes).capex;
    if (ps.budget_usd > 0 && budgeted > ps.budget_usd) continue;
    const double t_lb = lead_time_s(ps, u.nodes) + u.time_lb_s;
    if (std::any_of(n.front.begin(), n.front.end(),
                    [&](const Point& p) { return p.trained_in_s <= t_lb && p.total_usd <= c_lb; }))
      continue;
    ++out.may_join;
  }
  return out;
}

std::vector<Part> time_parts(const Point& p) {
  const analytic::Estimate& e = p.best.estimate;
  // Without failures the training takes effective × goodput; the step's parts share it.
  const double ideal = p.effective_time_s * e.goodput.fraction;
  std::vector<Part> out;
  auto add = [&](const std::string& name, double v) { add_part(out, name, v); };
  for (const char* name :
       {"compute", "recompute", "exposed communication", "pipeline bubble", "optimizer"})
    add(name, 0);
  for (const auto& [name, d] : e.step.parts) {
    const double share = e.step_time.v > 0 ? d.v / e.step_time.v : 0;
    const bool comm = name == "tp comm" || name == "pp comm" || name == "dp comm";
    add(comm ? "exposed communication" : name, ideal * share);
  }
  add("failures and restarts", p.effective_time_s - ideal);
  add("lead time", p.lead_time_s);
  return out;
}

std::vector<Part> cost_parts(const Point& p) {
  return {{"capex", p.capex_usd},
          {"energy", p.energy_usd},
          {"rent", p.rent_usd},
          {"owned amortisation", p.amortisation_usd}};
}

Versus versus(const Point& chosen, const Point& other) {
  Versus v;
  v.chosen_time = time_parts(chosen);
  v.other_time = time_parts(other);
  v.chosen_cost = cost_parts(chosen);
  v.other_cost = cost_parts(other);
  auto diff = [](const std::vector<Part>& a, const std::vector<Part>& b) {
    std::vector<Part> d;
    for (const Part& x : a) add_part(d, x.name, x.value);
    for (const Part& x : b) add_part(d, x.name, -x.value);
    return d;
  };
  v.time_s = diff(v.chosen_time, v.other_time);
  v.cost_usd = diff(v.chosen_cost, v.other_cost);
  return v;
}

}  // namespace hetsim::buy
