#pragma once
// Running a sweep (docs/scenario-format.md#sweep): every point of a SweepDocument validated
// first, then run through sim/api on N threads, each point's figures one Row, delivered in point
// order whatever order the threads finish in. No printing, no files: the CLI writes the rows
// (sim/sweep/rows.hpp formats them).

#include <cstddef>
#include <functional>
#include <map>
#include <stop_token>
#include <string>
#include <vector>

#include "models/base/result.hpp"
#include "sim/io/sweep_reader.hpp"

namespace hetsim::sweep {

/// One pool's memory verdict in a row.
struct PoolFigures {
  std::string name;
  double peak_bytes = 0;      ///< per device, the pool's worst stage
  double capacity_bytes = 0;  ///< per device
  int devices = 0;            ///< of the pool the plan uses
  bool fits = true;
};

/// One point's outcome. A point that fails (its plan does not fit, the step is too large to
/// simulate, no plan fits the search) is a row with its error, never the end of the sweep.
struct Row {
  std::size_t point = 0;
  std::vector<std::string> values;  ///< the sweep's columns (SweepSpec::columns)
  ErrorKind kind = ErrorKind::BadInput;
  bool ok = false;     ///< ran and fits; else `error` says why (figures are kept for DoesNotFit)
  std::string error;   ///< the first diagnostic, formatted ("" when ok)
  bool has_figures = false;
  double step_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double time_to_train_s = 0;  ///< 0 when the scenario gives no token target
  double goodput = 1;          ///< fraction of wall time kept training
  double effective_time_to_train_s = 0;  ///< time_to_train / goodput
  double cost_to_train_usd = 0;
  /// With [variability] (simulate and plan): percentiles of the sampled steps.
  bool sampled = false;
  double step_p50_s = 0, step_p90_s = 0, step_p99_s = 0;
  int devices = 0;
  std::string plan;  ///< report::plan_summary of the plan evaluated (the search's best for Plan)
  std::vector<PoolFigures> pools;

  /// "ok", or kind_name(kind): "does_not_fit", "bad_input", "environment", "internal".
  [[nodiscard]] std::string status() const;
};

/// Runs point `i` of `doc` (its command, engine, objective) in this thread.
/// Requires: i < doc.spec().points. SimGrid runs one simulation per process: a sweep with
/// `engine = "simgrid"` needs `RunOptions::runner` to run each point elsewhere (the CLI runs
/// each in a child process); here such a point is an Environment error after its first.
[[nodiscard]] Row run_point(const io::SweepDocument& doc, std::size_t i);

/// The outcome of checking every point before any runs.
struct Validation {
  Diagnostics errors;            ///< of the first `max_reported` invalid points, in point order
  std::size_t invalid = 0;       ///< points that are not valid scenarios
  std::vector<std::string> pools;  ///< the pool names of point 0 (the rows' pool columns)
  bool variability = false;        ///< point 0 has [variability] (the rows' percentile columns)
};

/// Reads every point's scenario (and, for estimate and simulate, its [parallel] plan) on
/// `jobs` threads. Deterministic: the same errors whatever `jobs`.
[[nodiscard]] Validation validate(const io::SweepDocument& doc, int jobs, std::size_t max_reported = 20);

struct RunOptions {
  int jobs = 1;
  std::size_t first = 0;  ///< points before it are done already (--resume): not run
  /// Called for each row in point order, on the thread that called run().
  std::function<void(const Row&)> on_row;
  /// Runs one point instead of run_point (the CLI's child process for SimGrid); may be empty.
  std::function<Row(std::size_t)> runner;
  std::stop_token stop;  ///< asked, no new point starts; rows already run are still delivered in order
  /// Called, on the thread that called run(), for each row that finished before an earlier
  /// point's: it waits for its turn, and a crash meanwhile would lose it (the CLI keeps such
  /// rows in FILE.pending); may be empty.
  std::function<void(const Row&)> on_waiting;
  /// Rows of points ≥ first finished by an earlier run (FILE.pending): delivered in their turn,
  /// not run again.
  std::map<std::size_t, Row> finished;
};

/// Runs points [first, points) on `jobs` threads (at most jobs·16 rows wait for an earlier one).
/// Returns how many rows were delivered (fewer than asked only when stopped).
std::size_t run(const io::SweepDocument& doc, const RunOptions& opts);

}  // namespace hetsim::sweep
