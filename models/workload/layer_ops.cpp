#include "models/workload/layer_ops.hpp"

#include "models/base/assert.hpp"
#include "models/workload/detail/op_builders.hpp"

namespace hetsim::workload {
namespace detail {

// C[m×n] = A[m×k]·B[k×n]: 2mnk FLOPs forward; backward the data and weight gradients, 4mnk.
// The byte counts here are for reports; op_time prices each kernel from its own shape.
Op gemm(std::string name, double m, double n, double k, double elem_bytes, int count, bool batched) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::Gemm;
  op.m = m; op.n = n; op.k = k;
  op.count = count;
  op.batched = batched;
  op.operand_bytes = elem_bytes;
  op.fwd_flops = Flops{2 * m * n * k * count};
  op.bwd_flops = Flops{4 * m * n * k * count};
  op.fwd_bytes = Bytes{(m * k + k * n + m * n) * elem_bytes * count};
  op.bwd_bytes = op.fwd_bytes * 2;
  op.model_flops = op.fwd_flops;
  op.fwd_kernels = batched ? 1 : count;
  op.bwd_kernels = batched ? 2 : 2 * count;
  return op;
}

// A weight GEMM: its weight gradient accumulates into an fp32 main gradient (read + write).
Op linear(std::string name, double m, double n, double k, double elem_bytes, int count, bool batched) {
  Op op = gemm(std::move(name), m, n, k, elem_bytes, count, batched);
  op.wgrad_out_bytes = 8;
  op.bwd_bytes = Bytes{((2 * m * n + n * k + 2 * m * k) * elem_bytes + k * n * 8) * count};
  return op;
}

Op streaming(std::string name, OpKind kind, double elems, double eb, Stream s, double flops_per_elem) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.elems = elems;
  op.fwd_flops = Flops{elems * flops_per_elem};
  op.bwd_flops = Flops{elems * flops_per_elem * 2};
  op.fwd_bytes = Bytes{elems * (eb * s.fwd_tensors + s.fwd_extra)};
  op.bwd_bytes = Bytes{elems * (eb * s.bwd_tensors + s.bwd_extra)};
  op.fwd_kernels = s.fwd_kernels;
  op.bwd_kernels = s.bwd_kernels;
  op.model_flops = Flops{0};
  return op;
}

// torch.autocast's casts for a list of ops (docs/cost-models.md#autocast): forward, each weight
// GEMM's fp32 weight to 16 bits (read 4, write 2 bytes per parameter; autocast caches the copy
// for the backward) and `activations` fp32 elements (the norm outputs feeding GEMMs) to 16 bits;
// backward, each 16-bit weight gradient to fp32 for its fp32 parameter and the activation
// gradients to fp32 for the norms, again 6 bytes per element. One kernel per tensor.
// Eager (`fused` false) the two directions run different kernels: fp32 → 16 bits has a
// vectorized copy kernel, 16 bits → fp32 goes through the generic dtype-converting copy, which
// is not vectorized (Op::unvectorized); and the backward of each fp32 residual add casts the
// gradient of its 16-bit branch down again (`joins` tensors of `join_elems`).
std::vector<Op> autocast_casts(const std::vector<Op>& ops, double activations, bool fused, int joins,
                               double join_elems) {
  double weights = 0;
  int tensors = 0;
  for (const Op& op : ops)
    if (op.kind == OpKind::Gemm && op.wgrad_out_bytes > 0) {
      weights += op.k * op.n * op.count;
      tensors += op.count;
    }
  const int n = tensors + (activations > 0 ? 2 : 0);
  if (fused) return {streaming("autocast_cast", OpKind::Elementwise, weights + activations, 6, Stream{1, n, 1, n}, 0)};
  Op down = streaming("autocast_cast", OpKind::Elementwise, weights + activations, 6, Stream{1, n, 0, joins}, 0);
  down.bwd_bytes = Bytes{joins * join_elems * 6};
  Op up = streaming("autocast_grad_cast", OpKind::Elementwise, weights + activations, 6, Stream{0, 0, 1, n}, 0);
  up.unvectorized = true;
  return {down, up};
}

