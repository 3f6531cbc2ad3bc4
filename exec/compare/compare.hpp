#pragma once
// Prediction against measurement: step time, time per task kind (each collective apart) and per
// op class inside the compute tasks, peak memory per device, and the tasks with the largest misses.

#include <string>
#include <vector>

#include "sim/io/trace_json.hpp"

namespace hetsim::exec {

struct KindError {
  std::string kind;
  double predicted_s = 0, measured_s = 0;  ///< summed over the step's tasks of that kind
  [[nodiscard]] double error() const { return measured_s > 0 ? predicted_s / measured_s - 1 : 0; }
};

struct TaskMiss {
  std::string device, name;
  double predicted_s = 0, measured_s = 0;
};

struct Comparison {
  double predicted_step_s = 0, measured_step_s = 0;
  std::vector<KindError> kinds;
  /// Inside the compute tasks, per op class (gemm, attention, norm, elementwise, embedding,
  /// loss, optimizer): from the traces' parts; empty when a trace has none.
  std::vector<KindError> classes;
  std::vector<std::pair<double, double>> peak_bytes;  ///< per device: predicted, measured
  std::vector<std::string> devices;                   ///< their labels
  std::vector<TaskMiss> worst;                        ///< largest |predicted − measured| first
  std::vector<std::string> notes;                     ///< how the run differed from the plan (--fit)
  std::string failure;  ///< a device that failed after the steps compared here were measured
  [[nodiscard]] double step_error() const { return predicted_step_s / measured_step_s - 1; }
};

/// Requires: both traces of the same task graph (same tasks in the same order); checked.
[[nodiscard]] Result<Comparison> compare(const io::TraceFile& predicted, const io::TraceFile& measured, int worst = 5);
[[nodiscard]] std::string comparison_text(const Comparison& c);
[[nodiscard]] std::string comparison_json(const Comparison& c);

}  // namespace hetsim::exec
