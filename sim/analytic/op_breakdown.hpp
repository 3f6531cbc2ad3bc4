#pragma once
// Where the compute time of a plan goes, op by op: for each distinct stage (pool, tensor
// parallelism, first/last), the forward and backward time of every op of one micro-batch, with
// its FLOPs, bytes and what binds it. The very numbers stage_costs sums (cost::op_time), so the
// table explains the estimate rather than re-deriving it.

#include <string>
#include <vector>

#include "models/cost/compute.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::analytic {

/// One op of one micro-batch on one device (its shape, FLOPs, bytes and kernels), priced in
/// both passes.
struct OpCost {
  workload::Op op;
  cost::OpTime fwd, bwd;
};

/// The ops of one part of a stage's micro-batch: a transformer layer (run `repeat` = layers
/// times), the embedding or the head (once).
struct OpPart {
  std::string part;  ///< "layer", "embedding", "head"
  int repeat = 1;
  std::vector<OpCost> ops;
  /// The pass as the device runs it behind its host: max(Σ op time, kernels · host_overhead).
  Duration fwd, bwd;
  bool fwd_host_bound = false, bwd_host_bound = false;
};

/// One distinct stage: its first occurrence (group, stage) and how many stages of the plan are
/// like it.
struct StageOps {
  int group = 0, stage = 0, alike = 1;
  std::string pool, device;
  int tp = 1, layers = 0;
  std::vector<OpPart> parts;
  /// Σ over parts of (fwd + bwd) × repeat: one micro-batch's compute on this stage (no
  /// recompute, no communication).
  [[nodiscard]] Duration compute() const;
};

/// The distinct stages of the plan, in plan order. Requires: p validated against s.
[[nodiscard]] std::vector<StageOps> op_breakdown(const Scenario& s, const plan::Plan& p);

}  // namespace hetsim::analytic
