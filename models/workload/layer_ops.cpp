#include "models/workload/layer_ops.hpp"

#include "models/base/assert.hpp"

namespace hetsim::workload {
namespace {

// C[m×n] = A[m×k]·B[k×n]: 2mnk FLOPs forward; backward computes dA and dB, 4mnk.
// Bytes: read A and B, write C; backward reads and writes twice as much.
Op gemm(std::string name, double m, double n, double k, double elem_bytes, int count = 1) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Gemm;
  op.m = m; op.n = n; op.k = k;
  op.count = count;
  op.fwd_flops = Flops{2 * m * n * k * count};
  op.bwd_flops = Flops{4 * m * n * k * count};
  op.fwd_bytes = Bytes{(m * k + k * n + m * n) * elem_bytes * count};
  op.bwd_bytes = op.fwd_bytes * 2;
  op.model_flops = op.fwd_flops;
  op.fwd_kernels = count;
  op.bwd_kernels = 2 * count;
  return op;
}

// A memory-bound op over `elems` elements: forward reads `reads` and writes `writes` tensors
// of that size; backward reads the saved inputs and the incoming gradient and writes one
// gradient per input: (2·reads + 1) tensors. `flops_per_elem` counts the arithmetic (small; it
// matters only for the roofline).
Op streaming(std::string name, OpKind kind, double elems, double elem_bytes, int reads, int writes,
             double flops_per_elem) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.fwd_flops = Flops{elems * flops_per_elem};
  op.bwd_flops = Flops{elems * flops_per_elem * 2};
  op.fwd_bytes = Bytes{elems * elem_bytes * (reads + writes)};
  op.bwd_bytes = Bytes{elems * elem_bytes * (reads + 1 + reads)};
  op.model_flops = Flops{0};
  return op;
}

}  // namespace

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Gemm: return "gemm";
    case OpKind::Attention: return "attention";
    case OpKind::Norm: return "norm";
    case OpKind::Elementwise: return "elementwise";
    case OpKind::Embedding: return "embedding";
    case OpKind::Loss: return "loss";
  }
  return "?";
}

