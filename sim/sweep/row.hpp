#pragma once
// One point's outcome in a sweep (docs/scenario-format.md#sweep): its figures, or why it has
// none. sim/sweep/rows.hpp formats rows as lines of a results file.

#include <cstddef>
#include <string>
#include <vector>

#include "models/base/result.hpp"

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
  /// With [variability]: percentiles of the sampled steps (the closed form's for estimate).
  bool sampled = false;
  double step_p50_s = 0, step_p90_s = 0, step_p99_s = 0;
  int devices = 0;
  std::string plan;  ///< report::plan_summary of the plan evaluated (the search's best for Plan)
  std::vector<PoolFigures> pools;

  /// "ok", or kind_name(kind): "does_not_fit", "bad_input", "environment", "internal".
  [[nodiscard]] std::string status() const;
};

}  // namespace hetsim::sweep
