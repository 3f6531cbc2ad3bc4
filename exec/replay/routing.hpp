#pragma once
// Real routing of a mixture-of-experts layer for the replay (expert parallelism, issue 15): which
// experts each token of an EP group picks, drawn from the model's planned load over the experts
// (expert_load: a histogram or a Zipf skew; uniform without one) by a generator seeded from the
// scenario's seed and the (layer, micro-batch, group) it routes, so a replay routes the same way
// every time. What the replay runs from it: each local expert's GEMM rows (a grouped GEMM of the
// real per-expert token counts) and the all-to-all's message per peer.

#include <cstdint>
#include <vector>

#include "models/workload/model_spec.hpp"

namespace hetsim::exec {

/// One MoE layer's routing within one EP group for one micro-batch.
struct LayerRouting {
  /// rows[src][expert]: rows that EP rank src's tokens send to `expert` (all experts; expert x
  /// lives on EP rank x / (experts / ep)). Dropless: the tokens that picked it; dropping
  /// (capacity_factor, dropless = false): the capacity, every buffer padded to it (the tokens
  /// above it dropped), as Megatron-Core's capacity mode runs.
  std::vector<std::vector<std::int64_t>> rows;
  /// The most rows one EP rank sends another (itself included): the uniform message size the
  /// all-to-all carries (its buffers padded to the busiest pair).
  std::int64_t max_pair_rows = 0;
  /// Rows expert `x` runs, summed over the sources.
  [[nodiscard]] std::int64_t expert_rows(int x) const;
};

/// Routes `tokens` tokens of each of `ep` EP ranks to `top_k` distinct experts each, with the
/// probabilities of m.expert_load (uniform when empty). Deterministic in (seed, layer,
/// micro_batch, group). Requires: m.moe(); ep ≥ 1 divides m.experts; top_k ≤ experts.
[[nodiscard]] LayerRouting route_layer(const workload::ModelSpec& m, int ep, std::int64_t tokens, std::uint64_t seed,
                                       int layer, int micro_batch, int group);

}  // namespace hetsim::exec
