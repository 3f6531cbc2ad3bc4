#pragma once
// The native discrete-event engine: runs a TaskGraph in integral nanoseconds and records when
// every task ran, each device's memory over time, stream occupancy and the critical path.

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <stop_token>
#include <vector>

#include "models/base/result.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::engine {

using schedule::SimTime;

enum class Phase : std::uint8_t { Complete };  // same-time order; only completions are queued

/// Event order: time, then phase, then insertion counter. Never a pointer or a hash.
struct EventKey {
  SimTime time = 0;
  Phase phase = Phase::Complete;
  std::uint64_t seq = 0;
  auto operator<=>(const EventKey&) const = default;
};

struct MemoryPoint {
  SimTime time = 0;
  std::int64_t bytes = 0;  ///< live bytes on the device after this change (baseline included)
};

/// What happened in one simulated step. Indexes follow the TaskGraph.
struct Trace {
  SimTime makespan = 0;
  std::vector<SimTime> start, end;                         ///< per task
  std::vector<std::vector<MemoryPoint>> memory;            ///< per device, in time order
  std::vector<std::int64_t> peak_bytes;                    ///< per device, live bytes
  std::vector<std::array<SimTime, schedule::kStreams>> busy;  ///< per device and stream
  std::vector<std::uint32_t> critical_path;                ///< task ids, earliest first
  std::uint64_t events = 0;
};

/// Progress and cancellation of a run: `progress` gets the fraction of tasks done (every 2¹⁶
/// events and at the end); when `stop` is asked, the run ends within 2¹⁶ events with
/// stopped_error(). Both may be empty.
struct RunControl {
  std::stop_token stop;
  std::function<void(double)> progress;
};

/// The error of a run ended by its stop token (Environment kind).
[[nodiscard]] Diagnostic stopped_error();

/// Runs the graph: a task starts when all its predecessors have ended (and, for a collective,
/// when all its members can start). Fails, naming a task, if some tasks can never run.
/// `compute_factor`, when not empty (one per device of g), multiplies the duration of every
/// compute-stream task of that device (rounded to the nanosecond; a factor of exactly 1 leaves
/// the duration as it is): stragglers and jitter (sim/engine/variability.hpp).
[[nodiscard]] Result<Trace> run_native(const schedule::TaskGraph& g, const RunControl& control = {},
                                       std::span<const double> compute_factor = {});

/// `d` × `factor`, rounded to the nearest nanosecond; `d` itself when factor is exactly 1.
[[nodiscard]] SimTime scaled(SimTime d, double factor);

}  // namespace hetsim::engine
