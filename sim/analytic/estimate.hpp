#pragma once
// The analytical estimate of a fixed plan: step time with its breakdown, throughput, MFU, peak
// memory per device type, time and cost to train. Closed forms only (no event simulation); the
// planner ranks with it and `hetsim estimate` prints it. Formulas: docs/cost-models.md.

#include <string>
#include <vector>

#include "models/cost/breakdown.hpp"
#include "models/cost/goodput.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::analytic {

/// One pipeline stage of one replica group, per micro-batch unless stated.
struct StageEstimate {
  int group = 0, stage = 0;
  std::string pool;
  int tp = 1, first_layer = 0, layers = 0;
  cost::TimeBreakdown per_micro_batch;  ///< "forward", "backward", "recompute", "tp comm", "pp comm" (+ "ep comm", "cp comm")
  /// The exposed TP collectives of one micro-batch by the pass they delay: the layers'
  /// "forward", "backward", "recompute", and the "embedding and head" (both passes); they sum
  /// to per_micro_batch "tp comm".
  cost::TimeBreakdown tp_by_pass;
  Duration dp_comm;                     ///< gradient (and parameter) sync per step, unhidden
  Duration dp_exposed;                  ///< what overlap leaves exposed
  Duration optimizer;
  double in_flight = 0;  ///< micro-batches of activations held at peak
  cost::MemoryBreakdown memory;
};

/// Memory verdict for one pool (device type): its worst stage.
struct DeviceEstimate {
  std::string pool;
  std::string device;
  int count = 0;  ///< devices of this pool the plan uses
  int idle = 0;   ///< devices of this pool the plan leaves unused
  Bytes peak_memory;
  Bytes capacity;
  bool fits = true;
  cost::MemoryBreakdown memory;  ///< of the stage with the highest peak
  std::string worst_stage;       ///< "group 0 stage 3"
};

/// One group of identical replicas: how long its pipeline takes per step. In a heterogeneous
/// plan the slowest group sets the step; the others wait at the gradient sync.
struct GroupEstimate {
  int replicas = 0;
  int micro_batches = 0;
  Duration pipeline;  ///< forward + backward of all its micro-batches, bubble included
};

struct Estimate {
  Duration step_time;
  cost::TimeBreakdown step;  ///< "compute", "recompute", "tp comm", ("ep comm", "cp comm",) "pp comm", "pipeline bubble",
                             ///< "dp comm", "optimizer"
  double tokens_per_step = 0;
  double tokens_per_s = 0;
  Flops model_flops_per_step;
  FlopRate flops_per_device;  ///< model FLOP/s per used device
  double mfu = 0;             ///< model FLOP/s over the sum of the used devices' peaks
  double bubble_fraction = 0;
  int devices = 0;
  Duration time_to_train;  ///< 0 when the scenario gives no token target
  /// Interruptions, checkpoints, restarts (docs/cost-models.md#goodput); the effective time to
  /// train is time_to_train / goodput.fraction.
  cost::Goodput goodput;
  Bytes checkpoint;  ///< weights + optimizer state of the whole model
  double cost_to_train_usd = 0;
  double usd_per_hour = 0;           ///< what the plan's devices cost per hour (rent or own)
  double usd_per_million_tokens = 0;
  double energy_kwh = 0;  ///< at TDP × PUE for the whole run
  bool fits = true;
  std::vector<DeviceEstimate> device_types;
  std::vector<StageEstimate> stages;
  std::vector<GroupEstimate> groups;
};

/// The predicted peak per device as a source of kind `k` would measure it, the highest over
/// the plan's pools: allocated = weights + gradients + optimizer + activations + transient;
/// reserved adds the allocator's fragmentation; device adds NCCL buffers and the runtime
/// reserve (CUDA context, workspaces).
[[nodiscard]] Bytes peak_memory_as(const Estimate& e, MemoryKind k);

/// Estimates `p` for scenario `s`. Requires: p was validated against s (sim/io does this).
[[nodiscard]] Estimate estimate(const Scenario& s, const plan::Plan& p);

}  // namespace hetsim::analytic