// Weight-gradient accumulation outside the GEMM (MicroBatchShape::grad_accumulation, add or
// cast_add): each weight GEMM's backward writes its gradient in 16 bits (`e` bytes per element,
// not the fused path's fp32 read and write), and after the backward one kernel per weight adds it
// into the fp32 main gradient in place: read e, read 4, write 4 (mixed formats: TensorIterator's
// non-vectorized dynamic-casting path, Op::unvectorized). cast_add first casts it to fp32 (read
// e, write 4; the non-vectorized dtype-converting copy) and then adds two fp32 tensors (read 4 + 4,
// write 4; vectorized). add16 adds into a 16-bit accumulator: read e + e, write e, vectorized
// (one format). Every micro-batch pays it. Fused: nothing to add.
void accumulate_outside_gemms(std::vector<Op>& ops, const MicroBatchShape& s, double e) {
  if (s.grad_accumulation == GradAccumulation::Fused) return;
  double weights = 0;
  int tensors = 0;
  for (Op& op : ops)
    if (op.kind == OpKind::Gemm && op.wgrad_out_bytes > 0) {
      const double w = op.k * op.n * op.count;
      op.bwd_bytes -= Bytes{w * (op.wgrad_out_bytes - e)};
      op.wgrad_out_bytes = e;
      weights += w;
      tensors += op.count;
    }
  if (tensors == 0) return;
  const GradAccumulation how = s.grad_accumulation;
  if (how == GradAccumulation::CastAdd) {
    Op cast = streaming("grad_cast", OpKind::Elementwise, weights, 1, Stream{0, 0, e + 4, tensors}, 0);
    cast.unvectorized = true;
    ops.push_back(cast);
  }
  // The add: a 16-bit gradient into fp32 (mixed formats), the cast copy into fp32, or a 16-bit
  // gradient into a 16-bit accumulator.
  const double bytes = how == GradAccumulation::Add ? e + 8 : how == GradAccumulation::CastAdd ? 12 : 3 * e;
  Op add = streaming("grad_accum", OpKind::Elementwise, weights, 1, Stream{0, 0, bytes, tensors}, 1);
  add.fwd_flops = Flops{0};
  add.unvectorized = how == GradAccumulation::Add;
  ops.push_back(add);
}

// Bytes per element of the residual stream, and so of the norms and residual adds: fp32 under
// autocast, else the activations' format `e`.
double residual_bytes(const MicroBatchShape& s, double e) { return s.autocast ? 4.0 : e; }

