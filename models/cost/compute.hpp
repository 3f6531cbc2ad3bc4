#pragma once
// Compute cost of ops on a device, per op class: GEMMs as waves of output tiles, fused attention
// by sequence length, memory-bound kernels at achieved bandwidth, a device-side cost per kernel
// and a host (framework) floor per pass. Formulas and sources: docs/cost-models.md#compute.

#include <vector>

#include "models/hw/device.hpp"
#include "models/workload/layer_ops.hpp"

namespace hetsim::cost {

enum class Pass { Forward, Backward };

/// Time of `batch` GEMMs C[m×n] = A[m×k]·B[k×n] run as one kernel at `peak`, compute only.
/// With a tile model (efficiency.sms > 0): the kernel runs ⌈tiles·split/sms⌉ waves of output
/// tiles (tile_m × tile_n, ⌈m/tile_m⌉·⌈n/tile_n⌉·batch tiles), each tile taking
/// 2·tile_m·tile_n·(k/split) / (peak·gemm/sms) + tile_overhead; split-K (split = 2, 4, …, 16,
/// adding an fp32 partial-sum pass) is tried when there are fewer tiles than SMs, and the
/// fastest is taken. Without one: 2mnk·batch / (peak · gemm · d/(d + gemm_half_dim)),
/// d = min(m, n, k). `main_loop` (0: efficiency.gemm) replaces `gemm` above, e.g. with
/// efficiency.main_loop(Fp8) for fp8 GEMMs. Requires: m, n, k, batch ≥ 1 (fractions are rounded
/// up), peak > 0.
[[nodiscard]] Duration gemm_compute_time(const hw::DeviceSpec& dev, FlopRate peak, double m,
                                         double n, double k, double batch = 1, double main_loop = 0);

/// The kernel time of one GEMM C[m×n] = A[m×k]·B[k×n] in `dtype` as the model prices it from
/// the efficiency figures alone: max(compute, operands and result at streaming bandwidth) +
/// launch_overhead. Requires: the device has a peak for `dtype`.
[[nodiscard]] Duration gemm_model_time(const hw::DeviceSpec& dev, hw::Dtype dtype, double m, double n, double k);

/// How much slower (> 1) or faster the device's measured GEMMs (DeviceSpec::measured_gemms) say
/// a GEMM of shape (m, n, k) in `dtype` runs than gemm_model_time: with r_i = ln(t_i / model_i)
/// of each measured GEMM i in `dtype` and d_i its distance from (m, n, k) in octaves
/// (√Σ log2² of the ratios of m, n and k),
///   factor = exp(Σ w_i·r_i / (Σ w_i + w_0)),  w_i = 1/d_i²,  w_0 = 1/16,
/// i.e. inverse-distance weighting in log-shape space, pulled towards 1 (the model) beyond about
/// four octaves from every measurement, and exactly t_i/model_i at a measured shape. 1 without
/// measured GEMMs in `dtype`. docs/cost-models.md#measured-gemms.
[[nodiscard]] double measured_gemm_factor(const hw::DeviceSpec& dev, hw::Dtype dtype, double m, double n, double k);

/// Fraction of `peak` that one such GEMM kernel reaches: useful FLOPs / (time · peak).
[[nodiscard]] double gemm_efficiency(const hw::DeviceSpec& dev, FlopRate peak, double m, double n,
                                     double k, double batch = 1);

/// Fused attention efficiency (fwd + bwd together) at sequence length `seq`, head dimension
/// `head_dim` (0: 128) and mask: attention · seq/(seq + attention_half_seq) · head(d) ·
/// (causal ? 1 : attention_noncausal); see hw::Efficiency.
[[nodiscard]] double attention_efficiency(const hw::DeviceSpec& dev, double seq, double head_dim = 0,
                                          bool causal = true);

/// The same for one pass: forward η·(1 + 2.5/ρ)/3.5, backward ρ times that (ρ = attention_bwd),
/// so that a forward and a backward together take what attention_efficiency says; above head
/// dim 192 the backward loses more, to attention_bwd_wide at d ≥ 256.
[[nodiscard]] double attention_pass_efficiency(const hw::DeviceSpec& dev, Pass pass, double seq,
                                               double head_dim = 0, bool causal = true);

/// The Triton FlashAttention of 2022-23 against FlashAttention-2 on the same device:
/// FlashAttention-2 "is around 1.3-1.5x faster than FlashAttention in Triton in the forward pass
/// and around 2x faster in the backward pass" (Dao 2023, arXiv 2307.08691 §4.1, A100 80GB,
/// sequences 512-16k, head dim 64 and 128, with and without the causal mask; its benchmark runs
/// triton.ops.flash_attention): the middle of the forward range, and the backward figure. The
/// Triton version LLM Foundry runs (flash_attn_triton.py, Dao's, from the same Triton tutorial)
/// is by its own header "slightly slower" than the CUDA FlashAttention overall (forward faster,
/// backward slower), which FlashAttention-2 runs about 2x as fast (§4.1): the same ~1.8-2x over
/// a forward and backward.
inline constexpr double kTritonFaForward = 1.4;
inline constexpr double kTritonFaBackward = 2.0;

/// The share of the device's fused-attention rate (attention_pass_efficiency) that `kernel`
/// reaches in `pass`: 1 for the vendor's kernels, attention_fa2 for FlashAttention-2, and
/// attention_fa2 / kTritonFa{Forward,Backward} for the Triton FlashAttention.
[[nodiscard]] double attention_kernel_share(const hw::DeviceSpec& dev, workload::AttentionKernel kernel, Pass pass);

/// Device time of one op (all its kernels) in one pass, in format `dtype`: per kernel
/// max(compute, bytes / (memory_bandwidth · memory)) + launch_overhead. GEMMs: forward
/// C = A·B; backward the data-gradient dA = dC·Bᵀ (m×k×n) and the weight-gradient
/// dB = Aᵀ·dC (k×n×m) kernels, each with its own shape; in fp8 the forward at main_loop (fast
/// accumulation), the backward's two at backward_main_loop (fp32 promotion). Attention: the 16-bit peak at
/// attention_efficiency (fused kernels run in bf16 even in fp8 training). Memory-bound ops:
/// the fp32 vector peak (bf16/16 where no fp32 figure is published), and the bandwidth of their
/// class (norm_memory, loss_memory where set, else memory).
/// Requires: dev.peak_for(dtype) (checked by the scenario loader).
[[nodiscard]] Duration op_time(const hw::DeviceSpec& dev, hw::Dtype dtype,
                               const workload::Op& op, Pass pass);

/// op_time in its parts, for reports: the kernels' compute and memory times (each kernel takes
/// the larger of the two) and their launch gaps; total = op_time.
struct OpTime {
  Duration total{0}, compute{0}, memory{0}, launch{0};
  [[nodiscard]] bool memory_bound() const { return memory.v > compute.v; }
};
[[nodiscard]] OpTime op_time_parts(const hw::DeviceSpec& dev, hw::Dtype dtype, const workload::Op& op,
                                   Pass pass);

/// Sum of op_time over a list of ops: the device's busy time.
[[nodiscard]] Duration ops_time(const hw::DeviceSpec& dev, hw::Dtype dtype,
                                const std::vector<workload::Op>& ops, Pass pass);

/// Kernels the ops launch in one pass.
[[nodiscard]] int kernels(const std::vector<workload::Op>& ops, Pass pass);

/// Time of one pass over a list of ops, as the device runs it behind its host:
/// max(ops_time, kernels · host_overhead). A framework that issues kernels slower than the
/// device runs them leaves the device idle.
[[nodiscard]] Duration pass_time(const hw::DeviceSpec& dev, hw::Dtype dtype,
                                 const std::vector<workload::Op>& ops, Pass pass);

/// Time of a memory-bound sweep over `bytes` in `kernels` kernels.
[[nodiscard]] Duration stream_time(const hw::DeviceSpec& dev, Bytes bytes, int kernels = 1);

/// Time of the optimizer step over `params` local parameters: a memory-bound sweep over
/// `bytes_per_param` bytes per parameter at the optimizer's bandwidth (optimizer_memory, else
/// memory), in one kernel.
[[nodiscard]] Duration optimizer_time(const hw::DeviceSpec& dev, double params,
                                      double bytes_per_param);

}  // namespace hetsim::cost
