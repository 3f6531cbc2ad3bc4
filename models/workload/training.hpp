#pragma once
// How a model is trained: batch, sequence, number format, optimizer, how many tokens.

#include <optional>

#include "models/hw/device.hpp"

namespace hetsim::workload {

enum class Optimizer { Adam, Sgd };
/// Which fused attention kernels run: the device's fastest published ones (Transformer Engine's
/// cuDNN attention, FlashAttention-3), FlashAttention-2's (PyTorch's scaled_dot_product_attention
/// flash backend), the Triton FlashAttention of 2022 (flash_attn_triton.py, what LLM Foundry's
/// attn_impl "triton" runs), or auto: FlashAttention-2 when the kernels are PyTorch eager ones
/// (fused_kernels = false), else the vendor's.
enum class AttentionKernel { Auto, Vendor, Fa2, Triton };
/// Which kernels run the norms: fused ones (Transformer Engine, Apex: one kernel each way, the
/// weight gradient reduced in the same pass), PyTorch's native layer_norm / rms_norm kernels (a
/// second backward kernel re-reads the input and its gradient for the weight gradient), or the
/// norm written out in elementary ops (RMSNorm as pow, mean, rsqrt, products: torchtitan's 2024
/// RMSNorm, Hugging Face's LlamaRMSNorm). Auto: fused with fused_kernels, else native for
/// LayerNorm (nn.LayerNorm) and eager for RMSNorm.
enum class NormKernel { Auto, Fused, Native, Eager };
/// Which kernels run the cross-entropy: on fp32 logits (Megatron-LM's vocabulary-parallel loss,
/// PyTorch's cross_entropy on .float() logits: 38 + 14 bytes per logit), or one fused kernel
/// each way over the 16-bit logits (torch.compile's Inductor, FlashAttention's xentropy, Liger).
enum class LossKernel { Fp32, Fused };
/// How fp8 training scales each tensor before its cast: from the amax history of earlier steps
/// (Transformer Engine's DelayedScaling: the cast kernel records this step's amax as it goes) or
/// from the tensor itself (TE's Float8CurrentScaling, torchao's dynamic tensorwise Float8: an amax
/// reduction reads the tensor before the cast can start).
enum class Fp8Scaling { Delayed, Current };
/// How a MoE layer's local experts run their GEMMs: as one grouped GEMM whose tiles share the
/// device's waves (Transformer Engine's GroupedLinear, CUTLASS grouped GEMMs, DeepGEMM,
/// torch._grouped_mm), or one GEMM after another (a loop: Megatron-Core's SequentialMLP, the
/// grouped_gemm package's cuBLAS path, Hugging Face's per-expert modules). Auto: grouped with
/// fused_kernels, else loop.
enum class ExpertKernel { Auto, Grouped, Loop };
/// Where each micro-batch's weight gradients accumulate (16-bit training). Fused: the
/// weight-gradient GEMM reads and writes the fp32 main gradient itself (Megatron's gradient-
/// accumulation fusion, Transformer Engine's fuse_wgrad_accumulation). Add: the GEMM writes a
/// 16-bit gradient and a hook adds it into the fp32 main gradient in place, one kernel per
/// weight (Megatron's DDP without the fusion: `main_grad.add_(grad)`). CastAdd: the same after an
/// explicit cast of the gradient to fp32 (DeepSpeed's BF16 optimizer: `hp_grad.add_(lp_grad.to(
/// fp32))`, two kernels per weight). Add16: the same add into a 16-bit accumulator (Megatron-LM
/// of 2021 with fp16 and no fp32 accumulation: its local DDP's hook, or autograd's own in-place
/// accumulation into .grad).
enum class GradAccumulation { Fused, Add, CastAdd, Add16 };

struct TrainingSpec {
  int global_batch = 0;  ///< sequences per optimizer step
  int seq_len = 0;       ///< tokens per sequence
  hw::Dtype precision = hw::Dtype::Bf16;  ///< GEMM and activation format (mixed precision)
  Optimizer optimizer = Optimizer::Adam;
  double tokens = 0;     ///< tokens to train, for time and cost to train; 0 = one step only
  bool flash_attention = true;  ///< fused attention: no s×s score matrix kept in memory
  bool causal = true;           ///< causal mask: fused kernels skip the masked half
  /// Memory-bound kernels fused as Megatron-LM / Transformer Engine fuse them; false: one
  /// PyTorch eager kernel per elementary op (workload::MicroBatchShape::fused_kernels).
  bool fused_kernels = true;
  AttentionKernel attention_kernel = AttentionKernel::Auto;
  NormKernel norm_kernel = NormKernel::Auto;
  LossKernel loss_kernel = LossKernel::Fp32;
  Fp8Scaling fp8_scaling = Fp8Scaling::Delayed;  ///< precision "fp8" only
  ExpertKernel expert_kernel = ExpertKernel::Auto;  ///< MoE models only
  GradAccumulation grad_accumulation = GradAccumulation::Fused;
  /// Sequence parallelism: who all-gathers a tensor-parallel GEMM's input. Module: the layer
  /// itself (Transformer Engine's LayerNormLinear / LayerNormMLP / Linear, Megatron's own
  /// layers), after the fp8 cast in fp8 training (its input gathers and output-gradient gathers
  /// move one byte per element); it saves its local shard and gathers it again for the weight
  /// gradient. Framework: the framework gathers the 16-bit input and hands a local GEMM module
  /// the whole of it, which keeps it for the weight gradient (no second gather; more saved
  /// activation): Intel Gaudi's Megatron-DeepSpeed with TE. Unset: framework for fp8 training
  /// on Intel devices, else module.
  enum class SpGather { Module, Framework };
  std::optional<SpGather> sp_gather;
  /// ZeRO-3 copies each gathered layer out of the all-gather buffer into the parameters' own
  /// tensors (FSDP2's copy-out); false where the parameters are views into the gathered buffer
  /// (FSDP1's flat parameters). Ignored on TPUs (XLA gathers in place).
  bool zero3_copy_out = true;
  /// Without sequence parallelism, each tensor-parallel rank sends 1/t of the activation to
  /// the next pipeline stage and the receivers all-gather it (Megatron-LM's scatter-gather,
  /// on by default until Megatron-Core; DeepSpeed's pipeline engine); false: every rank sends
  /// all of it (Megatron-Core, --no-scatter-gather-tensors-in-pipeline).
  bool pipeline_scatter_gather = true;
  /// Bytes per gradient element of the data-parallel reduction (all-reduce or reduce-scatter):
  /// 4 (fp32, Megatron's default for bf16 training) or 2 (Megatron-Core's
  /// grad_reduce_in_fp32 = false, NeMo's grad_sync_dtype = bf16).
  double grad_reduce_bytes = 4;
  /// Mixed precision by torch.autocast over fp32 parameters (HF Trainer, Lightning's
  /// "bf16-mixed", nanoGPT) instead of 16-bit parameters with fp32 master copies (Megatron-LM,
  /// FSDP's param_dtype): every forward casts the weights, the norms and the residual stream run
  /// in fp32, and norm outputs are cast before their GEMMs (workload::MicroBatchShape::autocast).
  bool autocast = false;

  /// Which kernels run fused attention (attention_kernel with auto resolved; never Auto).
  [[nodiscard]] AttentionKernel resolved_attention_kernel() const {
    if (attention_kernel != AttentionKernel::Auto) return attention_kernel;
    return fused_kernels ? AttentionKernel::Vendor : AttentionKernel::Fa2;
  }
  /// Whether the local experts run as one grouped GEMM (expert_kernel resolved).
  [[nodiscard]] bool grouped_experts() const {
    return expert_kernel == ExpertKernel::Grouped || (expert_kernel == ExpertKernel::Auto && fused_kernels);
  }
  [[nodiscard]] double tokens_per_step() const {
    return static_cast<double>(global_batch) * seq_len;
  }
};

}  // namespace hetsim::workload