// Kernel counts and tensor passes of the memory-bound ops of a layer, fused (Megatron-LM +
// Transformer Engine) or one PyTorch eager kernel per elementary op (docs/cost-models.md#kernels).
NormKernel norm_kernel(const ModelSpec& m, const MicroBatchShape& s) {
  if (s.norm_kernel != NormKernel::Auto) return s.norm_kernel;
  if (s.fused_kernels) return NormKernel::Fused;
  return m.norm == Norm::LayerNorm ? NormKernel::Native : NormKernel::Eager;
}
// A norm over `elems` elements of `eb` bytes (the residual stream's format), as the kernels
// that run it (norm_kernel) move them.
//  - Fused: forward reads x, writes y (+ fp32 statistics, negligible); backward reads dy and x,
//    writes dx, and reduces dgamma (dbeta) from per-block partial sums in a second, small kernel.
//  - PyTorch's native layer_norm / rms_norm: the backward's second kernel (GammaBetaBackward)
//    reads dy and x again for the weight gradient.
//  - RMSNorm in elementary ops (torchtitan's 2024 RMSNorm, Hugging Face's LlamaRMSNorm:
//    `x.float()`, `pow(2).mean(-1)`, `+ eps`, `rsqrt`, `x·r`, the cast back, `·weight`), kernel
//    by kernel with its fp32 intermediates, and autograd's backward of each. Two elementwise ops
//    (ordinary PyTorch kernels, no norm kernel among them): the vectorized kernels (`name`) and,
//    as `name`_unvec, those PyTorch runs on its non-vectorized
//    paths (Op::unvectorized): the 16 → 32-bit casts and the products with a broadcast operand
//    (r, the weight). Per element, 16-bit x (eb = 2): forward 18 B vectorized (pow 8, mean 4,
//    cast back 6) + 18 B not (cast up 6, x·r 8, ·weight 4); backward 70 B vectorized (dy·y for the
//    weight gradient 6 and its column sum 2, g·x 12 and its row sum 4, pow's backward — copy,
//    ×2, ×g — 28, the two branches' sum 12, the cast back 6) + 22 B not (dy·weight 4, cast up 6,
//    g·r 8, mean's broadcast 4). fp32 x (autocast's residual stream) drops the casts.
//    docs/cost-models.md#the-ops-of-one-layer; checked against Liger-Kernel's measured
//    Hugging Face RMSNorm (docs/research-liger-kernels.md).
void push_norm(std::vector<Op>& ops, std::string name, double elems, double eb, const ModelSpec& m,
               const MicroBatchShape& s) {
  const NormKernel k = norm_kernel(m, s);
  if (k == NormKernel::Fused) {
    ops.push_back(streaming(std::move(name), OpKind::Norm, elems, eb, Stream{2, 1, 3, 2}, 5));
    return;
  }
  if (k == NormKernel::Native || m.norm == Norm::LayerNorm) {
    ops.push_back(streaming(std::move(name), OpKind::Norm, elems, eb, Stream{2, 1, 5, 2}, 5));
    return;
  }
  const bool cast = eb < 4;  // x.float() and the cast back are kernels
  const double up = cast ? eb + 4 : 0, down = cast ? 4 + eb : 0;
  const int c = cast ? 1 : 0;
  // + eps and rsqrt over one value a row, and their backwards: tiny kernels, counted for launches.
  const Stream vec{12 + down, 4 + c, 4 * eb + 56 + down, 10 + c};
  const Stream unvec{up + 8 + 2 * eb, 2 + c, 2 * eb + up + 12, 3 + c};
  Op v = streaming(name, OpKind::Elementwise, elems, 1, vec, 3);
  Op u = streaming(name + "_unvec", OpKind::Elementwise, elems, 1, unvec, 2);
  u.unvectorized = true;
  ops.push_back(std::move(v));
  ops.push_back(std::move(u));
}

// Residual join after the attention or MLP block: bias add, dropout, residual add.
Stream residual_stream(const ModelSpec& m, bool fused) {
  const bool bias = m.linear_bias, drop = m.dropout;
  Stream s;
  s.fwd_extra = drop ? 1 : 0;  // the dropout mask written (forward) and read (backward)
  s.bwd_extra = drop ? 1 : 0;
  if (fused) {
    // One kernel each way (fused bias-dropout-add); backward: the dropout gradient and the
    // residual gradient sum.
    s.fwd_tensors = 3;
    s.fwd_kernels = 1;
    s.bwd_tensors = drop || bias ? 5 : 3;
    s.bwd_kernels = drop || bias ? 2 : 1;
    return s;
  }
  // Eager PyTorch adds a Linear's bias in its GEMM's epilogue (addmm) and reduces the bias
  // gradient in a kernel of its own (the "bias_grad" op); dropout and the add are kernels.
  s.fwd_tensors = 3 + (drop ? 2 : 0);
  s.fwd_kernels = 1 + (drop ? 1 : 0);
  s.bwd_tensors = 3 + (drop ? 2 : 0);
  s.bwd_kernels = 1 + (drop ? 1 : 0);
  return s;
}

}  // namespace detail

using detail::linear;
using detail::push_norm;
using detail::residual_bytes;
using detail::residual_stream;
using detail::Stream;
using detail::streaming;
using detail::accumulate_outside_gemms;
using detail::autocast_casts;
using detail::gemm;

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

std::string_view recompute_module_name(RecomputeModule m) {
  switch (m) {
    case RecomputeModule::CoreAttn: return "core_attn";
    case RecomputeModule::LayerNorm: return "layernorm";
    case RecomputeModule::MoeAct: return "moe_act";
    case RecomputeModule::MlaUpProj: return "mla_up_proj";
    case RecomputeModule::Mlp: return "mlp";
    case RecomputeModule::SharedExperts: return "shared_experts";
    case RecomputeModule::Moe: return "moe";
  }
  return "?";
}

