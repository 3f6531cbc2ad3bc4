#pragma once
// Memory per device: weights, gradients, optimizer state under ZeRO 0–3, activations under
// none/selective/full recompute (Korthikanti et al. 2022) for the micro-batches a schedule keeps
// in flight, communication buffers and a runtime reserve. Sources: docs/cost-models.md#memory.

#include "models/cost/breakdown.hpp"
#include "models/workload/layer_ops.hpp"
#include "models/workload/model_spec.hpp"
#include "models/workload/training.hpp"

namespace hetsim::cost {

/// Activation recomputation: none; selective (Megatron-LM: the attention core, Korthikanti et
/// al. 2022); full (the whole layer from its input); selective_op (PyTorch selective activation
/// checkpointing with torchtitan's per-op policy: every second matmul of a layer and every
/// non-matmul op; dense models only).
enum class Recompute { None, Selective, Full, SelectiveOp };
enum class Schedule { GPipe, OneFOneB, Interleaved };
[[nodiscard]] std::string_view recompute_name(Recompute r);
[[nodiscard]] std::string_view schedule_name(Schedule s);
/// Share (0..1) of an op's forward pass re-run in the backward under recompute `r`; selective
/// re-runs the ops of `modules` (Megatron-Core's --recompute-modules).
[[nodiscard]] double recompute_share(const workload::Op& op, Recompute r,
                                     workload::RecomputeModules modules = workload::kDefaultRecomputeModules);

/// Activation bytes one transformer layer keeps for backward, for one micro-batch of `b`
/// sequences of length `s` on one of `tp` ranks. With MHA, a GeLU 4h MLP, dropout and 2-byte
/// activations this is Korthikanti et al. eq. (2)–(5):
///   none, sequence parallel:     s·b·h·(34 + 5·a·s/h)/t
///   none, no sequence parallel:  s·b·h·(10 + 24/t + 5·a·s/(h·t))
///   selective:                   the 5·a·s/h term disappears
///   full:                        2·s·b·h (/t with sequence parallel): the layer input only
/// Fused (flash) attention keeps no s×s matrix, only a 4-byte log-sum-exp per row and head.
/// `eager`: PyTorch's eager modules (fused_kernels = false) save more without recompute:
/// grouped-query attention's K and V reach the attention kernel repeated to every query head
/// (repeat_kv before scaled_dot_product_attention, which saves its inputs), and SwiGLU's
/// F.silu(gate) · up keeps the SiLU output beside the gate (4 tensors of width f, not 3).
/// `ep`: expert parallelism, for the most loaded rank's MoE rows (workload::moe_rank_load).
/// `modules`: what selective recompute re-runs (Megatron-Core's --recompute-modules); each
/// module's activations are not kept (docs/cost-models.md#activations).
[[nodiscard]] Bytes activation_bytes_per_layer(const workload::ModelSpec& m, double b, double s,
                                               int tp, bool sequence_parallel, Recompute r,
                                               bool flash_attention, hw::Dtype precision,
                                               bool eager = false, int ep = 1,
                                               workload::RecomputeModules modules = workload::kDefaultRecomputeModules);

/// Micro-batches whose activations stage `stage` (0-based, of `stages`) holds at its peak:
/// GPipe m; 1F1B min(p − i, m); interleaved (p − i − 1)·2/v + (v − 1)·p/v + 1/v… see docs.
/// The result is in units of the stage's whole activation footprint.
[[nodiscard]] double in_flight_micro_batches(Schedule sch, int stage, int stages,
                                             int micro_batches, int virtual_stages);

/// Bytes per parameter of weights, gradients and optimizer state before ZeRO sharding.
struct StateBytes {
  double weights = 2;
  double grads = 4;
  double optimizer = 12;
  /// The routed experts' gradient buffers where a framework keeps them apart (NeMo Automodel:
  /// bf16 expert gradients beside fp32 accumulators for the rest); `grads` where they are alike.
  double expert_grads = 4;
};
/// Mixed precision (bf16/fp16/fp8) Adam: 2 + 4 + 12 (bf16 weights, fp32 main gradients, fp32
/// master weights + two moments; Megatron-LM distributed optimizer docs). fp32 Adam: 4 + 4 + 8.
/// SGD with momentum: the optimizer keeps the momentum (+ fp32 master in mixed precision).
/// `autocast` (torch.autocast over fp32 parameters): the parameters are the fp32 weights, so
/// 4 + 4 + 8 in any precision (the weights are what data parallelism gathers, at 4 bytes).
[[nodiscard]] StateBytes state_bytes(hw::Dtype precision, workload::Optimizer opt, bool autocast = false);

/// Everything that decides one device's memory.
struct DeviceMemoryInput {
  double params = 0;          ///< parameters this device holds before ZeRO sharding
  /// Of `params`, routed-expert parameters (already divided by the expert-parallel degree):
  /// their ZeRO shards span the dp/ep ranks of their expert-data-parallel group.
  double expert_params = 0;
  int ep = 1;                 ///< expert-parallel degree
  /// tp / expert_tp (plan::Plan::expert_tp): folded TP ranks are expert-data-parallel ranks too,
  /// so the experts' ZeRO shards span dp·expert_fold/ep ranks.
  int expert_fold = 1;
  StateBytes state;
  int zero = 0;               ///< ZeRO stage 0–3
  int dp = 1;                 ///< data-parallel ranks that share the ZeRO shards
  Bytes activations_per_micro_batch;  ///< all layers of this stage for one micro-batch
  double in_flight = 1;       ///< from in_flight_micro_batches
  Bytes transient;            ///< largest short-lived buffer (logits, gathered ZeRO-3 layer)
  Bytes comm_buffers;         ///< NCCL and bucket buffers
  Bytes runtime_reserve;      ///< CUDA context, allocator and library workspaces
  double fragmentation = 0;   ///< fraction of the allocated bytes lost to fragmentation
};

/// Peak memory of one device, as parts "weights", "gradients", "optimizer", "activations",
/// "transient", "comm buffers", "fragmentation", "runtime reserve".
[[nodiscard]] MemoryBreakdown device_memory(const DeviceMemoryInput& in);

}  // namespace hetsim::cost
