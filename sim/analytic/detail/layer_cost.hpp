#pragma once
// A transformer layer's costs on one device, per micro-batch (private to sim/analytic): its
// compute per pass, and the exposed time and calls of its tensor-parallel collectives, its
// expert-parallel all-to-alls and its context-parallel exchange. stage_costs reads them per stage.

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "models/cost/collectives.hpp"
#include "models/workload/layer_ops.hpp"
#include "sim/analytic/detail/context.hpp"

namespace hetsim::analytic::detail {

/// Per-layer costs of a (pool, tp) pair, per micro-batch.
struct LayerCost {
  Duration fwd, bwd, recompute, tp_fwd, tp_bwd, tp_recompute;
  Duration ag, rs, ar;  // one TP collective of the micro-batch's activation
  Duration cp_fwd, cp_bwd, cp_recompute;  // context-parallel exchange, exposed, per pass
  Duration a2a;         // one expert-parallel all-to-all of the micro-batch's routed tokens
  Duration dispatch;    // the same for a dispatch: a2a, or in fp8 (fp8_dispatch)
  // The attention block's part of fwd, bwd and recompute (the ops before mlp_norm; the MLP or
  // MoE block is the rest): where overlap_ep_comm's all-to-alls can hide.
  Duration fwd_attn, bwd_attn, recompute_attn;
  cost::Algorithm ar_algorithm = cost::Algorithm::Ring;
  // The calls behind those times (StageCost's *_calls).
  std::vector<cost::CommCall> tp_fwd_calls, tp_bwd_calls, tp_recompute_calls;
  cost::CommCall ag_call, rs_call, ar_call, a2a_call, dispatch_call;
  std::shared_ptr<const std::vector<workload::Op>> ops;  // the layer's (StageCost::layer_ops)
};

/// The per-layer costs of one plan's stages, per micro-batch: each (pool, tp, layer kind,
/// sharding) priced once (a deep pipeline repeats them, and the planner calls stage_costs a
/// great deal).
class LayerCosts {
 public:
  /// Requires: `ctx` outlives this object.
  explicit LayerCosts(const PlanContext& ctx) : ctx_(ctx) {}

  /// A layer on a device of pool `pool_index` at `tp`: a MoE layer (`moe_kind`) or a dense one.
  /// `sharded`: the stage's parameters are sharded over more than one replica (ZeRO 3 gathers).
  /// The reference lives as long as this object.
  [[nodiscard]] const LayerCost& get(int pool_index, int tp, const workload::MicroBatchShape& shape, bool moe_kind,
                                     bool sharded);

 private:
  // The exchange of keys and values inside attention, exposed, per pass (fwd, bwd, rec).
  void context_parallel(Duration& fwd, Duration& bwd, Duration& rec, const std::vector<workload::Op>& layer,
                        const std::vector<Duration>& tf, const std::vector<Duration>& tb, const hw::PoolSpec& pool,
                        int tp, const workload::MicroBatchShape& shape) const;
  // A MoE layer's dispatch and combine all-to-alls (lc.a2a, lc.dispatch and their calls).
  void expert_exchange(LayerCost& lc, int tp, const hw::PoolSpec& pool) const;
  // The TP collectives of the layer's blocks (lc.ag, rs, ar, tp_* and their calls); `tf`, `tb`:
  // each op's forward and backward time.
  void tensor_parallel(LayerCost& lc, const workload::ModelSpec& lm, int tp, const hw::PoolSpec& pool,
                       const workload::MicroBatchShape& shape, const std::vector<Duration>& tf,
                       const std::vector<Duration>& tb) const;

  const PlanContext& ctx_;
  std::map<std::tuple<int, int, bool, bool>, LayerCost> memo_;
};

}  // namespace hetsim::analytic::detail
