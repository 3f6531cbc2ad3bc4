#pragma once
// A plan's stages as the planner's closed forms see them (private to sim/plan): per micro-batch,
// each stage's time and memory as lines in its layer count (partition_layers), and each replica
// group's pipeline time in its micro-batches (split_batch).

#include <cstddef>
#include <vector>

#include "sim/analytic/stage_cost.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::planner::detail {

/// The virtual stages (chunks) per stage of the plan's schedule: 1 unless interleaved.
[[nodiscard]] int virtual_of(const plan::Plan& p);

// Per-micro-batch time of every stage of group g: c_i, and the pipeline time for m
// micro-batches, T(m) = m·max c + R·(Σ c − max c)/v for R pipeline runs (docs/cost-models.md#pipeline).
struct GroupTime {
  double cmax = 0, fill = 0;
  [[nodiscard]] double at(double m) const { return m * cmax + fill; }
};

/// Group `g`'s GroupTime from its stages' costs `c` (analytic::stage_costs of the plan).
[[nodiscard]] GroupTime group_time(const plan::Plan& p, std::size_t g, const std::vector<analytic::StageCost>& c);

// Stage i of a group as partition_layers sees it, per micro-batch: time = a + b·layers; memory
// = f + k·layers, which must stay within room (the device less its reserve and fragmentation).
struct StageLine {
  double a = 0, b = 0, f = 0, k = 0, room = 0;
};

/// The StageLine of every stage of group `g`, from its stages' costs (analytic::stage_costs of
/// the plan, without calls).
[[nodiscard]] std::vector<StageLine> stage_lines(const Scenario& s, const plan::Plan& p, std::size_t g,
                                                const std::vector<analytic::StageCost>& costs);

}  // namespace hetsim::planner::detail
