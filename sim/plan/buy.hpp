#pragma once
// Purchase planning (`hetsim buy`, docs/planner.md#buy): the owned pools plus every composition
// of the [purchase] candidates within the budget and the power limit; for each composition that
// can still reach the front, the planner's best plan; the Pareto front of total cost against the
// effective time to train (goodput included).
//
// Compositions are screened with sound bounds before the planner runs: a time-to-train lower
// bound (the layers' and head's matmul FLOPs at the peak of the largest island of devices that
// may train together), a cost lower bound (what is paid whatever the time: the capex, or the
// rent over the lower-bound time), and a memory bound (weights, gradients and optimizer state
// must fit in the island's memory). A composition whose bounds are dominated by a point found
// already cannot join the front and is skipped.
//
// Time on the front is the time until the model is trained: the candidates' lead time (the
// longest among those bought; training starts when the last node is in service) plus the
// effective time to train. Energy, rent and amortisation are paid over the training only.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <stop_token>
#include <vector>

#include "sim/plan/planner.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::buy {

struct Point;

struct Options {
  int verify = 3;           ///< planner: best estimates re-ranked by simulation, per composition
  bool same_vendor = true;  ///< vendor islands: no plan spans vendors (NCCL and RCCL do not mix)
  bool exhaustive = false;  ///< plan every composition (no pruning): for tests and checks
  std::function<void(double)> progress;
  std::stop_token stop;
  /// More compositions than this is refused before any work (a larger node_step).
  std::size_t max_compositions = 100000;
  /// Called on the calling thread each time the front changes, with the front so far (fastest
  /// first), for live displays: the first points come long before the search ends. May be empty.
  std::function<void(const std::vector<Point>&)> on_front;
};

struct Point {
  std::vector<int> nodes;       ///< per candidate, in [purchase] order
  Scenario scenario;            ///< the owned pools + the bought ones (nodes > 0)
  planner::Candidate best;      ///< the planner's answer on that cluster
  double capex_usd = 0;         ///< bought devices (own); 0 when renting
  double run_usd = 0;           ///< energy, owned amortisation and rent over the effective time
  double total_usd = 0;         ///< capex + run
  double effective_time_s = 0;  ///< time to train / goodput
  double lead_time_s = 0;       ///< until the last bought node is in service (training starts then)
  double trained_in_s = 0;      ///< lead time + effective time to train: the front's time axis
  double power_kw = 0;          ///< all installed devices at TDP × PUE
  double usd_per_million_tokens = 0;
  bool meets_deadline = true;
  int idle_owned_devices = 0;   ///< owned devices the plan leaves unused
  /// run_usd by part: the power paid for (not rented), the rent, the owned devices' amortisation.
  double energy_usd = 0, rent_usd = 0, amortisation_usd = 0;
};

/// What a point's cost is made of, to price it again (sensitivity, what-if: buy_pricing.hpp):
/// every planned composition with a plan that fits, on the front or not, within the budget or
/// not (the budget is applied when it is priced).
struct Priced {
  std::vector<int> nodes;       ///< per candidate
  planner::Candidate best;      ///< its plan, to show or export it should it join a front
  double time_s = 0;            ///< effective time to train (goodput included)
  double kw_used = 0;           ///< TDP of the devices its plan uses, kW, PUE not included
  double kw_bought = 0;         ///< of kw_used, the bought devices' (rent includes their power)
  int idle_owned_devices = 0;   ///< owned devices the plan leaves unused
};

/// A composition the search did not plan because of a price-dependent limit (the budget, the
/// power limit) or because its bounds were dominated (pruned), or one a stopped search never
/// reached: with its time bound, to tell whether other prices could bring it to the front.
struct Unplanned {
  std::vector<int> nodes;
  double time_lb_s = 0;  ///< lower bound of its effective time to train (lead time not included)
};

/// Whether the recommendation survives a change of one price.
struct Sensitivity {
  std::string what;          ///< "h100-sxm5 price", "electricity"
  double factor = 1;         ///< 0.8, 1.2 (prices); 0.5, 1.5 (electricity)
  bool changes = false;
  std::vector<int> nodes;    ///< the recommendation under that price (empty: nothing in the budget)
  /// By how much: the recommendation's total cost and time until trained under that price, and
  /// their change from the recommended point's at the searched prices (0 when nodes is empty).
  double total_usd = 0, trained_in_s = 0;
  double total_change_usd = 0, time_change_s = 0;
};

struct Result {
  std::vector<Point> front;  ///< Pareto front, fastest first (so the dearest first)
  std::vector<Priced> planned_points;
  std::vector<Unplanned> unplanned;
  std::vector<Sensitivity> sensitivity;  ///< each candidate's price ±20 %, electricity ±50 %
  std::size_t recommended = 0;  ///< index into front for the objective (front not empty)
  /// The objective's second choice (the point "why this one" is compared with); equal to
  /// recommended when the front has one point.
  std::size_t runner_up = 0;
  std::size_t compositions = 0;   ///< enumerated
  std::size_t over_budget = 0;    ///< refused by the budget (capex, or rent at the lower bound)
  std::size_t over_power = 0;     ///< refused by the power limit
  std::size_t too_small = 0;      ///< refused by the memory bound
  std::size_t pruned = 0;         ///< bounds dominated by a point found earlier
  std::size_t planned = 0;        ///< the planner ran
  std::size_t none_fits = 0;      ///< the planner found no plan that fits
  bool stopped = false;
  /// Seconds from the start of the search until the first point joined the front (-1: none did).
  double first_point_s = -1;
  /// Only when the front is empty because of the budget or the power limit: the composition of
  /// least capex (rent: least lower-bound cost) over those limits that has a plan that fits,
  /// to say how much more it takes. Absent when none of the first few tried has one.
  std::optional<Point> smallest_fit;
};

/// Days until the bought nodes are all in service: the longest lead time among the candidates
/// with nodes > 0 (0 when nothing is bought).
[[nodiscard]] double lead_time_s(const PurchaseSpec& ps, const std::vector<int>& nodes);

/// How many compositions the candidates make (the product of max_nodes / node_step + 1).
[[nodiscard]] double composition_count(const PurchaseSpec& ps);

/// Lower bound of the time to train on `s`'s cluster, in seconds: tokens × matmul FLOPs per
/// token over the summed peak of the largest group of devices that may train together (one
/// vendor's with same_vendor). Infinite when no device has the training's number format.
[[nodiscard]] double time_lower_bound_s(const Scenario& s, bool same_vendor);

/// Requires s.purchase and s.training.tokens > 0 (sim/api checks both).
[[nodiscard]] Result search(const Scenario& s, const Options& o);

}  // namespace hetsim::buy