std::vector<Op> layer_ops(const ModelSpec& m, const MicroBatchShape& s) {
  HETSIM_ASSERT(s.tp >= 1 && m.heads % s.tp == 0, "tp must divide heads");
  const double t = s.tp;
  const bool fused = s.fused_kernels;
  const double e = hw::dtype_bytes(s.dtype == hw::Dtype::Fp8 ? hw::Dtype::Bf16 : s.dtype);
  const double ge = hw::dtype_bytes(s.dtype);  // GEMM operand bytes (fp8 GEMMs read 1 byte)
  const double tokens = static_cast<double>(s.micro_batch) * s.seq_len;
  const double h = m.hidden;
  const double hd = m.head_dim();
  const double q = m.q_width();  // all query heads (= h unless head_dim is set)
  const double kv = m.kv_width();
  // KV heads split over TP ranks when there are enough, else each rank keeps a copy.
  const double kv_rank = m.kv_heads >= s.tp ? kv / t : hd;
  const double f = m.ffn_hidden;
  // Norms, residuals and dropouts work on a sequence shard under sequence parallelism.
  const double seq_elems = tokens * h / (s.sequence_parallel ? t : 1.0);
  const Stream residual = residual_stream(m, fused);
  const double re = residual_bytes(s, e);

  std::vector<Op> ops;
  push_norm(ops, "attn_norm", seq_elems, re, m, s);
  if (m.mla()) {
    // Multi-head latent attention (docs/cost-models.md#multi-head-latent-attention): the down
    // projections run whole on every TP rank (Megatron-Core duplicates them), on the rank's
    // sequence shard under sequence parallelism, as do the latents' norms (before the up
    // projections gather them); the up projections are column-parallel: queries to heads·hd,
    // the KV latent to heads·(nope + v); the shared RoPE key comes with the KV down projection.
    const double heads_t = m.heads / t, rope = m.qk_rope_dim;
    const double local = s.sequence_parallel ? tokens / t : tokens;
    if (m.q_lora_rank > 0) {
      ops.push_back(linear("mla_q_down", local, m.q_lora_rank, h, ge));
      ops.push_back(linear("mla_q_up", tokens, heads_t * hd, m.q_lora_rank, ge));
    } else {
      ops.push_back(linear("mla_q_up", tokens, heads_t * hd, h, ge));
    }
    ops.push_back(linear("mla_kv_down", local, m.kv_lora_rank + rope, h, ge));
    push_norm(ops, "mla_norm", local * (m.q_lora_rank + m.kv_lora_rank), e, m, s);
    ops.push_back(linear("qkv", tokens, heads_t * (hd - rope + m.v_head_dim), m.kv_lora_rank, ge));
  } else {
    ops.push_back(linear("qkv", tokens, q / t + 2 * kv_rank, h, ge));
  }
  if (m.qk_norm) {
    // An RMSNorm over each query and key head before RoPE (Qwen3): one norm kernel over both.
    push_norm(ops, "qk_norm", tokens * (q / t + kv_rank), e, m, s);
  }
  if (m.positions == Positions::Rope) {
    // Rotary embedding of Q and K: one fused kernel each. Eager, per tensor, about ten passes
    // each way over strided, broadcast operands (the heads are transposed views, cos and sin
    // broadcast): rotate-half (negate, concatenate, two products, a sum; backward the two
    // products, the slices' zero-fill and copies, the sum) or the complex form (cast to fp32,
    // complex product, cast back) alike; not vectorized (docs/cost-models.md#kernels).
    const Stream rope = fused ? Stream{2, 2, 2, 2} : Stream{10, 10, 10, 16};
    Op r = streaming("rope", OpKind::Elementwise, tokens * (q / t + kv_rank), e, rope, 3);
    r.unvectorized = !fused;
    ops.push_back(r);
  }

  // Eager grouped-query attention repeats K and V to every query head before
  // scaled_dot_product_attention (repeat_kv: expand, then a copy) and sums the repeats' gradients
  // back; fused kernels read the shared heads in place.
  if (!fused && kv_rank < q / t) {
    Op rep = streaming("gqa_repeat", OpKind::Elementwise, tokens * 2 * q / t, e, Stream{1, 2, 1, 2}, 0);
    rep.fwd_bytes = rep.bwd_bytes = Bytes{tokens * 2 * (q / t + kv_rank) * e};
    rep.unvectorized = true;
    ops.push_back(rep);
  }

  // Attention core, per rank: heads/t heads. The score product costs 2·d_qk and the value
  // product 2·d_v FLOPs per query, key and head, s the whole sequence's keys (seq_len · cp
  // under context parallelism: the rank's queries meet every key; its 2 causal chunks balance
  // the mask): 4·tokens·s·(q/t) when d_v = d_qk. The backward's five products cost
  // 2·(3·d_qk + 2·d_v), 2.5× the forward at d_v = d_qk (multi-head latent attention: 192/128,
  // 2.6×; cuDNN's FLOP count, docs/research-attention-head-dim.md).
  const double cp = std::max(1, s.cp);
  const double dv = m.mla() ? m.v_head_dim : hd;
  const double pairs = tokens * s.seq_len * cp * (m.heads / t);  // query-key pairs × heads
  const double full = 2.0 * pairs * (hd + dv);
  const double full_bwd = 2.0 * pairs * (3 * hd + 2 * dv);
  const double heads_rank = static_cast<double>(s.micro_batch) * m.heads / t;
  if (s.flash_attention) {
    // Fused: a causal kernel skips the masked half; backward is 2.5× the forward
    // (FlashAttention-2 recomputes P and runs 5 GEMMs instead of 2; Dao 2023, §3.1), in three
    // kernels (the dO·O row sums, the main kernel, the dQ conversion).
    Op attn;
    attn.name = "attention";
    attn.kind = OpKind::Attention;
    // Context parallelism: a ring's kernels run over one block of seq_len keys, Ulysses' over
    // the whole sequence (with heads/cp: the same FLOPs).
    const bool heads_split = s.cp > 1 && s.cp_exchange == CpExchange::AllToAll;
    attn.seq = heads_split ? s.seq_len * s.cp : s.seq_len;
    attn.head_dim = hd;
    attn.causal = s.causal;
    attn.attention_kernel = s.attention_kernel;
    const double exec = s.causal ? full / 2 : full;
    attn.fwd_flops = Flops{exec};
    attn.bwd_flops = Flops{s.causal ? full_bwd / 2 : full_bwd};
    attn.model_flops = Flops{full};
    // Q and K d_qk wide, V and O d_v (MLA's K and V come whole from the up projection).
    const double qkvo = m.mla() ? tokens * (m.heads / t) * (2 * hd + 2 * dv) * e : tokens * (2 * q / t + 2 * kv_rank) * e;
    const bool ring = s.cp > 1 && s.cp_exchange == CpExchange::Ring;
    const double blocks = heads_split ? 1 : cp;  // blocks of keys the rank's queries read
    attn.fwd_bytes = Bytes{qkvo * blocks};
    attn.bwd_bytes = Bytes{2.5 * qkvo * blocks};
    attn.bwd_kernels = 3;
    attn.modules = module_bit(RecomputeModule::CoreAttn);
    if (ring) {
      // Transformer Engine's ring runs one attention kernel per block of keys (cp of them, each
      // over the rank's seq_len queries and a block's seq_len keys: the efficiency of that
      // length), and merges each block's partial output into the running one by its log-sum-exp
      // (cp − 1 correction kernels that read both and write one); backward, each block's dQ is
      // added into the rank's and its dK, dV into the block's travelling gradient (read both,
      // write one). The all-gather runs the rank's two chunks against the gathered keys, two
      // kernels, no merge. docs/cost-models.md#context-parallelism.
      attn.fwd_kernels = s.cp;
      attn.bwd_kernels = 3 * s.cp;
    } else if (s.cp > 1 && !heads_split) {
      attn.fwd_kernels = 2;
      attn.bwd_kernels = 6;
    }
    ops.push_back(attn);
    if (ring) {
      const double out = tokens * q / t;
      Op merge = streaming("cp_merge", OpKind::Elementwise, out, e, Stream{3, s.cp - 1, 0, 0}, 0);
      merge.fwd_bytes = Bytes{(cp - 1) * 3 * out * e};
      merge.bwd_bytes = Bytes{(cp - 1) * 3 * tokens * (q / t + 2 * kv_rank) * e};
      merge.bwd_kernels = 2 * (s.cp - 1);
      merge.modules = module_bit(RecomputeModule::CoreAttn);
      ops.push_back(merge);
    }
  } else {
    // Unfused (Megatron-LM before flash attention): batched QKᵀ, the scale-mask-softmax,
    // dropout of the probabilities, batched P·V; the whole s×s is computed, mask or not.
    const double sl = s.seq_len;
    const double scores = heads_rank * sl * sl;
    Op qk = gemm("attn_scores", sl, sl, hd, e, static_cast<int>(heads_rank), true);
    Op softmax = streaming("softmax", OpKind::Elementwise, scores, e,
                           fused ? Stream{2, 1, 3, 1} : Stream{4, 2, 6, 2}, 5);
    Op pv = gemm("attn_context", sl, dv, sl, e, static_cast<int>(heads_rank), true);
    for (Op* op : {&qk, &softmax, &pv}) {
      op->modules = module_bit(RecomputeModule::CoreAttn);
      op->score_traffic = true;  // their s×s traffic at score_memory (docs/cost-models.md)
    }
    // The core attention's batched products stay 16-bit in fp8 training (Transformer Engine
    // casts only its linear layers' inputs; Megatron's unfused attention is a bf16 baddbmm).
    qk.keep_16bit = pv.keep_16bit = true;
    ops.push_back(qk);
    ops.push_back(softmax);
    if (m.dropout) {
      Op drop = streaming("attn_dropout", OpKind::Elementwise, scores, e, Stream{2, 1, 2, 1, 1, 1}, 1);
      drop.modules = module_bit(RecomputeModule::CoreAttn);
      ops.push_back(drop);
    }
    ops.push_back(pv);
  }

  ops.push_back(linear("attn_out", tokens, h, m.mla() ? m.heads / t * m.v_head_dim : q / t, ge));
  ops.push_back(streaming("attn_residual", OpKind::Elementwise, seq_elems, re, residual, 2));
  push_norm(ops, "mlp_norm", seq_elems, re, m, s);

  const bool swiglu = m.activation == Activation::SwiGlu;
  const double up_cols = (swiglu ? 2 : 1) * f / t;  // gate and up fused into one GEMM
  // Activation over tokens·f/t: GeLU reads one tensor and writes one (backward: reads the
  // gradient and the input); SwiGLU reads gate and up (backward writes both gradients).
  // Eager runs SiLU and the product as kernels of their own (SwiGLU); a bias is added in the
  // GEMM's epilogue, fused or eager.
  const Stream act = swiglu ? (fused ? Stream{3, 1, 5, 1} : Stream{5, 2, 8, 3})
                            : Stream{2, 1, 3, 1};
  if (!m.moe()) {
    ops.push_back(linear("mlp_up", tokens, up_cols, h, ge));
    ops.push_back(streaming(swiglu ? "swiglu" : "gelu", OpKind::Elementwise, tokens * f / t, e,
                            act, swiglu ? 6 : 8));
    ops.push_back(linear("mlp_down", tokens, h, f / t, ge));
  } else {
    // Router, then each expert sees tokens·top_k·capacity_factor/experts tokens (padded to
    // capacity). The model-FLOP convention counts the top_k experts' work without padding.
    // Under expert parallelism a rank holds experts/ep of them and runs, balanced, the tokens
    // its ep peers send them: ep times as many per expert, the same work per rank (a grouped
    // GEMM of experts/ep GEMMs of ep× the rows; the all-to-alls are priced by stage_cost).
    // Routing imbalance: the most loaded rank's rows set the layer's time (moe_rank_load, =
    // capacity_factor when uniform), priced as experts/ep GEMMs of its mean rows per expert.
    // Expert tensor parallelism et (plan::Plan::expert_tp, a divisor of t): the experts split
    // over et ranks, each such group holding the tokens of et/t of the TP group (MoE parallel
    // folding: with et < t the other TP ranks are expert-parallel ranks); et = t is the split
    // of the dense MLP. Rows per expert t/et fewer, columns f/et: the same work per rank.
    Op router = gemm("router", tokens, m.experts, h, e);
    router.keep_16bit = true;  // a plain linear outside fp8 (Megatron-Core: bf16 or fp32 router)
    ops.push_back(router);
    const int ep = std::max(1, s.ep);
    const double et = s.expert_tp > 0 ? s.expert_tp : t;
    const double fold = et / t;  // the share of the TP group's tokens an expert group sees
    const int local_experts = m.experts / ep;
    const double rank_load = moe_rank_load(m, ep);
    const double per_expert = tokens * fold * m.top_k * rank_load * ep / m.experts;
    const double expert_up_cols = (swiglu ? 2 : 1) * f / et;
    ops.push_back(streaming("moe_permute", OpKind::Elementwise, tokens * fold * m.top_k * h, e, Stream{2, 1, 2, 1}, 0));
    // Grouped (s.grouped_experts): the local experts' GEMMs as one kernel whose tiles share the
    // device's waves; else one GEMM after another, each with its own waves and launch.
    Op up = linear("expert_up", per_expert, expert_up_cols, h, ge, local_experts, s.grouped_experts);
    Op actop = streaming(swiglu ? "expert_swiglu" : "expert_gelu", OpKind::Elementwise,
                         per_expert * local_experts * f / et, e, act, swiglu ? 6 : 8);
    Op down = linear("expert_down", per_expert, h, f / et, ge, local_experts, s.grouped_experts);
    const double unpadded = 1.0 / rank_load;
    up.model_flops = up.fwd_flops * unpadded;
    down.model_flops = down.fwd_flops * unpadded;
    ops.push_back(up);
    ops.push_back(actop);
    ops.push_back(down);
    ops.push_back(streaming("moe_unpermute", OpKind::Elementwise, tokens * fold * m.top_k * h, e, Stream{2, 1, 3, 1}, 1));
    if (m.shared_experts > 0) {
      // Shared experts: a dense MLP of their total width that every token goes through, split
      // over the TP ranks like the dense MLP; its output joins the routed experts' sum.
      const double sw = m.shared_width();
      ops.push_back(linear("shared_up", tokens, (swiglu ? 2 : 1) * sw / t, h, ge));
      ops.push_back(streaming(swiglu ? "shared_swiglu" : "shared_gelu", OpKind::Elementwise, tokens * sw / t, e, act,
                              swiglu ? 6 : 8));
      ops.push_back(linear("shared_down", tokens, h, sw / t, ge));
    }
  }
  ops.push_back(streaming("mlp_residual", OpKind::Elementwise, seq_elems, re, residual, 2));
  if (!fused && m.linear_bias) {
    // Eager: each Linear's bias gradient is a column sum of its output gradient, one reduction
    // kernel per Linear (fused kernels fold it into the bias-GeLU and bias-dropout-add
    // backwards and the GEMM epilogues).
    double grads = 0;  // output-gradient elements of the biased Linears (rows × columns)
    int linears = 0;
    for (const Op& op : ops)
      if (op.kind == OpKind::Gemm && op.wgrad_out_bytes > 0) {
        grads += op.m * op.n * op.count;
        linears += op.count;
      }
    Op bg = streaming("bias_grad", OpKind::Elementwise, grads, e, Stream{0, 0, 1, linears}, 1);
    bg.fwd_flops = Flops{0};
    ops.push_back(bg);
  }
  if (s.autocast)
    for (Op& c : autocast_casts(ops, 2 * seq_elems, fused, 2, seq_elems)) ops.push_back(std::move(c));
  // Per-op selective checkpointing (torchtitan's policy): the layer's matmuls counted in forward
  // order, q (1), k (2), v (3), out (4), then gate (5), up (6), down (7) for SwiGLU or up (5),
  // down (6) for GeLU; the even ones are recomputed. The fused qkv GEMM re-runs its K columns,
  // the fused gate+up GEMM its up half. Unfused attention products are batched matmuls (bmm),
  // not on the policy's keep list: recomputed with everything else that is not a matmul.
  for (Op& op : ops) {
    if (op.kind == OpKind::Attention) op.op_recompute = 0;
    else if (op.name == "qkv") op.op_recompute = kv_rank / (h / t + 2 * kv_rank);
    else if (op.name == "attn_out") op.op_recompute = 1;
    else if (op.name == "mlp_up") op.op_recompute = swiglu ? 0.5 : 0;
    else if (op.name == "mlp_down") op.op_recompute = swiglu ? 0 : 1;
    else op.op_recompute = op.kind == OpKind::Gemm && !op.batched ? 0 : 1;
  }
  // Megatron-Core's selective recompute modules, by op (the attention core's are set above;
  // docs/cost-models.md#activations, read in Megatron-Core: docs/research-recompute-modules.md).
  // layernorm re-runs only the norms that are modules of their own: MLA's input norm (its down
  // projections are plain linears) and a MoE layer's pre-MLP norm (the router reads it); the
  // others are fused into Transformer Engine's LayerNormLinear / LayerNormMLP, which mlp
  // re-runs whole, norm included. A routed expert's activation and a shared expert's ops belong
  // to the MoE block too. Not tagged: the fp8 casts below (the recomputed GEMMs' casts are not
  // re-priced: ~).
  const auto bit = [](RecomputeModule x) { return module_bit(x); };
  const auto both = [&](RecomputeModule x, RecomputeModule y) { return static_cast<RecomputeModules>(bit(x) | bit(y)); };
  for (Op& op : ops) {
    // An eager norm's non-vectorized kernels (push_norm) belong where the norm does.
    const std::string n = op.name.ends_with("_norm_unvec") ? op.name.substr(0, op.name.size() - 6) : op.name;
    if (n == "attn_norm" && m.mla()) op.modules |= bit(RecomputeModule::LayerNorm);
    else if (n == "mlp_norm") op.modules |= bit(m.moe() ? RecomputeModule::LayerNorm : RecomputeModule::Mlp);
    else if (m.mla() && (n == "mla_norm" || n == "mla_q_up" || n == "qkv" || n == "rope"))
      op.modules |= bit(RecomputeModule::MlaUpProj);  // (the latents' norms: TE fuses them into the up projections)
    else if (n == "mlp_up" || n == "swiglu" || n == "gelu" || n == "mlp_down") op.modules |= bit(RecomputeModule::Mlp);
    else if (n == "router" || n == "moe_permute" || n == "expert_up" || n == "expert_down" || n == "moe_unpermute")
      op.modules |= bit(RecomputeModule::Moe);
    else if (n == "expert_swiglu" || n == "expert_gelu")
      op.modules |= both(RecomputeModule::Moe, RecomputeModule::MoeAct);
    else if (n == "shared_up" || n == "shared_swiglu" || n == "shared_gelu" || n == "shared_down")
      op.modules |= both(RecomputeModule::Moe, RecomputeModule::SharedExperts);
  }
  if (s.dtype == hw::Dtype::Fp8) {
    // Transformer Engine's fp8 GEMMs take fp8 copies of their inputs: one cast-transpose kernel
    // per weight GEMM reads the 16-bit input and writes it in fp8 and transposed (Hopper's fp8
    // GEMMs are TN only; the transpose feeds the weight gradient), 2 + 1 + 1 bytes per element;
    // backward the same for the output gradient. Weights are cast once per step (cached over
    // micro-batches) and not counted. With current scaling the scale comes from the tensor's own
    // amax, so an amax reduction reads the 16-bit tensor first (2 more bytes, one more kernel);
    // delayed scaling takes last steps' amax and records this one inside the cast. Grouped
    // experts cast all their inputs in one kernel (TE's fused_multi_cast_transpose).
    double in = 0, out = 0;
    int gemms = 0;
    for (const Op& op : ops)
      if (op.kind == OpKind::Gemm && op.wgrad_out_bytes > 0 && !op.keep_16bit) {
        in += op.m * op.k * op.count;
        out += op.m * op.n * op.count;
        gemms += op.batched ? 1 : op.count;
      }
    const double per = s.fp8_current_scaling ? 6 : 4;  // bytes per element
    const int kernels = s.fp8_current_scaling ? 2 * gemms : gemms;
    Op cast = streaming("fp8_cast", OpKind::Elementwise, in, 1, Stream{per, kernels, 0, kernels}, 1);
    cast.bwd_bytes = Bytes{out * per};
    ops.push_back(cast);
  }
  accumulate_outside_gemms(ops, s, e);
  return ops;
}

}  // namespace hetsim::workload
