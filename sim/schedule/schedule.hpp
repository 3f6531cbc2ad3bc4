#pragma once
// Plan → TaskGraph: the per-device task streams of one training step. Deterministic: the same
// scenario and plan give the same graph, task for task. Used by the engines and (issue 5) the
// executor, so prediction and measurement describe the same work.

#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::schedule {

/// Builds the step's tasks. Symmetric devices are folded: one simulated device stands for the tp
/// ranks of a stage times the identical replicas of its group (exact: they run the same tasks
/// at the same times). Compute tasks cover a model chunk (a stage's layers, or 1/v of them when
/// interleaved) for one micro-batch; the backward of the last micro-batch and the forward of
/// the first are split per layer when gradient buckets or parameter gathers overlap them.
/// Requires: p validated against s.
[[nodiscard]] TaskGraph build_schedule(const Scenario& s, const plan::Plan& p);

/// An upper bound on the tasks build_schedule would create (to refuse absurd sizes up front).
[[nodiscard]] double estimated_tasks(const Scenario& s, const plan::Plan& p);

/// The longest step (its closed-form estimate, in seconds) the engines simulate: their clock counts
/// int64 nanoseconds (292 years), and a step past 10^8 s (about 3 years) says that a link or a
/// device in the scenario is absurd, not that a longer clock is needed.
inline constexpr double kMaxSimulatedStepS = 1e8;

/// Converts seconds to integral nanoseconds (round half up).
[[nodiscard]] SimTime to_ns(Duration d);

}  // namespace hetsim::schedule
