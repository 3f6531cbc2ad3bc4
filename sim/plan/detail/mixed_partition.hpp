#pragma once
// The layer partition of a mixture-of-experts model whose MoE and dense layers cost differently
// (private to sim/plan): partition_layers hands such models here.

#include <cstddef>

#include "models/workload/model_spec.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::planner::detail {

/// A mixture-of-experts model with dense layers (first_dense_layers, moe_layer_freq): a MoE
/// layer and a dense one cost differently, so where a stage's layers fall matters.
[[nodiscard]] bool mixed_layers(const workload::ModelSpec& m);

/// The layer split of such a model. Stage i holding l layers from `first`, n of them MoE layers,
/// takes a_i + b_moe·n + b_dense·(l − n) per micro-batch and f_i + k_moe·n + k_dense·(l − n) of
/// memory, as stage_costs prices a mixed stage (the mean of its MoE and dense layers; the two
/// lines come from pricing the plan as if every layer were MoE and as if every layer were
/// dense). The smallest bottleneck T is bisected; at each T the stages are filled in order, each
/// taking the most layers (a multiple of v, leaving v for each later stage) that keep it within T
/// and its memory. A stage's time and memory only grow with its range, so the fill finds a split
/// whenever one exists within T. O(stages · log layers) per fill.
/// Sets the layers of group `g` of `p` (its stages' pools and tp set); false when no split fits.
[[nodiscard]] bool partition_mixed_layers(const Scenario& s, plan::Plan& p, std::size_t g);

}  // namespace hetsim::planner::detail
