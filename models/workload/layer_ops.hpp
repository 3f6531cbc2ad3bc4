#pragma once

#include <cstdint>
// One training step of a transformer, op by op: what each kernel computes and moves, for the
// forward and backward pass of one micro-batch on one tensor-parallel rank.

#include <string>
#include <string_view>
#include <vector>

#include "models/base/units.hpp"
#include "models/hw/device.hpp"
#include "models/workload/model_spec.hpp"
#include "models/workload/training.hpp"

namespace hetsim::workload {

enum class OpKind { Gemm, Attention, Norm, Elementwise, Embedding, Loss };

/// Megatron-Core's selective recompute modules (`--recompute-modules`), a bit each: which ops
/// recompute = "selective" re-runs in the backward, and which activations a layer stops keeping
/// (docs/cost-models.md#activations). core_attn: the attention core; layernorm: the two
/// pre-block norms; moe_act: the routed experts' activation function; mla_up_proj: MLA's up
/// projections and RoPE; mlp: a dense layer's MLP; shared_experts: a MoE layer's shared
/// experts; moe: the whole MoE block (router, dispatch, experts, combine).
enum class RecomputeModule : std::uint8_t { CoreAttn, LayerNorm, MoeAct, MlaUpProj, Mlp, SharedExperts, Moe };
using RecomputeModules = std::uint8_t;  ///< a set of RecomputeModule bits
[[nodiscard]] constexpr RecomputeModules module_bit(RecomputeModule m) {
  return static_cast<RecomputeModules>(1u << static_cast<unsigned>(m));
}
[[nodiscard]] constexpr bool has_module(RecomputeModules set, RecomputeModule m) { return (set & module_bit(m)) != 0; }
inline constexpr RecomputeModule kRecomputeModuleList[] = {
    RecomputeModule::CoreAttn, RecomputeModule::LayerNorm,     RecomputeModule::MoeAct, RecomputeModule::MlaUpProj,
    RecomputeModule::Mlp,      RecomputeModule::SharedExperts, RecomputeModule::Moe};
/// Megatron-Core's name of a module ("core_attn", "layernorm", …), as scenarios and plans spell it.
[[nodiscard]] std::string_view recompute_module_name(RecomputeModule m);
/// Megatron-Core's default modules under selective recompute (Korthikanti et al.'s selective).
inline constexpr RecomputeModules kDefaultRecomputeModules = module_bit(RecomputeModule::CoreAttn);
[[nodiscard]] std::string_view op_kind_name(OpKind k);

/// One op (a kernel, or `count` identical kernels) on one TP rank for one micro-batch.
struct Op {
  std::string name;  ///< "qkv", "attention", "mlp_up", …
  OpKind kind = OpKind::Elementwise;
  double m = 0, n = 0, k = 0;  ///< GEMM shape of one kernel (C[m×n] = A[m×k]·B[k×n])
  int count = 1;               ///< identical GEMMs (one per MoE expert, or per head when batched)
  bool batched = false;        ///< the `count` GEMMs run as one batched kernel
  double operand_bytes = 2;    ///< GEMM: bytes per element of A, B and C
  /// GEMM: bytes per element the weight-gradient kernel moves for its output (8: an fp32 main
  /// gradient read and written, as gradient-accumulation fusion does); 0: operand_bytes.
  double wgrad_out_bytes = 0;
  double elems = 0;            ///< memory-bound ops: elements of the tensor they stream
  double seq = 0;              ///< attention: sequence length (its efficiency depends on it)
  double head_dim = 0;         ///< attention: head dimension (0: priced as 128)
  bool causal = true;          ///< attention: causal mask (masked blocks skipped)
  /// attention: which kernels (resolved: Vendor, Fa2 or Triton; cost::op_time prices them)
  AttentionKernel attention_kernel = AttentionKernel::Vendor;
  Flops fwd_flops;             ///< executed in the forward pass (all kernels)
  Flops bwd_flops;             ///< executed in the backward pass
  Bytes fwd_bytes;             ///< read + written in the forward pass
  Bytes bwd_bytes;
  Flops model_flops;           ///< forward FLOPs by the MFU convention (full s×s attention)
  int fwd_kernels = 1;
  int bwd_kernels = 1;
  RecomputeModules modules = 0;  ///< the recompute modules the op belongs to (selective recompute)
  /// Share of the forward re-run in backward under per-op selective checkpointing (PyTorch's
  /// selective activation checkpointing with torchtitan's "op" policy: every second matmul of
  /// a layer and every op that is neither a matmul nor fused attention are recomputed; the
  /// other matmuls' and fused attention's outputs are kept). 0..1.
  double op_recompute = 0;
  bool keep_16bit = false;  ///< runs in bf16 even in fp8 training (output layer, attention)
  /// Memory-bound op whose kernels take PyTorch's non-vectorized paths (strided or broadcast
  /// operands, dtype-converting copies): priced at hw::Efficiency::unvectorized_memory.
  bool unvectorized = false;
  /// One of unfused attention's s×s ops (attn_scores, softmax, attn_context): its traffic
  /// priced at hw::Efficiency::score_memory.
  bool score_traffic = false;
};

/// The shape of the work one TP rank does for one micro-batch.
/// How context-parallel ranks exchange keys and values (Transformer Engine's cp_comm_type):
/// Ring ("p2p"), cp − 1 sends beside cp attention kernels a pass, one per block of keys, whose
/// partial outputs merge; AllGather, the keys and values gathered (the rank's two chunks against
/// them: 2 kernels); AllToAll (DeepSpeed-Ulysses), queries, keys and values swapped from sequence
/// to head shards, one kernel over the whole sequence with heads/cp.
enum class CpExchange : std::uint8_t { Ring, AllGather, AllToAll };

struct MicroBatchShape {
  int micro_batch = 1;  ///< sequences
  int seq_len = 0;      ///< tokens of each sequence on this rank: the sequence's length / cp
  int tp = 1;
  bool sequence_parallel = true;  ///< norms/dropouts split over TP ranks (Korthikanti et al.)
  hw::Dtype dtype = hw::Dtype::Bf16;
  bool flash_attention = true;
  bool causal = true;
  /// Fused memory-bound kernels as Megatron-LM / Transformer Engine launch them (bias+GeLU,
  /// bias+dropout+add, RoPE, softmax); false: one PyTorch eager kernel per elementary op.
  bool fused_kernels = true;
  /// Which kernels run fused attention (TrainingSpec::resolved_attention_kernel: the vendor's
  /// newest, FlashAttention-2's through PyTorch SDPA, or the Triton FlashAttention).
  AttentionKernel attention_kernel = AttentionKernel::Vendor;
  /// Which kernels run the norms (TrainingSpec::norm_kernel; auto resolves by fused_kernels
  /// and the model's norm).
  NormKernel norm_kernel = NormKernel::Auto;
  LossKernel loss_kernel = LossKernel::Fp32;  ///< TrainingSpec::loss_kernel
  /// The local experts' GEMMs run as one grouped GEMM (TrainingSpec::grouped_experts): their
  /// tiles share the device's waves, one launch; false: one GEMM per expert, one after another.
  bool grouped_experts = true;
  /// fp8 tensors scaled from their own amax (TrainingSpec::fp8_scaling): every fp8 cast of a
  /// GEMM input or output gradient is preceded by an amax reduction over its 16-bit source.
  bool fp8_current_scaling = false;
  /// Where the weight gradients accumulate (TrainingSpec::grad_accumulation): in the GEMM
  /// (fused), or written in 16 bits and added into the fp32 main gradient by kernels of their
  /// own after the backward (add, cast_add).
  GradAccumulation grad_accumulation = GradAccumulation::Fused;
  /// torch.autocast over fp32 parameters (TrainingSpec::autocast): per micro-batch, each weight
  /// is cast to 16 bits in the forward and its gradient back to fp32 in the backward (6 bytes
  /// per parameter each way); norms and residual adds read and write fp32; the norm outputs
  /// that feed GEMMs are cast to 16 bits (and their gradients back): 6 bytes per element each.
  bool autocast = false;
  /// Expert parallelism (plan::Plan::ep): each rank holds experts/ep of a MoE layer's routed
  /// experts and runs the tokens of its ep peers that chose them.
  int ep = 1;
  /// The routed experts' tensor parallelism (plan::Plan::expert_tp); 0: tp.
  int expert_tp = 0;
  /// Context parallelism (plan::Plan::cp): the sequence is cp × seq_len long and split over cp
  /// ranks; each rank's queries attend to the whole sequence's keys.
  int cp = 1;
  CpExchange cp_exchange = CpExchange::Ring;  ///< how (plan::Plan::cp_comm)
};

/// The ops of one transformer layer (attention block, then MLP or MoE block).
/// Requires: tp divides heads, kv_heads (or kv_heads divides tp: KV heads are replicated) and
/// ffn_hidden; checked by the plan validator before this is called.
[[nodiscard]] std::vector<Op> layer_ops(const ModelSpec& m, const MicroBatchShape& s);
/// Token (and position) embedding lookup, on the first pipeline stage.
[[nodiscard]] std::vector<Op> embedding_ops(const ModelSpec& m, const MicroBatchShape& s);
/// Final norm, output projection (vocab split over TP ranks) and cross-entropy loss, on the
/// last pipeline stage.
[[nodiscard]] std::vector<Op> head_ops(const ModelSpec& m, const MicroBatchShape& s);

/// Model FLOPs of one training step (forward + backward = 3 × forward) by the convention of
/// Narayanan et al. 2021 / Megatron-LM: every GEMM of every layer and the output layer, and the
/// full (unmasked) s×s attention, no recompute. For GPT with MHA and 4h MLP this equals
/// 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)).
[[nodiscard]] Flops model_flops_per_step(const ModelSpec& m, const TrainingSpec& t);

}  // namespace hetsim::workload
