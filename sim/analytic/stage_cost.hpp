#pragma once
// What each pipeline stage of a plan costs, per micro-batch and per transformer layer, so that
// the closed-form estimate and the schedule (which cuts stages into chunks and micro-batches)
// use the very same numbers. Formulas: docs/cost-models.md.

#include <algorithm>
#include <memory>
#include <vector>

#include "models/cost/collectives.hpp"
#include "models/cost/memory.hpp"
#include "models/workload/layer_ops.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::analytic {

/// Megatron-LM's default gradient bucket: 40 M parameters, or 1 M per data-parallel rank when
/// that is more (`max(40000000, 1000000 * dp)`, megatron/core/distributed/
/// distributed_data_parallel.py, core_r0.7–0.9; docs/research-missing-time.md, part 2).
inline constexpr double kBucketParams = 40e6;
/// Megatron-Core's default bucket for a data-parallel group of `dp_ranks` ranks.
[[nodiscard]] inline double bucket_params(int dp_ranks) { return std::max(kBucketParams, 1e6 * dp_ranks); }

/// Costs of one stage of one replica group on one of its devices.
struct StageCost {
  // Per micro-batch and per transformer layer:
  Duration layer_fwd, layer_bwd, layer_recompute;
  Duration layer_tp_fwd, layer_tp_bwd, layer_tp_recompute;  ///< exposed TP collectives
  /// Expert parallelism: a MoE layer's token dispatch and combine all-to-alls (two each pass,
  /// blocking: the experts wait for their tokens, the next block for their outputs).
  Duration layer_ep_fwd, layer_ep_bwd, layer_ep_recompute;
  /// Context parallelism: the exchange of keys and values inside attention, exposed
  /// (docs/cost-models.md#context-parallelism).
  Duration layer_cp_fwd, layer_cp_bwd, layer_cp_recompute;
  // Per micro-batch, once: the embedding (first stage) and the head (last stage), with their
  // TP collectives (forward and backward together).
  Duration emb_fwd, emb_bwd, emb_tp;
  Duration head_fwd, head_bwd, head_tp;
  /// One activation message to the next stage (its gradient comes back at the same size);
  /// 0 on the last stage.
  Duration send_next;
  /// Interleaved, on the last stage: one message between it and the first stage (its chunks
  /// hand over to the first stage's next chunk; the gradient comes back); 0 otherwise.
  Duration send_wrap;
  /// pipeline_scatter_gather without sequence parallelism: the sender splits each message over
  /// its TP ranks and this stage's ranks all-gather it on receipt, one TP all-gather of the
  /// micro-batch's activation per received message (0 otherwise), blocking like the layers'
  /// TP collectives; received per micro-batch: `regathers_fwd` activations, `regathers_bwd`
  /// gradients (v each when interleaved, less the pipeline's ends).
  Duration regather;
  int regathers_fwd = 0, regathers_bwd = 0;
  double params = 0;    ///< parameters on one device, after TP, before ZeRO
  /// Parameters per gradient bucket (bucket_params of the DP group; infinity: one bucket; ZeRO 2:
  /// 40 M; ZeRO 3: a layer's, one collective per layer).
  double bucket = kBucketParams;
  double dp_buckets = 0;  ///< collectives each DP sync of the stage is cut into (dense + experts)
  double params_layer = 0;  ///< of which each transformer layer holds this many
  double expert_params = 0; ///< of params, routed-expert parameters (1/ep of the stage's experts)
  int expert_fold = 1;      ///< tp / expert_tp: how many times more expert-data-parallel ranks than shard/ep
  double params_emb = 0;    ///< the embedding (first stage)
  double params_head = 0;   ///< output layer or tied copy, final norm (last stage)
  Bytes act_per_layer;  ///< activations kept per layer per micro-batch
  Bytes act_edge;       ///< the embedding output kept on the first stage
  Bytes logits;         ///< bf16 logits and their fp32 copy (last stage), during its head work
  Bytes gathered;       ///< ZeRO-3: two layers' weights gathered ahead of use, during compute
  Bytes backward_working;  ///< a layer's backward: recomputed activations + gradients in flight
  /// One gradient all-reduce (ZeRO 0) / reduce-scatter of the whole stage; under FSDP2 (ZeRO 3
  /// with zero3_copy_out) with the gradients' pack into its input on the same stream.
  Duration dp_reduce;
  Duration dp_gather;   ///< one parameter all-gather of the whole stage (ZeRO ≥ 1)
  /// Hybrid sharding (ZeRO 2/3 with several replica groups): the dp collectives above run
  /// within the group over `shard_replicas`, and once per step the groups all-reduce their
  /// shards of the stage's gradients (this). 0 otherwise.
  Duration dp_cross;
  int shard_replicas = 1;  ///< replicas the stage's ZeRO state is sharded over
  /// The algorithms those collectives use (the fastest, or the plan's grad_sync), and the TP
  /// collectives' (the simgrid engine decomposes each into its flows).
  cost::Algorithm dp_reduce_algorithm = cost::Algorithm::Ring;
  cost::Algorithm dp_gather_algorithm = cost::Algorithm::Ring;
  cost::Algorithm dp_cross_algorithm = cost::Algorithm::Ring;
  cost::Algorithm tp_algorithm = cost::Algorithm::Ring;
  Duration optimizer;
  /// The collective calls the communication times above price (cost::CommCall): the schedule
  /// hands them to its tasks, so that the engines and the executor move the bytes the estimate
  /// priced. Per micro-batch and layer (a stage of MoE and dense layers: each kind's calls, the
  /// count scaled by its share of the layers), the TP collectives' and the EP all-to-alls':
  std::vector<cost::CommCall> layer_tp_fwd_calls, layer_tp_bwd_calls, layer_tp_recompute_calls;
  std::vector<cost::CommCall> layer_ep_fwd_calls, layer_ep_bwd_calls, layer_ep_recompute_calls;
  /// Per micro-batch, once: the embedding's and the head's TP collectives (emb_tp, head_tp).
  std::vector<cost::CommCall> emb_tp_calls, head_tp_calls;
  /// `regather`'s all-gather (count 0 where there is none).
  cost::CommCall regather_call{cost::Collective::AllGather, 0, 0};
  /// One pipeline message: the micro-batch's whole activation (each sender rank sends each
  /// receiver rank schedule::pipeline_share of it; send_next prices the largest such piece).
  cost::CommCall send_call{cost::Collective::SendRecv, 0, 0};
  /// The whole stage's data-parallel calls (dp_reduce, dp_gather, dp_cross): the dense part, and
  /// under expert parallelism the routed experts' part (CommCall::experts).
  std::vector<cost::CommCall> dp_reduce_calls, dp_gather_calls, dp_cross_calls;
  /// The ops the compute times above price, per micro-batch on one device (workload::layer_ops
  /// and friends at micro_batch_shape; shared between stages of one shape): a layer of the
  /// stage's kind (a MoE layer where the stage has any, else a dense one), a MoE model's dense
  /// layer where the stage mixes both (`moe_share` of its layers are MoE), the embedding (first
  /// stage) and the head (last stage); null where the stage has none.
  std::shared_ptr<const std::vector<workload::Op>> layer_ops, dense_layer_ops, emb_ops, head_ops;
  double moe_share = 1;
  cost::DeviceMemoryInput memory;  ///< state and reserves; activations and in_flight unset

