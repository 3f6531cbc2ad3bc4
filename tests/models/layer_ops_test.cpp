#include "models/workload/layer_ops.hpp"
#include "models/workload/training.hpp"

#include <algorithm>

#include <gtest/gtest.h>

namespace hetsim::workload {
namespace {

ModelSpec gpt(int layers, int h, int heads, int vocab) {
  ModelSpec m;
  m.name = "gpt";
  m.layers = layers; m.hidden = h; m.heads = heads; m.kv_heads = heads; m.ffn_hidden = 4 * h;
  m.vocab = vocab; m.activation = Activation::Gelu;
  return m;
}

const Op& find(const std::vector<Op>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return op;
  static Op none;
  ADD_FAILURE() << "no op " << name;
  return none;
}

TEST(LayerOps, PerOpCheckpointingReRunsEverySecondMatmulAndEveryNonMatmul) {
  // Matmuls in forward order: q, k, v, out, then gate, up, down (SwiGLU) or up, down (GeLU);
  // the even ones re-run. GQA with 8 of 32 KV heads at tp 2: qkv = 2048 + 2·512 columns per
  // rank, of which k is 512 → 1/6.
  ModelSpec llama = gpt(2, 4096, 32, 1000);
  llama.kv_heads = 8;
  llama.ffn_hidden = 14336;
  llama.activation = Activation::SwiGlu;
  llama.positions = Positions::Rope;
  MicroBatchShape s{1, 1024, 2, true, hw::Dtype::Bf16, true, true};
  const auto ops = layer_ops(llama, s);
  EXPECT_DOUBLE_EQ(find(ops, "qkv").op_recompute, 512.0 / 3072.0);
  EXPECT_DOUBLE_EQ(find(ops, "attention").op_recompute, 0);
  EXPECT_DOUBLE_EQ(find(ops, "attn_out").op_recompute, 1);
  EXPECT_DOUBLE_EQ(find(ops, "mlp_up").op_recompute, 0.5);
  EXPECT_DOUBLE_EQ(find(ops, "mlp_down").op_recompute, 0);
  for (const char* name : {"attn_norm", "rope", "attn_residual", "mlp_norm", "swiglu", "mlp_residual"})
    EXPECT_DOUBLE_EQ(find(ops, name).op_recompute, 1) << name;
  // GeLU: up is the 5th matmul (kept), down the 6th (re-run); MHA: k is 1/3 of qkv.
  const auto gelu = layer_ops(gpt(2, 1024, 16, 1000), MicroBatchShape{1, 512, 1, true, hw::Dtype::Bf16, true, true});
  EXPECT_DOUBLE_EQ(find(gelu, "qkv").op_recompute, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(find(gelu, "mlp_up").op_recompute, 0);
  EXPECT_DOUBLE_EQ(find(gelu, "mlp_down").op_recompute, 1);
  // Unfused attention's batched products are not kept by the policy.
  const auto unfused = layer_ops(gpt(2, 1024, 16, 1000), MicroBatchShape{1, 512, 1, true, hw::Dtype::Bf16, false, true});
  EXPECT_DOUBLE_EQ(find(unfused, "attn_scores").op_recompute, 1);
  EXPECT_DOUBLE_EQ(find(unfused, "attn_context").op_recompute, 1);
}

TEST(LayerOps, GemmShapesAndFlopsOfOneRank) {
  // h = 1024, 16 heads, tp = 2, b = 2, s = 512 -> tokens = 1024
  // qkv: M 1024, N 3·1024/2 = 1536, K 1024 -> 2·1024·1536·1024 = 3,221,225,472 FLOPs fwd
  MicroBatchShape s{2, 512, 2, true, hw::Dtype::Bf16, true, true};
  const auto ops = layer_ops(gpt(4, 1024, 16, 1000), s);
  const Op& qkv = find(ops, "qkv");
  EXPECT_DOUBLE_EQ(qkv.m, 1024);
  EXPECT_DOUBLE_EQ(qkv.n, 1536);
  EXPECT_DOUBLE_EQ(qkv.k, 1024);
  EXPECT_DOUBLE_EQ(qkv.fwd_flops.v, 3221225472.0);
  EXPECT_DOUBLE_EQ(qkv.bwd_flops.v, 2 * 3221225472.0);
  // bytes: (M·K + K·N + M·N)·2 = (1048576 + 1572864 + 1572864)·2 = 8,388,608
  EXPECT_DOUBLE_EQ(qkv.fwd_bytes.v, 8388608.0);
  const Op& down = find(ops, "mlp_down");
  EXPECT_DOUBLE_EQ(down.k, 4 * 1024 / 2);
}

// Unfused attention (flash_attention = false): the score product, the softmax and the context
// product carry its s×s traffic (priced at score_memory); the dropout of the probabilities and
// every other op do not.
TEST(LayerOps, UnfusedAttentionMarksItsScoreTraffic) {
  MicroBatchShape s{2, 512, 2, true, hw::Dtype::Bf16, true, true};
  s.flash_attention = false;
  auto m = gpt(4, 1024, 16, 1000);
  m.dropout = true;
  const auto ops = layer_ops(m, s);
  for (const auto& op : ops) {
    const bool scores = op.name == "attn_scores" || op.name == "softmax" || op.name == "attn_context";
    EXPECT_EQ(op.score_traffic, scores) << op.name;
  }
  find(ops, "attn_dropout");  // present, and unmarked above
  s.flash_attention = true;
  for (const auto& op : layer_ops(m, s)) EXPECT_FALSE(op.score_traffic) << op.name;
}

// In fp8 training only the linear layers' GEMMs run in fp8: unfused attention's batched products
// and a MoE router stay 16-bit (priced at the 16-bit peak, no fp8 cast of their inputs).
TEST(LayerOps, Fp8LeavesAttentionProductsAndTheRouterIn16Bits) {
  MicroBatchShape s{2, 512, 1, false, hw::Dtype::Fp8, true, true, false};
  s.flash_attention = false;
  ModelSpec m = gpt(4, 1024, 16, 1000);
  m.experts = 8;
  m.top_k = 2;
  const auto ops = layer_ops(m, s);
  for (const char* name : {"attn_scores", "attn_context", "router"}) EXPECT_TRUE(find(ops, name).keep_16bit) << name;
  for (const char* name : {"qkv", "attn_out"}) EXPECT_FALSE(find(ops, name).keep_16bit) << name;
  // The casts: qkv's and attn_out's inputs (1024 columns each) and the experts' (1024 a token
  // per routed copy), not the router's.
  const Op& cast = find(ops, "fp8_cast");
  const double tokens = 2 * 512.0;
  const double experts_in = find(ops, "expert_up").m * find(ops, "expert_up").count * 1024;
  const double down_in = find(ops, "expert_down").m * find(ops, "expert_down").count * find(ops, "expert_down").k;
  EXPECT_DOUBLE_EQ(cast.fwd_bytes.v, 4 * (tokens * (1024 + 1024) + experts_in + down_in));
}

// Heads wider than hidden/heads (Qwen3: 32 heads of 128 over hidden 2048): Q and the attention
// work are heads·head_dim wide, the residual stream hidden; a QK-norm runs over Q and K.
TEST(LayerOps, HeadDimSetsTheQueryWidth) {
  ModelSpec m = gpt(2, 2048, 32, 1000);
  m.kv_heads = 4;
  m.explicit_head_dim = 128;  // Q 4096 wide, K and V 512
  m.qk_norm = true;
  MicroBatchShape s{1, 1024, 2, true, hw::Dtype::Bf16, true, true};
  const auto ops = layer_ops(m, s);
  const Op& qkv = find(ops, "qkv");
  EXPECT_DOUBLE_EQ(qkv.k, 2048);
  EXPECT_DOUBLE_EQ(qkv.n, 4096 / 2 + 2 * 512 / 2);
  EXPECT_DOUBLE_EQ(find(ops, "attn_out").k, 4096 / 2);
  EXPECT_DOUBLE_EQ(find(ops, "attn_out").n, 2048);
  // Model FLOPs 4·tokens·s·(q/t), whatever the mask.
  EXPECT_DOUBLE_EQ(find(ops, "attention").model_flops.v, 4.0 * 1024 * 1024 * 4096 / 2);
  EXPECT_DOUBLE_EQ(find(ops, "qk_norm").elems, 1024.0 * (4096 + 512) / 2);
}

// Shared experts: a dense MLP of their total width beside the routed experts, for every token.
TEST(LayerOps, SharedExpertsRunForEveryToken) {
  ModelSpec m = gpt(2, 1024, 16, 1000);
  m.activation = Activation::SwiGlu;
  m.ffn_hidden = 512;
  m.experts = 8;
  m.top_k = 2;
  MicroBatchShape s{2, 512, 1, false, hw::Dtype::Bf16, true, true};
  const auto routed = layer_ops(m, s);
  EXPECT_TRUE(std::none_of(routed.begin(), routed.end(), [](const Op& o) { return o.name == "shared_up"; }));
  m.shared_experts = 2;
  m.shared_ffn_hidden = 768;
  const auto ops = layer_ops(m, s);
  const Op& up = find(ops, "shared_up");
  EXPECT_DOUBLE_EQ(up.m, 1024);          // every token
  EXPECT_DOUBLE_EQ(up.n, 2 * 2 * 768);   // gate and up of both shared experts
  EXPECT_DOUBLE_EQ(find(ops, "shared_down").k, 2 * 768);
}

TEST(LayerOps, CausalFusedAttentionExecutesHalfTheModelFlops) {
  // full: 4·tokens·s·h/t = 4·1024·512·1024/2 = 1,073,741,824; causal fused runs half.
  MicroBatchShape s{2, 512, 2, true, hw::Dtype::Bf16, true, true};
  const auto ops = layer_ops(gpt(4, 1024, 16, 1000), s);
  const Op& attn = find(ops, "attention");
  EXPECT_DOUBLE_EQ(attn.model_flops.v, 1073741824.0);
  EXPECT_DOUBLE_EQ(attn.fwd_flops.v, 1073741824.0 / 2);
  EXPECT_DOUBLE_EQ(attn.bwd_flops.v, 2.5 * attn.fwd_flops.v);
  EXPECT_TRUE(has_module(attn.modules, RecomputeModule::CoreAttn));
}

TEST(LayerOps, UnfusedAttentionIsTwoBatchedGemmsOverTheWholeScoreMatrix) {
  // 8 heads per rank (16/2) × b 2 = 16 batched GEMMs of s×s×hd = 512×512×64 and 512×64×512;
  // together 2·2·16·512·512·64 = the full 4·tokens·s·h/t, mask or not.
  MicroBatchShape s{2, 512, 2, true, hw::Dtype::Bf16, false, true};
  const auto ops = layer_ops(gpt(4, 1024, 16, 1000), s);
  const Op& qk = find(ops, "attn_scores");
  const Op& pv = find(ops, "attn_context");
  EXPECT_TRUE(qk.batched);
  EXPECT_EQ(qk.count, 16);
  EXPECT_DOUBLE_EQ(qk.k, 64);
  EXPECT_DOUBLE_EQ(pv.n, 64);
  EXPECT_DOUBLE_EQ(qk.model_flops.v + pv.model_flops.v, 1073741824.0);
  EXPECT_TRUE(has_module(find(ops, "softmax").modules, RecomputeModule::CoreAttn));
  EXPECT_DOUBLE_EQ(find(ops, "softmax").elems, 16.0 * 512 * 512);
}

TEST(LayerOps, EagerKernelsLaunchMoreAndMoveMoreThanFusedOnes) {
  ModelSpec m = gpt(4, 1024, 16, 1000);
  m.linear_bias = true;
  m.dropout = true;
  MicroBatchShape fused{2, 512, 2, true, hw::Dtype::Bf16, true, true, true};
  MicroBatchShape eager = fused;
  eager.fused_kernels = false;
  int kf = 0, ke = 0;
  double bf = 0, be = 0;
  for (const auto& op : layer_ops(m, fused)) { kf += op.fwd_kernels + op.bwd_kernels; bf += op.fwd_bytes.v; }
  for (const auto& op : layer_ops(m, eager)) { ke += op.fwd_kernels + op.bwd_kernels; be += op.fwd_bytes.v; }
  EXPECT_GT(ke, kf);
  EXPECT_GT(be, bf);
  // Fused bias-dropout-add: read branch and residual, write the sum (3 tensors) + 1-byte mask.
  const auto fused_ops = layer_ops(m, fused);
  const Op& res = find(fused_ops, "attn_residual");
  EXPECT_DOUBLE_EQ(res.fwd_bytes.v, res.elems * (3 * 2 + 1));
  EXPECT_EQ(res.fwd_kernels, 1);
}

// fp8: one cast(-transpose) per weight GEMM of its 16-bit input forward and of its output gradient
// backward, 2 + 1 + 1 bytes an element; current scaling (the tensor's own amax) reads the 16-bit
// tensor once more first, in a kernel of its own: 6 bytes and twice the kernels, both passes.
TEST(LayerOps, Fp8CurrentScalingReadsEachCastTensorOnceMoreForItsAmax) {
  ModelSpec m = gpt(4, 1024, 16, 1000);
  MicroBatchShape delayed{2, 512, 1, false, hw::Dtype::Fp8, true, true, false};
  MicroBatchShape current = delayed;
  current.fp8_current_scaling = true;
  const auto d = layer_ops(m, delayed), c = layer_ops(m, current);
  ASSERT_EQ(d.size(), c.size());
  const Op& cd = find(d, "fp8_cast");
  const Op& cc = find(c, "fp8_cast");
  const double tokens = 2 * 512.0;
  // Inputs of qkv, out, up and down (k columns) and their output gradients (n columns).
  const double in = tokens * (1024 + 1024 + 1024 + 4096), out = tokens * (3072 + 1024 + 4096 + 1024);
  EXPECT_DOUBLE_EQ(cd.fwd_bytes.v, 4 * in);
  EXPECT_DOUBLE_EQ(cd.bwd_bytes.v, 4 * out);
  EXPECT_DOUBLE_EQ(cc.fwd_bytes.v, 6 * in);
  EXPECT_DOUBLE_EQ(cc.bwd_bytes.v, 6 * out);
  EXPECT_EQ(cd.fwd_kernels, 4);
  EXPECT_EQ(cc.fwd_kernels, 8);
  EXPECT_EQ(cc.bwd_kernels, 2 * cd.bwd_kernels);
  for (std::size_t i = 0; i < d.size(); ++i) {  // nothing else moves
    if (d[i].name == "fp8_cast") continue;
    EXPECT_DOUBLE_EQ(d[i].fwd_bytes.v, c[i].fwd_bytes.v) << d[i].name;
  }
}

// torch.autocast over fp32 parameters: per micro-batch, every weight cast to 16 bits forward and
// its gradient back backward (6 bytes a parameter each way), the two norm outputs that feed GEMMs
// cast likewise, and the norms and residual adds on fp32 tensors. Eager, the casts back to fp32
// are an op of their own on PyTorch's non-vectorized copy path, and each residual add's backward
// casts its branch's gradient down to 16 bits.
TEST(LayerOps, AutocastCastsWeightsAndNormOutputsAndKeepsAnFp32ResidualStream) {
  ModelSpec m = gpt(4, 1024, 16, 1000);
  MicroBatchShape plain{2, 512, 1, false, hw::Dtype::Bf16, true, true, false};
  MicroBatchShape ac = plain;
  ac.autocast = true;
  const auto p = layer_ops(m, plain), a = layer_ops(m, ac);
  EXPECT_EQ(a.size(), p.size() + 2);
  const Op& down = find(a, "autocast_cast");
  const Op& up = find(a, "autocast_grad_cast");
  double weights = 0;
  for (const auto& op : p)
    if (op.kind == OpKind::Gemm && op.wgrad_out_bytes > 0) weights += op.k * op.n * op.count;
  EXPECT_DOUBLE_EQ(weights, 1024.0 * 3072 + 1024.0 * 1024 + 1024.0 * 4096 * 2);  // qkv, out, up, down
  const double tokens = 2 * 512.0;
  EXPECT_DOUBLE_EQ(down.fwd_bytes.v, 6 * (weights + 2 * tokens * 1024));
  EXPECT_DOUBLE_EQ(down.bwd_bytes.v, 6 * 2 * tokens * 1024);  // the two residual joins
  EXPECT_EQ(down.fwd_kernels, 4 + 2);
  EXPECT_EQ(down.bwd_kernels, 2);
  EXPECT_FALSE(down.unvectorized);
  EXPECT_DOUBLE_EQ(up.fwd_bytes.v, 0);
  EXPECT_EQ(up.fwd_kernels, 0);
  EXPECT_DOUBLE_EQ(up.bwd_bytes.v, down.fwd_bytes.v);
  EXPECT_EQ(up.bwd_kernels, 4 + 2);
  EXPECT_TRUE(up.unvectorized);
  EXPECT_DOUBLE_EQ(find(a, "attn_norm").fwd_bytes.v, 2 * find(p, "attn_norm").fwd_bytes.v);  // fp32, not bf16
  EXPECT_DOUBLE_EQ(find(a, "mlp_residual").bwd_bytes.v, 2 * find(p, "mlp_residual").bwd_bytes.v);
  EXPECT_DOUBLE_EQ(find(a, "qkv").fwd_bytes.v, find(p, "qkv").fwd_bytes.v);  // GEMMs unchanged
  // Fused (torch.compile): one op, both directions alike.
  MicroBatchShape fac = ac;
  fac.fused_kernels = true;
  const auto f = layer_ops(m, fac);
  const Op& fc = find(f, "autocast_cast");
  EXPECT_DOUBLE_EQ(fc.fwd_bytes.v, down.fwd_bytes.v);
  EXPECT_DOUBLE_EQ(fc.bwd_bytes.v, fc.fwd_bytes.v);
  EXPECT_EQ(std::count_if(f.begin(), f.end(), [](const Op& o) { return o.name == "autocast_grad_cast"; }), 0);
  // The head: its weight and the final norm's output; no residual join.
  const auto ha = head_ops(m, ac);
  EXPECT_DOUBLE_EQ(find(ha, "autocast_cast").fwd_bytes.v, 6 * (1000.0 * 1024 + tokens * 1024));
  EXPECT_DOUBLE_EQ(find(ha, "autocast_cast").bwd_bytes.v, 0);
  EXPECT_DOUBLE_EQ(find(ha, "autocast_grad_cast").bwd_bytes.v, 6 * (1000.0 * 1024 + tokens * 1024));
}

// Eager PyTorch: a Linear's bias rides in its GEMM's epilogue forward, and its gradient is a
// column sum of the output gradient, one reduction kernel per Linear, backward only.
TEST(LayerOps, EagerBiasGradientsAreReductionsOfTheOutputGradients) {
  ModelSpec m = gpt(4, 1024, 16, 1000);
  m.linear_bias = true;
  MicroBatchShape eager{2, 512, 2, false, hw::Dtype::Bf16, true, true, false};
  const auto ops = layer_ops(m, eager);
  const Op& bg = find(ops, "bias_grad");
  const double tokens = 2 * 512.0;
  const double cols = 3072 / 2.0 + 1024 + 4096 / 2.0 + 1024;  // qkv, out, up (column-split), down
  EXPECT_DOUBLE_EQ(bg.bwd_bytes.v, tokens * cols * 2);
  EXPECT_DOUBLE_EQ(bg.fwd_bytes.v, 0);
  EXPECT_EQ(bg.bwd_kernels, 4);
  EXPECT_EQ(bg.fwd_kernels, 0);
  // No bias kernel in the residual join or the GeLU forward: branch + residual → sum.
  const Op& res = find(ops, "attn_residual");
  EXPECT_DOUBLE_EQ(res.fwd_bytes.v, res.elems * 3 * 2);
  EXPECT_EQ(find(ops, "gelu").fwd_kernels, 1);
  // Without biases, or with fused kernels, there is none.
  m.linear_bias = false;
  const auto nb = layer_ops(m, eager);
  EXPECT_EQ(std::count_if(nb.begin(), nb.end(), [](const Op& o) { return o.name == "bias_grad"; }), 0);
  m.linear_bias = true;
  eager.fused_kernels = true;
  const auto fu = layer_ops(m, eager);
  EXPECT_EQ(std::count_if(fu.begin(), fu.end(), [](const Op& o) { return o.name == "bias_grad"; }), 0);
}

// Gradient accumulation outside the GEMMs: each weight GEMM writes its gradient in 16 bits (2
// bytes per weight element, not the fused path's fp32 read and write, 8), and after the backward
// one kernel per weight adds it into the fp32 main gradient (2 + 4 + 4 bytes, non-vectorized:
// mixed formats) or, DeepSpeed's way, casts it (2 + 4, non-vectorized) and adds (4 + 4 + 4).
TEST(LayerOps, GradientsAccumulatedOutsideTheGemmsAreAddedByKernelsOfTheirOwn) {
  const ModelSpec m = gpt(4, 1024, 16, 1000);
  MicroBatchShape s{2, 512, 2, false, hw::Dtype::Bf16};
  const auto fused = layer_ops(m, s);
  EXPECT_EQ(std::count_if(fused.begin(), fused.end(), [](const Op& o) { return o.name.rfind("grad_", 0) == 0; }), 0);
  // The weights of one TP rank: qkv 1024 × 3072/2, out 1024/2 × 1024, up 1024 × 4096/2, down 4096/2 × 1024.
  const double w = 1024 * 1536.0 + 512 * 1024.0 + 1024 * 2048.0 + 2048 * 1024.0;
  s.grad_accumulation = GradAccumulation::Add;
  const auto add = layer_ops(m, s);
  for (const char* g : {"qkv", "attn_out", "mlp_up", "mlp_down"}) {
    const Op& f = find(fused, g);
    const Op& a = find(add, g);
    EXPECT_EQ(a.wgrad_out_bytes, 2) << g;
    EXPECT_DOUBLE_EQ(f.bwd_bytes.v - a.bwd_bytes.v, a.k * a.n * 6) << g;  // 8 → 2 bytes per weight
    EXPECT_DOUBLE_EQ(a.bwd_flops.v, f.bwd_flops.v) << g;
  }
  const Op& acc = find(add, "grad_accum");
  EXPECT_DOUBLE_EQ(acc.bwd_bytes.v, w * 10);
  EXPECT_DOUBLE_EQ(acc.fwd_bytes.v, 0);
  EXPECT_EQ(acc.bwd_kernels, 4);
  EXPECT_EQ(acc.fwd_kernels, 0);
  EXPECT_TRUE(acc.unvectorized);
  s.grad_accumulation = GradAccumulation::CastAdd;
  const auto cast_add = layer_ops(m, s);
  const Op& cast = find(cast_add, "grad_cast");
  const Op& acc2 = find(cast_add, "grad_accum");
  EXPECT_DOUBLE_EQ(cast.bwd_bytes.v, w * 6);
  EXPECT_TRUE(cast.unvectorized);
  EXPECT_DOUBLE_EQ(acc2.bwd_bytes.v, w * 12);
  EXPECT_FALSE(acc2.unvectorized);
  EXPECT_EQ(cast.bwd_kernels + acc2.bwd_kernels, 8);
  // add16: into a 16-bit accumulator, 2 + 2 + 2 bytes, one vectorized kernel per weight.
  s.grad_accumulation = GradAccumulation::Add16;
  const auto add16 = layer_ops(m, s);
  const Op& acc3 = find(add16, "grad_accum");
  EXPECT_DOUBLE_EQ(acc3.bwd_bytes.v, w * 6);
  EXPECT_FALSE(acc3.unvectorized);
  EXPECT_EQ(acc3.bwd_kernels, 4);
  EXPECT_EQ(find(add16, "qkv").wgrad_out_bytes, 2);
  s.grad_accumulation = GradAccumulation::CastAdd;
  // The output layer's weight accumulates the same way; the embedding's table gradient (never
  // fused) is cast first under cast_add: 8 bytes more per table element.
  const auto head = head_ops(m, s);
  EXPECT_DOUBLE_EQ(find(head, "grad_accum").bwd_bytes.v, 1024 * 500.0 * 12);
  s.grad_accumulation = GradAccumulation::Add;
  const double emb_add = embedding_ops(m, s)[0].bwd_bytes.v;
  s.grad_accumulation = GradAccumulation::CastAdd;
  EXPECT_DOUBLE_EQ(embedding_ops(m, s)[0].bwd_bytes.v - emb_add, 500.0 * 1024 * 8);
  EXPECT_EQ(embedding_ops(m, s)[0].bwd_kernels, 4);  // zero-fill, row adds, the cast, the add
  s.grad_accumulation = GradAccumulation::Add16;  // the table's add into 16 bits: 2 + 2 + 2 for 2 + 4 + 4
  EXPECT_DOUBLE_EQ(emb_add - embedding_ops(m, s)[0].bwd_bytes.v, 500.0 * 1024 * 4);
}

// Eager grouped-query attention copies K and V out to every query head (repeat_kv) and sums
// the gradients back; fused kernels and plain multi-head attention do not.
TEST(LayerOps, EagerGqaRepeatsKeysAndValues) {
  ModelSpec m = gpt(4, 1024, 16, 1000);
  m.kv_heads = 4;  // head dim 64: K and V are 256 wide, Q 1024
  MicroBatchShape eager{2, 512, 1, false, hw::Dtype::Bf16, true, true, false};
  const auto ops = layer_ops(m, eager);
  const Op& rep = find(ops, "gqa_repeat");
  const double tokens = 2 * 512.0;
  EXPECT_DOUBLE_EQ(rep.fwd_bytes.v, tokens * 2 * (1024 + 256) * 2);
  EXPECT_DOUBLE_EQ(rep.bwd_bytes.v, rep.fwd_bytes.v);
  EXPECT_TRUE(rep.unvectorized);
  EXPECT_TRUE(find(ops, "rope").unvectorized);
  eager.fused_kernels = true;
  const auto fu = layer_ops(m, eager);
  EXPECT_EQ(std::count_if(fu.begin(), fu.end(), [](const Op& o) { return o.name == "gqa_repeat"; }), 0);
  EXPECT_FALSE(find(fu, "rope").unvectorized);
  m.kv_heads = 16;
  eager.fused_kernels = false;
  const auto mha = layer_ops(m, eager);
  EXPECT_EQ(std::count_if(mha.begin(), mha.end(), [](const Op& o) { return o.name == "gqa_repeat"; }), 0);
}

// Norm kernels: fused (one pass back), PyTorch's native kernels (the weight gradient's second
// backward kernel re-reads x and dy: 5 tensors), RMSNorm in elementary ops; auto picks by
// fused_kernels and the norm. Bytes per element of 16-bit x (both ops of an eager norm).
TEST(LayerOps, NormKernelsMoveWhatTheirBackwardsRead) {
  ModelSpec m = gpt(4, 1024, 16, 1000);
  m.norm = Norm::RmsNorm;
  MicroBatchShape s{2, 512, 1, false, hw::Dtype::Bf16, true, true, false};
  auto norm_bwd = [&](NormKernel k, bool fused) {
    MicroBatchShape x = s;
    x.norm_kernel = k;
    x.fused_kernels = fused;
    const auto ops = layer_ops(m, x);
    const Op& n = find(ops, "attn_norm");
    const bool split = std::any_of(ops.begin(), ops.end(), [](const Op& o) { return o.name == "attn_norm_unvec"; });
    return (n.bwd_bytes.v + (split ? find(ops, "attn_norm_unvec").bwd_bytes.v : 0)) / n.elems;
  };
  EXPECT_DOUBLE_EQ(norm_bwd(NormKernel::Fused, false), 3 * 2);
  EXPECT_DOUBLE_EQ(norm_bwd(NormKernel::Native, false), 5 * 2);
  EXPECT_DOUBLE_EQ(norm_bwd(NormKernel::Eager, false), 92);
  EXPECT_DOUBLE_EQ(norm_bwd(NormKernel::Auto, false), 92);  // eager RMSNorm
  EXPECT_DOUBLE_EQ(norm_bwd(NormKernel::Auto, true), 3 * 2);
  m.norm = Norm::LayerNorm;
  EXPECT_DOUBLE_EQ(norm_bwd(NormKernel::Auto, false), 5 * 2);  // nn.LayerNorm's native kernels
  EXPECT_DOUBLE_EQ(norm_bwd(NormKernel::Eager, false), 5 * 2);
}

// RMSNorm in elementary ops, kernel by kernel with its fp32 intermediates (docs/cost-models.md):
// per element of 16-bit x, forward x.float() 2 + 4 B, pow 4 + 4, mean 4, x·r 4 + 4, the cast back
// 4 + 2, ·weight 2 + 2; backward dy·weight 2 + 2, dy·y 2 + 2 + 2 and its column sum 2, the cast up
// 2 + 4, g·r 4 + 4, g·x 4 + 4 + 4 and its row sum 4, mean's broadcast 4, pow's backward (copy 4 + 4,
// ×2 4 + 4, ×g 4 + 4 + 4), the branches' sum 4 + 4 + 4, the cast back 4 + 2. The casts up and the
// products with a broadcast operand take PyTorch's non-vectorized path: a second op. Under
// autocast (fp32 x) there are no casts. Recompute modules tag both ops alike.
TEST(LayerOps, EagerRmsNormCountsItsFp32IntermediatesKernelByKernel) {
  ModelSpec m = gpt(4, 1024, 16, 1000);
  m.norm = Norm::RmsNorm;
  MicroBatchShape s{2, 512, 1, false, hw::Dtype::Bf16, true, true, false};
  s.fused_kernels = false;
  const auto ops = layer_ops(m, s);
  for (const char* name : {"attn_norm", "mlp_norm"}) {
    const Op& v = find(ops, name);
    const Op& u = find(ops, std::string(name) + "_unvec");
    EXPECT_DOUBLE_EQ(v.elems, 1024.0 * 1024) << name;
    EXPECT_DOUBLE_EQ(v.fwd_bytes.v / v.elems, 8 + 4 + 6) << name;
    EXPECT_DOUBLE_EQ(u.fwd_bytes.v / u.elems, 6 + 8 + 4) << name;
    EXPECT_DOUBLE_EQ(v.bwd_bytes.v / v.elems, 6 + 2 + 12 + 4 + 28 + 12 + 6) << name;
    EXPECT_DOUBLE_EQ(u.bwd_bytes.v / u.elems, 4 + 6 + 8 + 4) << name;
    EXPECT_FALSE(v.unvectorized) << name;
    EXPECT_TRUE(u.unvectorized) << name;
    EXPECT_EQ(v.kind, OpKind::Elementwise) << name;  // ordinary kernels, no norm kernel among them
    EXPECT_EQ(v.fwd_kernels + u.fwd_kernels, 8) << name;  // 6 whole-tensor kernels + eps and rsqrt
    EXPECT_EQ(v.op_recompute, u.op_recompute) << name;
    EXPECT_EQ(v.modules, u.modules) << name;
  }
  EXPECT_EQ(find(ops, "mlp_norm_unvec").modules, module_bit(RecomputeModule::Mlp));
  const auto head = head_ops(m, s);
  EXPECT_DOUBLE_EQ(find(head, "final_norm_unvec").fwd_bytes.v, find(ops, "attn_norm_unvec").fwd_bytes.v);
  s.autocast = true;  // fp32 residual stream: pow 8, mean 4 | x·r 8, ·weight 8
  const auto fp32 = layer_ops(m, s);
  EXPECT_DOUBLE_EQ(find(fp32, "attn_norm").fwd_bytes.v / (1024.0 * 1024), 12);
  EXPECT_DOUBLE_EQ(find(fp32, "attn_norm_unvec").fwd_bytes.v / (1024.0 * 1024), 16);
  EXPECT_DOUBLE_EQ(find(fp32, "attn_norm").bwd_bytes.v / (1024.0 * 1024), 16 + 56);
  EXPECT_DOUBLE_EQ(find(fp32, "attn_norm_unvec").bwd_bytes.v / (1024.0 * 1024), 8 + 12);
}

TEST(HeadOps, CrossEntropyStreamsItsFp32LogitsAsMegatronDoes) {
  // tokens 1024, vocab 1000 / tp 2 = 500 per rank: 512,000 logits; forward 38 bytes each in
  // 6 kernels, backward 14 in 2 (docs/cost-models.md#kernels), of which the `.float()` cast and
  // the broadcast subtract, divide and multiply run on PyTorch's non-vectorized path.
  MicroBatchShape s{2, 512, 2, true, hw::Dtype::Bf16, true, true};
  const auto ops = head_ops(gpt(4, 1024, 16, 1000), s);
  const Op& loss = find(ops, "loss");
  const Op& bc = find(ops, "loss_broadcast");
  EXPECT_DOUBLE_EQ(loss.elems, 512000.0);
  EXPECT_DOUBLE_EQ(loss.fwd_bytes.v + bc.fwd_bytes.v, 512000.0 * 38);
  EXPECT_DOUBLE_EQ(loss.bwd_bytes.v + bc.bwd_bytes.v, 512000.0 * 14);
  EXPECT_EQ(loss.fwd_kernels + bc.fwd_kernels, 6);
  EXPECT_EQ(loss.bwd_kernels + bc.bwd_kernels, 2);
  EXPECT_DOUBLE_EQ(bc.fwd_bytes.v, 512000.0 * 22);  // cast 2 + 4, subtract and divide 4 + 4 each
  EXPECT_DOUBLE_EQ(bc.bwd_bytes.v, 512000.0 * 8);   // multiply by the broadcast output gradient
  EXPECT_TRUE(bc.unvectorized);
  EXPECT_FALSE(loss.unvectorized);
  EXPECT_DOUBLE_EQ(bc.fwd_flops.v, 0.0);  // the loss's FLOPs are counted once
  // The output GEMM's weight gradient accumulates into an fp32 main gradient.
  EXPECT_DOUBLE_EQ(find(ops, "output").wgrad_out_bytes, 8);
}

// Eager PyTorch (fused_kernels = false): `cross_entropy` on `.float()` logits, the kernels the
// H200 profiles show (microbenchmarks.md §9f): a non-vectorized cast, log_softmax's 16 bytes each
// way, the NLL gradient's zero fill and the vectorized cast of the gradient back to 16 bits.
TEST(HeadOps, EagerCrossEntropyIsLogSoftmaxOnACastCopy) {
  MicroBatchShape s{2, 512, 2, true, hw::Dtype::Bf16, true, true};
  s.fused_kernels = false;
  const auto ops = head_ops(gpt(4, 1024, 16, 1000), s);
  const Op& loss = find(ops, "loss");
  const Op& cast = find(ops, "loss_cast");
  EXPECT_DOUBLE_EQ(loss.fwd_bytes.v, 512000.0 * 16);
  EXPECT_DOUBLE_EQ(loss.bwd_bytes.v, 512000.0 * (4 + 16 + 6));
  EXPECT_EQ(loss.bwd_kernels, 4);
  EXPECT_DOUBLE_EQ(cast.fwd_bytes.v, 512000.0 * 6);
  EXPECT_DOUBLE_EQ(cast.bwd_bytes.v, 0.0);
  EXPECT_EQ(cast.bwd_kernels, 0);
  EXPECT_TRUE(cast.unvectorized);
  for (const Op& op : ops) EXPECT_NE(op.name, "loss_broadcast");  // Megatron's kernels only
}

// A fused cross-entropy over the 16-bit logits (Inductor, FlashAttention's xentropy): two reads
// forward, a read and an in-place write backward, 2 bytes each, one kernel each way.
TEST(HeadOps, FusedCrossEntropyReadsTheSixteenBitLogits) {
  MicroBatchShape s{2, 512, 2, true, hw::Dtype::Bf16, true, true};
  s.loss_kernel = LossKernel::Fused;
  const auto ops = head_ops(gpt(4, 1024, 16, 1000), s);
  const Op& loss = find(ops, "loss");
  EXPECT_DOUBLE_EQ(loss.fwd_bytes.v, 512000.0 * 4);
  EXPECT_DOUBLE_EQ(loss.bwd_bytes.v, 512000.0 * 4);
  EXPECT_EQ(loss.fwd_kernels, 1);
  EXPECT_EQ(loss.bwd_kernels, 1);
}

TEST(ModelFlops, MatchesMegatronFormulaForGpt) {
  // 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) for the 1.7B row of the Megatron table.
  const ModelSpec m = gpt(24, 2048, 16, 131072);
  TrainingSpec t;
  t.global_batch = 192;
  t.seq_len = 4096;
  const double B = 192, s = 4096, l = 24, h = 2048, V = 131072;
  const double want = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(model_flops_per_step(m, t).v / want, 1.0, 1e-12);
}

// Expert parallelism: a rank holds experts/ep experts and runs ep× the tokens per expert — the
// same FLOPs and bytes in fewer, taller GEMMs; the dense ops do not change.
TEST(LayerOps, ExpertParallelismRunsFewerTallerExpertGemms) {
  ModelSpec moe = gpt(2, 512, 8, 1000);
  moe.experts = 8;
  moe.top_k = 2;
  MicroBatchShape s{1, 1024, 1, true, hw::Dtype::Bf16, true, true};
  const auto one = layer_ops(moe, s);
  s.ep = 4;
  const auto four = layer_ops(moe, s);
  for (const char* name : {"expert_up", "expert_down"}) {
    const Op& a = find(one, name);
    const Op& b = find(four, name);
    EXPECT_EQ(a.count, 8);
    EXPECT_EQ(b.count, 2);
    EXPECT_DOUBLE_EQ(b.m, 4 * a.m);  // 1024 tokens · top-2 / 8 experts = 256 rows; × 4
    EXPECT_DOUBLE_EQ(a.m, 256);
    EXPECT_DOUBLE_EQ(b.n, a.n);
    EXPECT_DOUBLE_EQ(b.fwd_flops.v, a.fwd_flops.v);
    EXPECT_DOUBLE_EQ(b.model_flops.v, a.model_flops.v);
  }
  EXPECT_DOUBLE_EQ(find(four, "qkv").fwd_flops.v, find(one, "qkv").fwd_flops.v);
  EXPECT_DOUBLE_EQ(find(four, "expert_gelu").fwd_bytes.v, find(one, "expert_gelu").fwd_bytes.v);
}

// expert_kernel: grouped (the default with fused kernels) runs a layer's local experts as one
// kernel each way whose tiles share the waves (a batched op); a loop runs one GEMM per expert,
// each its own launch. The FLOPs and bytes are the same.
TEST(LayerOps, GroupedExpertsRunAsOneKernelAndALoopAsOnePerExpert) {
  ModelSpec moe = gpt(2, 512, 8, 1000);
  moe.experts = 8;
  moe.top_k = 2;
  MicroBatchShape s{1, 1024, 1, true, hw::Dtype::Bf16, true, true};
  EXPECT_TRUE(s.grouped_experts);  // the default
  const auto grouped = layer_ops(moe, s);
  s.grouped_experts = false;
  const auto loop = layer_ops(moe, s);
  for (const char* name : {"expert_up", "expert_down"}) {
    const Op& g = find(grouped, name);
    const Op& l = find(loop, name);
    EXPECT_TRUE(g.batched);
    EXPECT_FALSE(l.batched);
    EXPECT_EQ(g.count, 8);
    EXPECT_EQ(l.count, 8);
    EXPECT_EQ(g.fwd_kernels, 1);
    EXPECT_EQ(g.bwd_kernels, 2);
    EXPECT_EQ(l.fwd_kernels, 8);
    EXPECT_EQ(l.bwd_kernels, 16);
    EXPECT_DOUBLE_EQ(g.fwd_flops.v, l.fwd_flops.v);
    EXPECT_DOUBLE_EQ(g.bwd_bytes.v, l.bwd_bytes.v);
    EXPECT_DOUBLE_EQ(g.wgrad_out_bytes, l.wgrad_out_bytes);
  }
  // In fp8 the grouped experts' inputs are cast in one kernel per grouped GEMM (Transformer
  // Engine's fused multi-tensor cast-transpose), the loop's in one per expert: 2 × (8 − 1) more.
  s.dtype = hw::Dtype::Fp8;
  const Op loop_cast = find(layer_ops(moe, s), "fp8_cast");  // a copy: the list is a temporary
  s.grouped_experts = true;
  const Op grouped_cast = find(layer_ops(moe, s), "fp8_cast");
  EXPECT_EQ(loop_cast.fwd_kernels - grouped_cast.fwd_kernels, 14);
  EXPECT_EQ(loop_cast.bwd_kernels - grouped_cast.bwd_kernels, 14);
  EXPECT_DOUBLE_EQ(loop_cast.fwd_bytes.v, grouped_cast.fwd_bytes.v);
  // The resolution of TrainingSpec::expert_kernel: auto follows fused_kernels.
  TrainingSpec t;
  EXPECT_TRUE(t.grouped_experts());
  t.fused_kernels = false;
  EXPECT_FALSE(t.grouped_experts());
  t.expert_kernel = ExpertKernel::Grouped;
  EXPECT_TRUE(t.grouped_experts());
  t.fused_kernels = true;
  t.expert_kernel = ExpertKernel::Loop;
  EXPECT_FALSE(t.grouped_experts());
}

TEST(ModelFlops, MoeCountsTopKExpertsWithoutPadding) {
  ModelSpec dense = gpt(2, 512, 8, 1000);
  ModelSpec moe = dense;
  moe.experts = 8;
  moe.top_k = 2;
  moe.capacity_factor = 1.25;
  TrainingSpec t;
  t.global_batch = 4;
  t.seq_len = 256;
  // MLP per token: 2 GEMMs of 2·h·4h = 16h² fwd; top-2 doubles it; router adds 2·h·E;
  // per layer, times 2 layers, times 3 for forward + backward.
  const double tokens = 4 * 256, h = 512;
  const double extra = 3 * 2 * (tokens * 16 * h * h + tokens * 2 * h * 8);
  EXPECT_NEAR(model_flops_per_step(moe, t).v - model_flops_per_step(dense, t).v, extra, extra * 1e-9);
}

// Routing imbalance: the expert GEMMs of the most loaded EP rank have moe_rank_load × the
// balanced rows (1024 tokens · top-2 / 8 experts = 256 rows per expert, ×4 under ep 4; shares
// 0.3, 0.1 ×7 put loads 2.4 and 0.8 on rank 0: 1.6×), so 1.6× the FLOPs; the model FLOPs (the
// top_k experts' work of every token) do not move; the permute of the rank's own tokens neither.
TEST(LayerOps, RoutingImbalanceScalesTheMostLoadedRanksExpertGemms) {
  ModelSpec m = gpt(2, 512, 8, 1000);
  m.experts = 8;
  m.top_k = 2;
  MicroBatchShape s;
  s.micro_batch = 4;
  s.seq_len = 256;
  s.ep = 4;
  const auto uniform = layer_ops(m, s);
  m.expert_load = {0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
  const auto skewed = layer_ops(m, s);
  for (const char* name : {"expert_up", "expert_down"}) {
    const Op& a = find(uniform, name);
    const Op& b = find(skewed, name);
    EXPECT_DOUBLE_EQ(a.m, 1024);
    EXPECT_NEAR(b.m, 1.6 * 1024, 1e-9);
    EXPECT_EQ(b.count, 2);
    EXPECT_NEAR(b.fwd_flops.v, 1.6 * a.fwd_flops.v, 1e-6 * a.fwd_flops.v);
    EXPECT_NEAR(b.model_flops.v, a.model_flops.v, 1e-6 * a.model_flops.v);
  }
  EXPECT_DOUBLE_EQ(find(skewed, "moe_permute").fwd_bytes.v, find(uniform, "moe_permute").fwd_bytes.v);
}

// MLA (DeepSeek-V3 at tp 8, no sequence parallelism): the down projections whole on every rank,
// the up projections and O split over the heads; the model FLOPs of a layer's projections are
// 2·tokens·(its parameters): Q down 7168·1536, Q up 1536·16·192, KV down 7168·576, KV up
// 512·16·256, O 16·128·7168. One 4096-token sequence on each of 8 TP ranks.
MicroBatchShape one_sequence_at_tp8() {
  MicroBatchShape s;
  s.micro_batch = 1;
  s.seq_len = 4096;
  s.tp = 8;
  return s;
}

TEST(LayerOps, MultiHeadLatentAttentionProjections) {
  const ModelSpec m = *preset("deepseek-v3");
  MicroBatchShape s = one_sequence_at_tp8();
  s.sequence_parallel = false;
  const auto ops = layer_ops(m, s);
  EXPECT_DOUBLE_EQ(find(ops, "mla_q_down").n, 1536);
  EXPECT_DOUBLE_EQ(find(ops, "mla_q_down").k, 7168);
  EXPECT_DOUBLE_EQ(find(ops, "mla_q_up").n, 16 * 192);
  EXPECT_DOUBLE_EQ(find(ops, "mla_kv_down").n, 576);
  EXPECT_DOUBLE_EQ(find(ops, "qkv").n, 16 * 256);
  EXPECT_DOUBLE_EQ(find(ops, "qkv").k, 512);
  EXPECT_DOUBLE_EQ(find(ops, "attn_out").k, 16 * 128);
  double proj = 0;
  for (const char* n : {"mla_q_down", "mla_q_up", "mla_kv_down", "qkv", "attn_out"}) proj += find(ops, n).model_flops.v;
  const double params = 7168.0 * 1536 + 1536.0 * 16 * 192 + 7168.0 * 576 + 512.0 * 16 * 256 + 16.0 * 128 * 7168;
  EXPECT_NEAR(proj, 2 * 4096 * params, 1.0);
}

// Under sequence parallelism each TP rank runs the duplicated down projections and the latents'
// norms on its own sequence shard (Megatron-Core's hidden states are [s/tp, b, h] there); the up
// projections see every token after their gather. Model FLOPs over the 8 ranks then count the
// down projections once.
TEST(LayerOps, LatentDownProjectionsRunOnTheSequenceShard) {
  const ModelSpec m = *preset("deepseek-v3");
  MicroBatchShape s = one_sequence_at_tp8();
  s.sequence_parallel = false;
  const auto whole = layer_ops(m, s);
  s.sequence_parallel = true;
  const auto shard = layer_ops(m, s);
  for (const char* n : {"mla_q_down", "mla_kv_down"}) {
    EXPECT_DOUBLE_EQ(find(whole, n).m, 4096) << n;
    EXPECT_DOUBLE_EQ(find(shard, n).m, 4096.0 / 8) << n;
  }
  EXPECT_DOUBLE_EQ(find(shard, "mla_norm").fwd_bytes.v * 8, find(whole, "mla_norm").fwd_bytes.v);
  for (const char* n : {"mla_q_up", "qkv", "attn_out"}) EXPECT_DOUBLE_EQ(find(shard, n).m, find(whole, n).m) << n;
}

// MLA's attention core: the score product at d_qk = 192, the value product at d_v = 128 (not
// both at 192): forward 2·pairs·(192 + 128), backward 2·pairs·(3·192 + 2·128) = 2.6× the
// forward (cuDNN's count, docs/research-attention-head-dim.md); a causal kernel runs half the
// pairs. A model whose value heads equal its key heads keeps 4·pairs·d and 2.5×.
TEST(LayerOps, LatentAttentionCountsItsValueHeadsAtTheirOwnWidth) {
  const ModelSpec m = *preset("deepseek-v3");
  const MicroBatchShape s = one_sequence_at_tp8();
  const auto ops = layer_ops(m, s);
  const Op& a = find(ops, "attention");
  const double pairs = 4096.0 * 4096 * 16;  // tokens × keys × heads a rank
  EXPECT_NEAR(a.model_flops.v, 2 * pairs * (192 + 128), 1.0);
  EXPECT_NEAR(a.fwd_flops.v, pairs * (192 + 128), 1.0);
  EXPECT_NEAR(a.bwd_flops.v, pairs * (3 * 192 + 2 * 128), 1.0);
  const ModelSpec llama = *preset("llama3-8b");
  const auto llama_ops = layer_ops(llama, s);
  const Op& b = find(llama_ops, "attention");
  EXPECT_NEAR(b.model_flops.v, 4 * 4096.0 * 4096 * 4096 / 8, 1.0);
  EXPECT_NEAR(b.bwd_flops.v, 2.5 * b.fwd_flops.v, 1.0);
}

// A MoE model's model FLOPs count its dense layers as dense: 3 dense + 58 MoE for DeepSeek-V3.
TEST(ModelFlops, DenseLayersOfAMoeModelCountAsDense) {
  const ModelSpec m = *preset("deepseek-v3");
  TrainingSpec t;
  t.global_batch = 1;
  t.seq_len = 4096;
  MicroBatchShape s;
  s.seq_len = 4096;
  auto layer = [&](const ModelSpec& lm) {
    double f = 0;
    for (const Op& op : layer_ops(lm, s)) f += op.model_flops.v;
    return f;
  };
  double head = 0;
  for (const Op& op : head_ops(m, s)) head += op.model_flops.v;
  EXPECT_NEAR(model_flops_per_step(m, t).v, 3 * (58 * layer(m) + 3 * layer(dense_layer_model(m)) + head),
              1e-9 * model_flops_per_step(m, t).v);
  EXPECT_GT(layer(dense_layer_model(m)), 0);
  EXPECT_EQ(dense_layer_model(m).experts, 1);
  EXPECT_EQ(dense_layer_model(m).ffn_hidden, 18432);
}

}  // namespace
}  // namespace hetsim::workload
