#pragma once
// Presenting a simulated step: the estimate's summary with the simulated figures in place of
// the closed-form ones, plus what only a timeline shows (bubble, exposed communication,
// utilisation, memory peaks over time, the critical path).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/analytic/estimate.hpp"
#include "sim/engine/summary.hpp"
#include "sim/engine/variability.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::report {

struct Simulation {
  schedule::TaskGraph graph;
  engine::Trace trace;
  engine::Summary summary;
  analytic::Estimate estimate;  ///< the closed-form estimate of the same plan
  analytic::Estimate simulated;  ///< the estimate with simulated step time and memory peaks
  /// With [variability]: the step over sampled steps (the figures above stay nominal).
  std::optional<engine::StepDistribution> variability;
};

/// What only the SimGrid engine shows: contended links, and what the engine cost.
struct SimgridReport {
  std::uint64_t activities = 0;
  std::uint64_t flows = 0;
  double wall_s = 0;         ///< how long SimGrid took
  double native_step_s = 0;  ///< the native engine's step, for comparison
  double flow_delay_s = 0;   ///< Σ over flows of (time taken − time alone)
  struct Link {
    std::string link;
    double overloaded_s = 0;
    double peak_demand = 0;  ///< × the link's bandwidth
  };
  std::vector<Link> contended;  ///< most overloaded first
};

/// Why a step whose estimate is `step_s` seconds cannot be simulated (past the clock,
/// schedule::kMaxSimulatedStepS), or nothing when it can.
[[nodiscard]] std::optional<Diagnostic> beyond_the_clock(const Scenario& s, double step_s);

/// Estimates, schedules and simulates `p` on `s`: everything `hetsim simulate` shows.
/// Fails when the step is beyond the clock (beyond_the_clock), and if the schedule deadlocks (a bug).
[[nodiscard]] Result<Simulation> run_simulation(const Scenario& s, const plan::Plan& p,
                                                const engine::RunControl& control = {});

/// Fills `simulated` from the estimate, the graph and the trace: throughput, MFU, time/cost/
/// energy scale with the simulated step; per device type, the peak memory is the timeline's.
void apply_simulation(Simulation& sim);

/// With `simgrid`, the engine's section follows (the timeline is then SimGrid's).
[[nodiscard]] std::string simulate_text(const Scenario& s, const plan::Plan& p, const Simulation& sim,
                                        const SimgridReport* simgrid = nullptr);
/// The estimate JSON keys (simulated values) plus bubble_fraction, exposed_comm_s,
/// estimate_step_time_s, critical_path_s, tasks, and per device type busy_fraction; with
/// `simgrid`, an "engine" object; with sampled variability, a "variability" object
/// (docs/formats.md#simulate-json).
[[nodiscard]] std::string simulate_json(const Scenario& s, const plan::Plan& p, const Simulation& sim,
                                        const SimgridReport* simgrid = nullptr);

/// How a StepDistribution was sampled: runs of the native engine (`simulate`, `plan`), or the
/// closed-form estimate again with each step's factors (`estimate`; engine::sample_closed_form).
enum class SampledBy { Engine, ClosedForm };

/// The sampled steps as a "variability" section of a report, and as its JSON object
/// (docs/formats.md#simulate-json: the table as read, `sampled_by`, the figures).
[[nodiscard]] std::string variability_text(const Scenario& s, const engine::StepDistribution& d, SampledBy by);
[[nodiscard]] nlohmann::ordered_json variability_json(const Scenario& s, const engine::StepDistribution& d,
                                                      SampledBy by);

/// Chrome trace JSON (opens in Perfetto / chrome://tracing): a process per simulated device
/// (named by its first node and what it stands for), a thread per stream, memory as a counter.
[[nodiscard]] std::string chrome_trace(const Scenario& s, const schedule::TaskGraph& g,
                                       const engine::Trace& t);

}  // namespace hetsim::report
