#pragma once
// Presenting a simulated step: the estimate's summary with the simulated figures in place of
// the closed-form ones, plus what only a timeline shows (bubble, exposed communication,
// utilisation, memory peaks over time, the critical path).

#include <string>

#include "sim/analytic/estimate.hpp"
#include "sim/engine/summary.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::report {

struct Simulation {
  schedule::TaskGraph graph;
  engine::Trace trace;
  engine::Summary summary;
  analytic::Estimate estimate;  ///< the closed-form estimate of the same plan
  analytic::Estimate simulated;  ///< the estimate with simulated step time and memory peaks
};

/// Estimates, schedules and simulates `p` on `s`: everything `hetsim simulate` shows.
/// Fails only if the schedule deadlocks (a bug).
[[nodiscard]] Result<Simulation> run_simulation(const Scenario& s, const plan::Plan& p);

/// Fills `simulated` from the estimate, the graph and the trace: throughput, MFU, time/cost/
/// energy scale with the simulated step; per device type, the peak memory is the timeline's.
void apply_simulation(Simulation& sim);

[[nodiscard]] std::string simulate_text(const Scenario& s, const plan::Plan& p, const Simulation& sim);
/// The estimate JSON keys (simulated values) plus bubble_fraction, exposed_comm_s,
/// estimate_step_time_s, critical_path_s, tasks, and per device type busy_fraction.
[[nodiscard]] std::string simulate_json(const Scenario& s, const plan::Plan& p, const Simulation& sim);

/// Chrome trace JSON (opens in Perfetto / chrome://tracing): a process per simulated device
/// (named by its first node and what it stands for), a thread per stream, memory as a counter.
[[nodiscard]] std::string chrome_trace(const Scenario& s, const schedule::TaskGraph& g,
                                       const engine::Trace& t);

}  // namespace hetsim::report
