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
  /// The hierarchical dispatch (plan::Plan::EpDispatch::Hierarchical) over `nodes` nodes of
  /// ep/nodes EP ranks each (EP rank q on node q / (ep/nodes), at local index q mod (ep/nodes)):
  /// the most tokens one rank sends the rank of its local index on another node (each token
  /// once per node its experts are on), and the most tokens one rank forwards to another rank
  /// of its node (those with an expert there, once each, of the tokens that landed on it: its own
  /// and those its local index received from the other nodes). 0 when nodes ≤ 1.
  std::int64_t max_rail_rows = 0;
  std::int64_t max_fanout_rows = 0;
  /// The hierarchical dispatch inside one node: the most tokens one EP rank sends another
  /// (itself included), each token once per rank its experts are on (DeepEP's rank-wise
  /// dispatch; the receiving rank expands it to its experts). The fan-out above counts tokens
  /// per rank likewise.
  std::int64_t max_rank_rows = 0;
};

/// Routes `tokens` tokens of each of `ep` EP ranks to `top_k` distinct experts each, with the
/// probabilities of m.expert_load (uniform when empty); with group-limited routing
/// (m.expert_groups) a token first draws expert_group_topk distinct groups (by their summed
/// load) and its experts from those. Deterministic in (seed, layer, micro_batch, group).
/// `nodes` > 1: also the hierarchical dispatch's messages over that many nodes.
/// Requires: m.moe(); ep ≥ 1 divides m.experts; top_k ≤ experts; nodes ≥ 1 divides ep.
[[nodiscard]] LayerRouting route_layer(const workload::ModelSpec& m, int ep, std::int64_t tokens, std::uint64_t seed,
                                       int layer, int micro_batch, int group, int nodes = 1);

}  // namespace hetsim::exec
