#pragma once
// The one door of every front end: the CLI, the GUI and sweeps load, estimate, simulate and plan
// through these functions, so a number on screen is the number the CLI prints
// (docs/architecture.md#sim-api). No printing and no exit: failures come back as diagnostics with
// a kind (models/base/result.hpp), notes as strings, progress through callbacks; the planner
// stops early when its stop token is asked to. Thread-safe: no shared state is written (the
// built-in catalogue is parsed once, under a once-flag, then only read).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/base/result.hpp"
#include "sim/analytic/estimate.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/plan/buy.hpp"
#include "sim/plan/buy_pricing.hpp"
#include "sim/plan/planner.hpp"
#include "sim/report/simulation_report.hpp"

namespace hetsim::api {

/// The built-in catalogue (parsed on first use; an Internal error if it does not parse).
[[nodiscard]] Result<hw::Catalog> catalog();
/// The same without the figures' sources (`DeviceSpec::sources` empty), parsed in about half
/// the time: what scenarios are read against.
[[nodiscard]] Result<hw::Catalog> figures_catalog();

/// The scenario at `file`, read against the built-in catalogue.
[[nodiscard]] Result<Scenario> load(const std::filesystem::path& file, const io::ReadOptions& opts = {});
/// The same from text (an editor's buffer); `name` is the file name its messages give.
[[nodiscard]] Result<Scenario> load_text(std::string_view text, const std::string& name,
                                         const io::ReadOptions& opts = {});
/// The plan to evaluate: the plan JSON at `plan_file` when it is not empty, else the scenario's
/// [parallel]; bad input naming the scenario when it has neither. `command` names the caller
/// in that message ("simulate").
[[nodiscard]] Result<plan::Plan> plan_to_run(const Scenario& s, const std::filesystem::path& plan_file,
                                             std::string_view command);

/// The closed-form estimate (sim/analytic).
[[nodiscard]] analytic::Estimate estimate(const Scenario& s, const plan::Plan& p);

/// With [variability]: the closed-form estimate `e` of `p` over variability.steps sampled steps
/// (engine::sample_closed_form: each replica's pipeline again with its devices' compute factors;
/// docs/scenario-format.md#variability). Empty without [variability]. Microseconds per step for
/// a thousand devices, so `hetsim estimate` and estimate sweeps sample it too.
[[nodiscard]] std::optional<engine::StepDistribution> sample_estimate(const Scenario& s, const plan::Plan& p,
                                                                      const analytic::Estimate& e);

enum class Engine { Native, SimGrid };

using report::SimgridReport;

struct Simulated {
  report::Simulation sim;               ///< the timeline and its figures, from the engine asked for
  std::optional<SimgridReport> simgrid;  ///< with Engine::SimGrid
};

struct SimulateOptions {
  Engine engine = Engine::Native;
  /// Said before long work ("about 3e6 activities, a few seconds to a few minutes").
  std::function<void(const std::string&)> note;
  /// The native run's fraction of tasks done (0..1), as it goes; may be empty.
  std::function<void(double)> progress;
  /// Asked to stop, the native run ends within 2¹⁶ events with an error saying it was stopped
  /// (the GUI drops a simulation whose inputs changed). SimGrid's run is not interrupted: the
  /// token is looked at before and after it.
  std::stop_token stop;
};

/// The largest step simulated (about 100 bytes and 0.1–1 µs per task), and the largest graph
/// handed to SimGrid (50–300 k activities per second).
inline constexpr double kMaxSimulatedTasks = 20e6;
inline constexpr double kMaxSimgridActivities = 20e6;
/// The most tasks [variability]'s sampled steps run in all (steps × the step's tasks; some
/// minutes of the engine).
inline constexpr double kMaxSampledTasks = 1e9;

/// Schedules and simulates one step. Bad input when the step is beyond the limits above; an
/// Environment error when SimGrid is asked for and this build or machine has none. With
/// [variability], also samples its steps (native engine only: bad input with SimGrid) into
/// Simulation::variability; the nominal figures stay as they are.
[[nodiscard]] Result<Simulated> simulate(const Scenario& s, const plan::Plan& p, const SimulateOptions& opts = {});

struct Planned {
  planner::Result result;
  std::vector<std::string> notes;  ///< pools left out of the search, and why
};

/// Searches the best plans (sim/plan/planner). Pools whose devices lack the training's number
/// format hold no stage (a note each); when none is left, bad input at training.precision.
/// Progress and cancellation: `opts.progress`, `opts.stop`. A rank_percentile of -1 takes the
/// scenario's variability.rank_by; one above 0 without [variability] is bad input.
[[nodiscard]] Result<Planned> plan(const Scenario& s, planner::Options opts);

/// Purchase planning (sim/plan/buy.hpp): bad input when the scenario has no [purchase], no
/// token target (training.tokens), or more compositions than the search takes on.
[[nodiscard]] Result<buy::Result> buy(const Scenario& s, const buy::Options& opts);

/// `r`, api::buy's result for `searched`, priced again under `changed` without planning again
/// (buy::reprice, for what-if on a purchase): prices, electricity, PUE, amortisation, rent or
/// own, lead times, budget, power limit and deadline may differ. Each planned composition keeps
/// its plan and time, so bad input (naming the first key that differs) when `changed` differs in
/// what they depend on: the model, the training, the owned pools, the candidates' devices and
/// node counts, the network, the reliability. Limits (docs/gui.md, "Gaps in sim/api"): only
/// compositions planned by the search are priced; Repriced::may_join counts the others a new
/// search could bring in.
[[nodiscard]] Result<buy::Repriced> reprice(const Scenario& searched, const Scenario& changed, const buy::Result& r);

/// What `hetsim buy --out DIR` writes for a search's front (docs/formats.md#buy-out):
/// point-N.toml (the scenario of what point N owns and buys, from `source_text`, the text `s`
/// was read from), point-N.plan.json (its plan) and front.csv. Every scenario is read back and
/// its plan validated against it first (an Internal error otherwise): each point runs as written.
[[nodiscard]] Result<std::vector<io::OutputFile>> buy_files(const Scenario& s, std::string_view source_text,
                                                            const buy::Result& r, const std::filesystem::path& dir);

}  // namespace hetsim::api
