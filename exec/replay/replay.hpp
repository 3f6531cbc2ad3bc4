#pragma once
// Replay: runs a plan's step for real. The schedule is sim/'s own (build_schedule), so the
// measured trace describes exactly the predicted tasks: each simulated device becomes one real
// device driven by one thread, which runs its tasks in the predicted order, waiting for their
// dependencies, on real buffers of the planned shapes and sizes.

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exec/backend.hpp"
#include "sim/io/trace_json.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::exec {

struct Replay;

struct ReplayOptions {
  ReplayOptions(int measured = 3, int discarded = 1) : steps(measured), warmup(discarded) {}  // NOLINT: {steps, warmup}
  int steps = 3;   ///< measured steps; the median one is reported
  int warmup = 1;  ///< steps run first and discarded
  /// Multi-process run (mpirun): one process per real device, this process running the device
  /// whose index is its rank in `world` (backend device `local_device`). Collectives go through
  /// the backend's communicator over sub-groups of `world`; dependencies between devices travel
  /// as messages (activations and gradients as their real payload). Results gather on rank 0.
  ProcessGroup* world = nullptr;
  int local_device = 0;
  /// Called on rank 0 after every measured step with the result so far (to keep measurements
  /// when a later step fails).
  std::function<void(const Replay&)> on_step;
  /// Needed with `world`: a device of this process that fails mid-step cannot leave the
  /// collectives the other processes wait in, so replay hands the failure (kind Environment) to
  /// this callback, which reports it and ends the whole run (ProcessGroup::abort); the library
  /// itself never prints or aborts.
  std::function<void(const Diagnostic&)> on_fatal;
  /// Per pool of the scenario (index as in ClusterSpec::pools): the speed its devices run at
  /// (Backend::open_as; 1 = full). Empty: every device at full speed. So a two-pool scenario
  /// measures pools of unequal speed on one machine (docs/executor.md, Devices of unequal speed).
  std::vector<double> pool_speed;
  /// Per pool of the scenario: the cpu cores each of its devices splits a kernel over
  /// (Backend::open_as; 0 = the backend's own). Empty: every device as the backend opens it. So
  /// pools of one machine are cpu devices of different sizes.
  std::vector<int> pool_cores;
  /// Per pool of the scenario: the memory each of its devices may allocate, bytes (0 = the
  /// backend's own; GPUs: at most their memory). Empty: every device as the backend opens it.
  std::vector<std::size_t> pool_memory;
  /// Per pool of the scenario: the backend device indexes its real devices run on, in the order
  /// the plan lays them out (tp ranks, replicas, stages), taken round-robin when the pool has
  /// more real devices than indexes (they then share a device, as GPU backends share GPUs). An
  /// empty list, or an empty vector: real device d runs on backend device d. So a node with two
  /// GPU models runs each pool on its own GPUs. One process only: under mpirun each process
  /// drives its node-local device, and the hostfile places the pools.
  std::vector<std::vector<int>> pool_devices;
};

struct Replay {
  schedule::TaskGraph graph;   ///< the planned tasks
  engine::Trace predicted;     ///< the native engine's step
  engine::Trace measured;      ///< the median measured step (same task indexes)
  std::vector<std::int64_t> step_ns;  ///< every measured step
  /// Per task, time per op class (gemm, attention, norm, elementwise, embedding, loss,
  /// optimizer): as the cost model prices it, and as measured in the median step.
  std::vector<io::TaskParts> predicted_parts, measured_parts;
  std::vector<std::string> notes;  ///< how the run differed from the plan (formats, transport)
  /// Set when a device failed after some steps were measured: those steps are kept (and
  /// reported), the rest were not run.
  std::optional<Diagnostic> failure;
};

/// Replays `p` on `backend`: every folded device is unfolded into its real devices (tp ranks ×
/// replicas, one thread each), TP and DP collectives run for real among them (the backend's
/// communicators; with several replica groups each layer's DP collective joins the replicas of
/// every group, see dp_groups.hpp), every op of every compute task runs as its kernel (GEMM,
/// attention, norm, elementwise, Adam) in the plan's format and is timed on its own. Fails,
/// naming the device and task, when the plan needs devices the backend lacks, when a device
/// runs out of memory (both ErrorKind::Environment), or when it cannot run the plan (BadInput,
/// key "plan"): groups whose tensor-parallel degrees would cut a layer into more than
/// kMaxDpChunks chunks (dp_groups.hpp; other differing degrees reshard by chunks), or several
/// groups under ZeRO 2 or 3.
[[nodiscard]] Result<Replay> replay(const Scenario& s, const plan::Plan& p, Backend& backend, const ReplayOptions& o);

/// The distinct GEMM shapes (m, n, k) that replaying `p` runs: every GEMM op of every stage's
/// micro-batch, forward (m, n, k) and backward (m, k, n) and (k, n, m), rounded as the replay
/// rounds them; sorted. Requires: p validated against s. (hetsim-exec calibrate --shapes-of.)
[[nodiscard]] std::vector<std::array<int, 3>> gemm_shapes(const Scenario& s, const plan::Plan& p);

}  // namespace hetsim::exec