  [[nodiscard]] Duration fwd(int layers) const { return layer_fwd * layers + emb_fwd + head_fwd; }
  [[nodiscard]] Duration bwd(int layers) const { return layer_bwd * layers + emb_bwd + head_bwd; }
  [[nodiscard]] Duration recompute(int layers) const { return layer_recompute * layers; }
  [[nodiscard]] Duration ep(int layers) const { return (layer_ep_fwd + layer_ep_bwd + layer_ep_recompute) * layers; }
  [[nodiscard]] Duration cp(int layers) const { return (layer_cp_fwd + layer_cp_bwd + layer_cp_recompute) * layers; }
  [[nodiscard]] Duration pipeline_regather() const { return regather * (regathers_fwd + regathers_bwd); }
  [[nodiscard]] Duration tp(int layers) const {
    return (layer_tp_fwd + layer_tp_bwd + layer_tp_recompute) * layers + emb_tp + head_tp + pipeline_regather();
  }
};

/// The shape of the work one device of stage `st` does for one micro-batch.
[[nodiscard]] workload::MicroBatchShape micro_batch_shape(const Scenario& s, const plan::Plan& p,
                                                          const plan::Stage& st);

/// costs[group][stage] for every stage of the plan. Requires: p validated against s.
/// `with_calls` false leaves the per-stage *_calls empty (the closed-form estimate and the
/// planner need the times alone; the schedule needs the calls).
[[nodiscard]] std::vector<std::vector<StageCost>> stage_costs(const Scenario& s, const plan::Plan& p,
                                                              bool with_calls = true);

/// The ranks of a group of `ranks` that share a node, the group's ranks sitting `stride`
/// devices apart in the rank order: devices_per_node / stride of them, at most `ranks`, lowered
/// to a divisor of `ranks` (nodes of unequal shares are priced as the smaller share). An EP
/// group's ranks sit expert_tp apart (Megatron-Core's expert rank order: the stage's tp unless
/// folded), a DP group's tp apart, an expert-DP group's ep · expert_tp apart.
[[nodiscard]] int group_ranks_per_node(int devices_per_node, int stride, int ranks);

/// A device's parameters whose ZeRO state shards over `shard` replicas: the dense part over all
/// of them, the routed experts' over the shard·expert_fold/ep ranks that hold the same experts.
[[nodiscard]] double sharded_params(const StageCost& c, int shard, int ep);

/// One micro-batch's pipeline messages on stage `i` of a group (`costs`: the group's stages,
/// `v` chunks per stage): v sends to the next stage and v from the previous one and, interleaved,
/// the first and the last stage's v − 1 wrap-around sends each way (StageCost::send_wrap), as
/// the schedule runs them.
[[nodiscard]] Duration pipeline_sends(const std::vector<StageCost>& costs, std::size_t i, int v);


}  // namespace hetsim::analytic
