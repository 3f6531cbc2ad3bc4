#include "models/base/assert.hpp"
#include "models/workload/detail/op_builders.hpp"
#include "models/workload/layer_ops.hpp"

// The embedding's and the head's ops, and the model FLOPs of a step (layer_ops.hpp); the
// layers' ops are in layer_ops.cpp, the builders both use in detail/op_builders.hpp.

namespace hetsim::workload {

using detail::accumulate_outside_gemms;
using detail::autocast_casts;
using detail::linear;
using detail::push_norm;
using detail::residual_bytes;
using detail::Stream;
using detail::streaming;

std::vector<Op> embedding_ops(const ModelSpec& m, const MicroBatchShape& s) {
  const double e = hw::dtype_bytes(s.dtype == hw::Dtype::Fp8 ? hw::Dtype::Bf16 : s.dtype);
  const double tokens = static_cast<double>(s.micro_batch) * s.seq_len;
  // Vocabulary-parallel lookup: each rank gathers its rows (read and write tokens·h). The
  // backward builds the dense gradient of the rank's V/t × h table (zero-filled, rows added)
  // and adds it into the fp32 main gradient: per table element e + (e + 4 + 4) bytes. Under
  // cast_add the gradient is cast to fp32 first: e + (e + 4) + (4 + 4 + 4); under add16 the
  // accumulator is 16-bit: e + (e + e + e).
  Op op = streaming("embedding", OpKind::Embedding, tokens * m.hidden, e, Stream{2, 1, 2, 3}, 0);
  const double table = static_cast<double>(m.vocab) / s.tp * m.hidden;
  const double acc = s.grad_accumulation == GradAccumulation::CastAdd ? 16 : s.grad_accumulation == GradAccumulation::Add16 ? 2 * e : 8;
  op.bwd_bytes += Bytes{table * (2 * e + acc)};
  if (s.grad_accumulation == GradAccumulation::CastAdd) op.bwd_kernels += 1;  // the cast
  return {op};
}

std::vector<Op> head_ops(const ModelSpec& m, const MicroBatchShape& s) {
  const double t = s.tp;
  const double e = hw::dtype_bytes(s.dtype == hw::Dtype::Fp8 ? hw::Dtype::Bf16 : s.dtype);
  const double tokens = static_cast<double>(s.micro_batch) * s.seq_len;
  const double seq_elems = tokens * m.hidden / (s.sequence_parallel ? t : 1.0);
  std::vector<Op> ops;
  push_norm(ops, "final_norm", seq_elems, residual_bytes(s, e), m, s);
  // The output projection stays in bf16 even in fp8 training (Transformer Engine keeps the
  // first and last layers in higher precision).
  Op output = linear("output", tokens, m.vocab / t, m.hidden, e);
  output.keep_16bit = true;
  ops.push_back(output);
  // The cross-entropy over the T·V/t logits (docs/cost-models.md#the-ops-of-one-layer), bytes per
  // logit, split by the path PyTorch runs each kernel on: broadcast operands and 16 → 32-bit copies
  // take TensorIterator's non-vectorized path (Op::unvectorized; microbenchmarks.md §9g).
  const double logits = tokens * m.vocab / t;
  if (s.loss_kernel == LossKernel::Fused) {
    // One fused kernel each way over the 16-bit logits (Inductor, FlashAttention's xentropy,
    // Liger): the forward's online softmax reads them in two passes (max and sum of exponentials,
    // then the picked logit), 4 bytes; the backward reads them once more and writes the 16-bit
    // gradient in place, 4 bytes.
    ops.push_back(streaming("loss", OpKind::Loss, logits, 1, Stream{4, 1, 4, 1}, 5));
  } else if (s.fused_kernels) {
    // Megatron-LM's vocabulary-parallel cross-entropy (megatron/core/tensor_parallel/
    // cross_entropy.py): forward `.float()` (2 + 4), max (4), in-place subtract of the broadcast
    // max (4 + 4), exp in place (4 + 4), sum (4), in-place divide by the broadcast sum (4 + 4) =
    // 38 bytes in 6 kernels, of which the cast and the two broadcasts (22 bytes) are
    // non-vectorized; backward, multiply by the broadcast output gradient in place (4 + 4,
    // non-vectorized) and the fp32 → 16-bit cast of `.float()`'s gradient (4 + 2) = 14 bytes.
    ops.push_back(streaming("loss", OpKind::Loss, logits, 1, Stream{16, 3, 6, 1}, 5));
    Op bc = streaming("loss_broadcast", OpKind::Elementwise, logits, 1, Stream{22, 3, 8, 1}, 0);
    bc.unvectorized = true;
    ops.push_back(bc);
  } else {
    // PyTorch's `cross_entropy` on `.float()` logits (eager): forward the non-vectorized 16 →
    // 32-bit copy (2 + 4), then log_softmax, one kernel that reads each row three times (max,
    // sum of exponentials, output) and writes it (16), and a per-token NLL gather; backward the
    // zero-filled NLL gradient (4), log_softmax's backward (reads the gradient twice and the
    // output, writes: 16) and the vectorized fp32 → 16-bit cast (4 + 2) = 26 bytes. Kernel list
    // and bytes as profiled on the H200 (cunn_SoftMaxForward/Backward at 4.2/3.9 TB/s for 16
    // bytes per logit; microbenchmarks.md §9f).
    ops.push_back(streaming("loss", OpKind::Loss, logits, 1, Stream{16, 2, 26, 4}, 5));
    Op cast = streaming("loss_cast", OpKind::Elementwise, logits, 1, Stream{6, 1, 0, 0}, 0);
    cast.unvectorized = true;
    ops.push_back(cast);
  }
  if (s.autocast)
    for (Op& c : autocast_casts(ops, seq_elems, s.fused_kernels, 0, 0)) ops.push_back(std::move(c));
  accumulate_outside_gemms(ops, s, e);
  return ops;
}

Flops model_flops_per_step(const ModelSpec& m, const TrainingSpec& t) {
  MicroBatchShape s;
  s.micro_batch = 1;
  s.seq_len = t.seq_len;
  s.tp = 1;
  s.dtype = t.precision;
  s.flash_attention = t.flash_attention;
  s.causal = t.causal;
  double per_seq = 0;
  const int moe_layers = m.moe_layers(0, m.layers);
  for (const Op& op : layer_ops(m, s)) per_seq += op.model_flops.v;
  per_seq *= m.moe() ? moe_layers : m.layers;  // a dense model's layers, or the MoE ones
  if (m.moe() && moe_layers < m.layers) {
    double dense = 0;
    for (const Op& op : layer_ops(dense_layer_model(m), s)) dense += op.model_flops.v;
    per_seq += dense * (m.layers - moe_layers);
  }
  for (const Op& op : head_ops(m, s)) per_seq += op.model_flops.v;
  return Flops{3.0 * per_seq * t.global_batch};
}

}  // namespace hetsim::workload