std::vector<Op> layer_ops(const ModelSpec& m, const MicroBatchShape& s) {
  HETSIM_ASSERT(s.tp >= 1 && m.heads % s.tp == 0, "tp must divide heads");
  const double t = s.tp;
  const double e = hw::dtype_bytes(s.dtype == hw::Dtype::Fp8 ? hw::Dtype::Bf16 : s.dtype);
  const double ge = hw::dtype_bytes(s.dtype);  // GEMM operand bytes (fp8 GEMMs read 1 byte)
  const double tokens = static_cast<double>(s.micro_batch) * s.seq_len;
  const double h = m.hidden;
  const double kv = static_cast<double>(m.kv_heads) * m.head_dim();
  // KV heads split over TP ranks when there are enough, else each rank keeps a copy.
  const double kv_rank = m.kv_heads >= s.tp ? kv / t : m.head_dim();
  const double f = m.ffn_hidden;
  // Norms, residuals and dropouts work on a sequence shard under sequence parallelism.
  const double seq_elems = tokens * h / (s.sequence_parallel ? t : 1.0);

  std::vector<Op> ops;
  ops.push_back(streaming("attn_norm", OpKind::Norm, seq_elems, e, 1, 1, 5));
  ops.push_back(gemm("qkv", tokens, h / t + 2 * kv_rank, h, ge));

  // Attention core, per rank: heads/t heads. Forward QKᵀ and PV: 4·tokens·s·(h/t) FLOPs for the
  // full s×s; a causal fused kernel skips the masked half. Backward is 2.5× the forward
  // (FlashAttention-2 recomputes P and runs 5 GEMMs instead of 2; Dao 2023, §3.1).
  Op attn;
  attn.name = "attention";
  attn.kind = OpKind::Attention;
  const double full = 4.0 * tokens * s.seq_len * h / t;
  const double exec = (s.causal && s.flash_attention) ? full / 2 : full;
  attn.fwd_flops = Flops{exec};
  attn.bwd_flops = Flops{2.5 * exec};
  attn.model_flops = Flops{full};
  const double qkvo = tokens * (2 * h / t + 2 * kv_rank) * e;
  if (s.flash_attention) {
    attn.fwd_bytes = Bytes{qkvo};
    attn.bwd_bytes = Bytes{2.5 * qkvo};
  } else {
    // Unfused: scores, softmax and dropout each read and write the (heads/t)·s×s matrix.
    const double scores = s.micro_batch * (m.heads / t) * double(s.seq_len) * s.seq_len * e;
    attn.fwd_bytes = Bytes{qkvo + 6 * scores};
    attn.bwd_bytes = Bytes{2 * qkvo + 9 * scores};
    attn.fwd_kernels = 4;
    attn.bwd_kernels = 6;
  }
  attn.selective_recompute = true;
  ops.push_back(attn);

  ops.push_back(gemm("attn_out", tokens, h, h / t, ge));
  ops.push_back(streaming("attn_residual", OpKind::Elementwise, seq_elems, e, 2, 1, 1));
  ops.push_back(streaming("mlp_norm", OpKind::Norm, seq_elems, e, 1, 1, 5));

  const bool swiglu = m.activation == Activation::SwiGlu;
  const double up_cols = (swiglu ? 2 : 1) * f / t;  // gate and up fused into one GEMM
  if (!m.moe()) {
    ops.push_back(gemm("mlp_up", tokens, up_cols, h, ge));
    ops.push_back(streaming(swiglu ? "swiglu" : "gelu", OpKind::Elementwise, tokens * f / t, e,
                            swiglu ? 2 : 1, 1, swiglu ? 6 : 8));
    ops.push_back(gemm("mlp_down", tokens, h, f / t, ge));
  } else {
    // Router, then each expert sees tokens·top_k·capacity_factor/experts tokens (padded to
    // capacity). The model-FLOP convention counts the top_k experts' work without padding.
    Op router = gemm("router", tokens, m.experts, h, e);
    ops.push_back(router);
    const double per_expert = tokens * m.top_k * m.capacity_factor / m.experts;
    ops.push_back(streaming("moe_permute", OpKind::Elementwise, tokens * m.top_k * h, e, 1, 1, 0));
    Op up = gemm("expert_up", per_expert, up_cols, h, ge, m.experts);
    Op act = streaming(swiglu ? "expert_swiglu" : "expert_gelu", OpKind::Elementwise,
                       per_expert * m.experts * f / t, e, swiglu ? 2 : 1, 1, swiglu ? 6 : 8);
    Op down = gemm("expert_down", per_expert, h, f / t, ge, m.experts);
    const double unpadded = 1.0 / m.capacity_factor;
    up.model_flops = up.fwd_flops * unpadded;
    down.model_flops = down.fwd_flops * unpadded;
    ops.push_back(up);
    ops.push_back(act);
    ops.push_back(down);
    ops.push_back(streaming("moe_unpermute", OpKind::Elementwise, tokens * m.top_k * h, e, 1, 1, 1));
  }
  ops.push_back(streaming("mlp_residual", OpKind::Elementwise, seq_elems, e, 2, 1, 1));
  return ops;
}

std::vector<Op> embedding_ops(const ModelSpec& m, const MicroBatchShape& s) {
  const double e = hw::dtype_bytes(s.dtype == hw::Dtype::Fp8 ? hw::Dtype::Bf16 : s.dtype);
  const double tokens = static_cast<double>(s.micro_batch) * s.seq_len;
  // Vocabulary-parallel lookup: each rank gathers its rows, then the shards are combined.
  Op op = streaming("embedding", OpKind::Embedding, tokens * m.hidden, e, 1, 1, 0);
  return {op};
}

std::vector<Op> head_ops(const ModelSpec& m, const MicroBatchShape& s) {
  const double t = s.tp;
  const double e = hw::dtype_bytes(s.dtype == hw::Dtype::Fp8 ? hw::Dtype::Bf16 : s.dtype);
  const double tokens = static_cast<double>(s.micro_batch) * s.seq_len;
  const double seq_elems = tokens * m.hidden / (s.sequence_parallel ? t : 1.0);
  std::vector<Op> ops;
  ops.push_back(streaming("final_norm", OpKind::Norm, seq_elems, e, 1, 1, 5));
  // The output projection stays in bf16 even in fp8 training (Transformer Engine keeps the
  // first and last layers in higher precision).
  Op output = gemm("output", tokens, m.vocab / t, m.hidden,
                   hw::dtype_bytes(s.dtype == hw::Dtype::Fp8 ? hw::Dtype::Bf16 : s.dtype));
  output.keep_16bit = true;
  ops.push_back(output);
  // Softmax cross-entropy over fp32 logits, vocabulary-parallel.
  ops.push_back(streaming("loss", OpKind::Loss, tokens * m.vocab / t, 4, 1, 1, 5));
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
  for (const Op& op : layer_ops(m, s)) per_seq += op.model_flops.v;
  per_seq *= m.layers;
  for (const Op& op : head_ops(m, s)) per_seq += op.model_flops.v;
  return Flops{3.0 * per_seq * t.global_batch};
}

}  // namespace hetsim::workload
