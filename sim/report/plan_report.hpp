#pragma once
// Presenting a planner result: the top plans, the baselines with the best plan's speed-up over
// each, and why the winner wins (its bottleneck, its splits, what limits it).

#include <string>

#include "sim/plan/planner.hpp"
#include "sim/report/simulation_report.hpp"

namespace hetsim::report {

/// `best` is the full simulation of r.top[0].
[[nodiscard]] std::string plan_text(const Scenario& s, const planner::Result& r, const Simulation& best,
                                    planner::Objective o, double seconds);
/// {"best": <simulate JSON>, "top": [...], "baselines": [{"name", "step_time_s", "speedup"}], …}
[[nodiscard]] std::string plan_json(const Scenario& s, const planner::Result& r, const Simulation& best,
                                    planner::Objective o, double seconds);
/// The same document when no plan fits (r.top empty): "fits": false, "best": null, empty "why"
/// and "top", the baselines with null times.
[[nodiscard]] std::string plan_json_none_fits(const Scenario& s, const planner::Result& r, planner::Objective o);

/// The hint when no plan fits: what would make one fit, and, where [parallel] pipeline_runs > 1
/// holds the search to plans whose micro-batches it divides, that constraint first.
[[nodiscard]] std::string no_plan_hint(const Scenario& s);

}  // namespace hetsim::report
