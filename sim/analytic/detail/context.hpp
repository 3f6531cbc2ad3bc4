#pragma once
// What stage_costs derives from a scenario and a plan once, before pricing any stage (private to
// sim/analytic): read by the per-layer costs (detail/layer_cost), the data-parallel sync
// (detail/dp_sync), the memory (detail/stage_memory) and stage_costs itself.

#include <vector>

#include "models/cost/memory.hpp"
#include "models/workload/model_spec.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::analytic::detail {

struct PlanContext {
  const Scenario& s;
  const plan::Plan& p;
  const workload::ModelSpec& m;
  const workload::TrainingSpec& tr;
  const hw::ClusterSpec& cl;
  hw::Dtype dt;
  double e;  ///< activation bytes on the wire
  workload::ParamCount pc;
  cost::StateBytes sb;
  int replicas;
  /// Where each stage's block starts in its pool (as the SimGrid engine places it): the DP rings
  /// of several groups and whether a pipeline message stays in a node depend on it.
  std::vector<std::vector<int>> starts;
  /// A rank's tokens of one micro-batch: seq_len/cp of each sequence under context parallelism.
  int seq;
  double sbh;  ///< micro_batch · seq · hidden
  /// Expert parallelism: a rank holds 1/ep of each MoE layer's routed experts.
  int ep;
  /// A MoE model's dense layers (first_dense_layers, moe_layer_freq) are priced as the dense
  /// model they are; a stage holding both kinds gets the mean of its layers' costs per layer.
  workload::ModelSpec dense_m;

  /// A MoE layer's parameters on one device of a stage of `tp`: the dense part split over tp,
  /// the routed experts 1/ep of them split over expert_tp (docs/cost-models.md#expert-tensor-parallelism).
  [[nodiscard]] double moe_layer_params(int tp) const;
};

/// FSDP2's per-parameter tensors under ZeRO 3 (TrainingSpec::zero3_copy_out) on a GPU: each
/// gathered layer is copied out of the all-gather buffer, and each reduce-scatter's input packed
/// from the gradients first. TPUs (JAX/XLA) gather where the computation reads.
[[nodiscard]] inline bool fsdp2_copies(const plan::Plan& p, const workload::TrainingSpec& tr, const hw::DeviceSpec& dev) {
  return p.zero >= 3 && tr.zero3_copy_out && dev.vendor != "google";
}

/// The context of pricing plan `p` on scenario `s`. Requires: p validated against s.
[[nodiscard]] PlanContext plan_context(const Scenario& s, const plan::Plan& p);

}  // namespace hetsim::analytic::detail
