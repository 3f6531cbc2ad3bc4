#pragma once
// A stage's data-parallel sync and the optimizer step after it (private to sim/analytic): the
// gradient reduce (or reduce-scatter and parameter gather) bucket by bucket over the replicas,
// hybrid sharding's all-reduce across replica groups, and the optimizer over the shard.

#include "sim/analytic/detail/context.hpp"
#include "sim/analytic/stage_cost.hpp"

namespace hetsim::analytic::detail {

/// Prices stage `st`'s data-parallel sync into `c` (dp_reduce, dp_gather, dp_cross, their
/// algorithms and calls, dp_buckets) and its optimizer step (optimizer). `shard`: the replicas
/// its ZeRO state shards over; `hybrid`: hybrid sharding (Plan::hybrid_sharding). `with_calls`
/// false leaves the calls empty. Requires: c's parameters (params, expert_params, expert_fold)
/// and bucket set.
void price_dp_sync(const PlanContext& ctx, const plan::Stage& st, int shard, bool hybrid, bool with_calls, StageCost& c);

}  // namespace hetsim::analytic::detail
