#pragma once
// Pricing of purchase points (sim/plan/buy.hpp): what a planned composition costs under a
// scenario's prices, the front and recommendation among priced compositions, the sensitivity of
// the recommendation, a search re-priced under changed prices without planning again, and what a
// point's time and cost are made of. One set of formulas for the search, its sensitivity, the
// GUI's what-if and its "why this one".

#include <cstddef>
#include <string>
#include <vector>

#include "sim/plan/buy.hpp"

namespace hetsim::buy {

/// What the bought devices of a composition cost: their capex (own) or rent per hour (rent).
struct Bought {
  double capex = 0, rent_per_h = 0;
};
/// Requires: s.purchase; nodes has one entry per candidate.
[[nodiscard]] Bought bought_cost(const Scenario& s, const std::vector<int>& nodes);
/// The owned pools' amortisation, $ per hour (their purchase price over the amortisation years).
[[nodiscard]] double amortisation_per_h(const Scenario& s);
/// Every installed device, owned and bought, at TDP × PUE, kW (what the power limit limits).
[[nodiscard]] double installed_kw(const Scenario& s, const std::vector<int>& nodes);
/// What is paid whatever the time, given an effective time to train of at least `time_lb_s`:
/// the capex, and the rent and amortisation over that time (the search's cost bound).
[[nodiscard]] double cost_lower_bound(const Scenario& s, const std::vector<int>& nodes, double time_lb_s);

/// `s`'s owned pools and, for each candidate with nodes[k] > 0, that many of its nodes; no
/// [purchase], no [parallel].
[[nodiscard]] Scenario composition_scenario(const Scenario& s, const std::vector<int>& nodes);

/// Planned composition `q` as a point priced under `s` (candidates' and owned devices' prices,
/// electricity, PUE, amortisation, rent or own, lead times, deadline): its time and plan as
/// planned, its costs, power and deadline from `s`. `composition` is
/// composition_scenario(s, q.nodes) (the search has it already).
[[nodiscard]] Point price(const Scenario& s, const Priced& q, Scenario composition);
[[nodiscard]] Point price(const Scenario& s, const Priced& q);

/// Fastest first; equal times, cheapest first.
void sort_front(std::vector<Point>& front);

/// Whether `p` (priced under `s`) keeps to `s`'s budget (capex when owning, the total when
/// renting) and power limit.
[[nodiscard]] bool within_limits(const Scenario& s, const Point& p);

/// The front's indices in the objective's order of preference: [0] is the recommendation. Time:
/// fastest; cost: cheapest; pareto: the cheapest that meets the deadline, or without one the
/// least cost × time. Cost and pareto rank the points that meet the deadline first when any does.
[[nodiscard]] std::vector<std::size_t> ranking(const std::vector<Point>& front, const PurchaseSpec& ps);

/// Each candidate's price ±20 % and electricity ±50 % around `s`'s prices: the recommendation
/// among r.planned_points priced so (budget and power limit applied), and by how much its cost
/// and time differ from r's recommended point. Empty when r.front is.
[[nodiscard]] std::vector<Sensitivity> sensitivity(const Scenario& s, const Result& r);

/// One front point under each setting of the sensitivity (each candidate's price ±20 %,
/// electricity ±50 %, in sensitivity()'s order): that point's own composition priced so (its plan
/// and time as planned), against its cost and time at `s`'s prices. Where sensitivity() asks
/// which point the search would recommend, this asks what one chosen point would cost.
struct PointSensitivity {
  std::string what;   ///< as Sensitivity::what
  double factor = 1;  ///< as Sensitivity::factor
  double total_usd = 0, trained_in_s = 0;          ///< the point priced under that setting
  double total_change_usd = 0, time_change_s = 0;  ///< against r.front[i] itself
};
/// Empty when i is not a front index or its composition is not among r.planned_points (a
/// partial front); requires s.purchase when not empty.
[[nodiscard]] std::vector<PointSensitivity> point_sensitivity(const Scenario& s, const Result& r, std::size_t i);

struct Repriced {
  /// `r` with the front, recommendation, runner-up, sensitivity and smallest fit of the new
  /// prices. Counts, timings and the lists of planned and unplanned compositions are the search's.
  Result result;
  /// Planned compositions the new budget or power limit refuses.
  std::size_t refused = 0;
  /// Compositions never planned (refused by the first limits, pruned by their bounds, or not
  /// reached by a stopped search) whose bounds could reach the new front within the new limits:
  /// a new search could find points this re-pricing cannot. 0 for the search's own prices
  /// unless it was stopped.
  std::size_t may_join = 0;
};

/// `r`, the result of a search, priced again under `changed` without planning again: the front
/// of r.planned_points under its prices, budget, power limit and deadline, every front point
/// with its plan. Each composition keeps the time it was planned with, so only prices, PUE,
/// amortisation, rent or own, lead times and the limits may differ from the scenario searched.
/// Requires: changed.purchase, with the candidates of the scenario searched (api::reprice checks
/// this and what the times depend on).
[[nodiscard]] Repriced reprice(const Scenario& changed, const Result& r);

/// A named part of a point's time (s) or cost ($).
struct Part {
  std::string name;
  double value = 0;
};
/// p.trained_in_s by part: the step's parts ("compute", "recompute", "exposed communication" (TP,
/// PP and DP), "pipeline bubble", "optimizer") over the training, "failures and restarts" (what
/// goodput adds) and "lead time". A verified step is split in the estimate's proportions.
[[nodiscard]] std::vector<Part> time_parts(const Point& p);
/// p.total_usd by part: "capex", "energy", "rent", "owned amortisation".
[[nodiscard]] std::vector<Part> cost_parts(const Point& p);

/// Why `chosen` rather than `other`: their parts side by side, and chosen − other per part (a
/// negative time part is time `chosen` saves).
struct Versus {
  std::vector<Part> chosen_time, other_time, time_s;
  std::vector<Part> chosen_cost, other_cost, cost_usd;
};
[[nodiscard]] Versus versus(const Point& chosen, const Point& other);

}  // namespace hetsim::buy
