#pragma once
// What a stage keeps in memory besides its parameters' state (private to sim/analytic): the
// activations per layer and at the pipeline's edges, the logits, ZeRO 3's gathered weights, a
// layer's backward working set, and the reserves of cost::DeviceMemoryInput.

#include "sim/analytic/detail/context.hpp"
#include "sim/analytic/stage_cost.hpp"

namespace hetsim::analytic::detail {

/// Prices stage `st`'s memory into `c` (act_per_layer, act_edge, logits, gathered,
/// backward_working, memory). `sp`: sequence parallelism on the stage; `first`, `last`: the
/// stage's place in its pipeline; `n_moe`: how many of its layers are MoE layers; `shard`: the
/// replicas its ZeRO state shards over. Requires: c's parameters set.
void price_memory(const PlanContext& ctx, const plan::Stage& st, bool sp, bool first, bool last, int n_moe, int shard,
                  StageCost& c);

}  // namespace hetsim::analytic::detail
