#pragma once

// Builders of workload::Op shared by layer_ops.cpp (a layer's ops) and head_ops.cpp (the
// embedding's and the head's): internal to models/workload. The byte and kernel counts behind
// them are in docs/cost-models.md#the-ops-of-one-layer.

#include <string>
#include <vector>

#include "models/workload/layer_ops.hpp"
#include "models/workload/model_spec.hpp"

namespace hetsim::workload::detail {

/// C[m×n] = A[m×k]·B[k×n], `count` of them (one batched kernel when `batched`): 2mnk FLOPs
/// forward, the data and weight gradients backward (4mnk). Bytes are for reports; op_time prices
/// each kernel from its own shape.
Op gemm(std::string name, double m, double n, double k, double elem_bytes, int count = 1, bool batched = false);

/// A weight GEMM: its weight gradient accumulates into an fp32 main gradient (read + write).
Op linear(std::string name, double m, double n, double k, double elem_bytes, int count = 1, bool batched = false);

/// The passes of a memory-bound op: the forward streams `fwd_tensors` tensors of the op's
/// elements (reads + writes) in `fwd_kernels` kernels, plus `fwd_extra` bytes per element (1-byte
/// dropout masks); the backward `bwd_tensors` in `bwd_kernels`.
struct Stream {
  double fwd_tensors = 2;
  int fwd_kernels = 1;
  double bwd_tensors = 3;
  int bwd_kernels = 1;
  double fwd_extra = 0, bwd_extra = 0;
};

/// A memory-bound op over `elems` elements of `eb` bytes streamed as `s` says;
/// `flops_per_elem` counts its arithmetic (small; it matters only for the roofline).
Op streaming(std::string name, OpKind kind, double elems, double eb, Stream s, double flops_per_elem);

/// torch.autocast's casts for `ops` (docs/cost-models.md#autocast).
std::vector<Op> autocast_casts(const std::vector<Op>& ops, double activations, bool fused, int joins,
                               double join_elems);

/// Weight-gradient accumulation outside the GEMMs (MicroBatchShape::grad_accumulation): the
/// weight GEMMs write 16-bit gradients and ops are appended that add them into fp32 (or 16-bit)
/// accumulators. Nothing for the fused path.
void accumulate_outside_gemms(std::vector<Op>& ops, const MicroBatchShape& s, double e);

/// Bytes per element of the residual stream (and so of the norms and residual adds): fp32 under
/// autocast, else the activations' `e`.
double residual_bytes(const MicroBatchShape& s, double e);

/// Which kernels run the norms (MicroBatchShape::norm_kernel, `auto` resolved).
NormKernel norm_kernel(const ModelSpec& m, const MicroBatchShape& s);

/// Appends the op(s) of a norm over `elems` elements of `eb` bytes, as `norm_kernel` runs it:
/// one op for fused and native norms, two for RMSNorm in elementary ops (its vectorized kernels
/// and, as `name`_unvec, its non-vectorized ones).
void push_norm(std::vector<Op>& ops, std::string name, double elems, double eb, const ModelSpec& m,
               const MicroBatchShape& s);

/// The residual join after the attention or MLP block: bias add, dropout, residual add.
Stream residual_stream(const ModelSpec& m, bool fused);

}  // namespace hetsim::workload::detail
