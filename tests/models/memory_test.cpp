#include "models/cost/memory.hpp"

#include <gtest/gtest.h>

namespace hetsim::cost {
namespace {

// Korthikanti et al.'s model: MHA, GeLU with 4h, dropout, bf16.
workload::ModelSpec korthikanti(int h, int a) {
  workload::ModelSpec m;
  m.layers = 1; m.hidden = h; m.heads = a; m.kv_heads = a; m.ffn_hidden = 4 * h; m.vocab = 1000;
  m.dropout = true;
  return m;
}

TEST(Activations, NoRecomputeWithoutParallelismIs34PlusScores) {
  // s·b·h·(34 + 5·a·s/h), s 2048, b 1, h 12288, a 96
  const double s = 2048, b = 1, h = 12288, a = 96;
  const Bytes got = activation_bytes_per_layer(korthikanti(12288, 96), b, s, 1, false, Recompute::None,
                                               false, hw::Dtype::Bf16);
  EXPECT_NEAR(got.v, s * b * h * (34 + 5 * a * s / h), 1.0);
}

TEST(Activations, TensorParallelWithoutSequenceParallel) {
  // s·b·h·(10 + 24/t + 5·a·s/(h·t)), t = 8
  const double s = 2048, b = 2, h = 12288, a = 96, t = 8;
  const Bytes got = activation_bytes_per_layer(korthikanti(12288, 96), b, s, 8, false, Recompute::None,
                                               false, hw::Dtype::Bf16);
  EXPECT_NEAR(got.v, s * b * h * (10 + 24 / t + 5 * a * s / (h * t)), 1.0);
}

TEST(Activations, SequenceParallelSelectiveAndFull) {
  const double s = 2048, b = 1, h = 12288, t = 8;
  const auto m = korthikanti(12288, 96);
  // selective + SP: s·b·h·34/t
  EXPECT_NEAR(activation_bytes_per_layer(m, b, s, 8, true, Recompute::Selective, false, hw::Dtype::Bf16).v,
              s * b * h * 34 / t, 1.0);
  // full + SP: 2·s·b·h/t (the layer input only)
  EXPECT_NEAR(activation_bytes_per_layer(m, b, s, 8, true, Recompute::Full, false, hw::Dtype::Bf16).v,
              2 * s * b * h / t, 1.0);
}

TEST(Activations, FlashAttentionKeepsOnlyLogSumExp) {
  // 34·s·b·h/t + 4·a·s·b/t
  const double s = 4096, b = 1, h = 4096, a = 32, t = 2;
  EXPECT_NEAR(activation_bytes_per_layer(korthikanti(4096, 32), b, s, 2, true, Recompute::None, true,
                                         hw::Dtype::Bf16).v,
              34 * s * b * h / t + 4 * a * s * b / t, 1.0);
}

TEST(Activations, SelectiveOpKeepsWhatTorchtitansPolicyKeeps) {
  // Llama 3 8B (GQA g = 1/4, SwiGLU f = 3.5h), flash attention, bf16, b 2, s 8192.
  workload::ModelSpec m;
  m.layers = 1; m.hidden = 4096; m.heads = 32; m.kv_heads = 8; m.ffn_hidden = 14336; m.vocab = 1000;
  m.activation = workload::Activation::SwiGlu;
  const double s = 8192, b = 2, sbh = s * b * 4096, lse = 4.0 * 32 * s * b;
  // tp 1: input 2 + q 2 + v 0.5 + gate 7 + attention output 2 + down projection 2 = 15.5 bytes
  EXPECT_NEAR(activation_bytes_per_layer(m, b, s, 1, true, Recompute::SelectiveOp, true, hw::Dtype::Bf16).v,
              15.5 * sbh + lse, 1.0);
  // tp 2 with sequence parallelism: input 1 + (q 2 + v 0.5 + gate 7 + attention 2)/2 + down 2
  // (full-width partial sums) + two reduce-scatter outputs 2·2/2 = 10.75 bytes
  EXPECT_NEAR(activation_bytes_per_layer(m, b, s, 2, true, Recompute::SelectiveOp, true, hw::Dtype::Bf16).v,
              10.75 * sbh + lse / 2, 1.0);
  // It keeps less than no recompute (34 bytes here) and more than full recompute (2).
  EXPECT_LT(activation_bytes_per_layer(m, b, s, 1, true, Recompute::SelectiveOp, true, hw::Dtype::Bf16).v,
            activation_bytes_per_layer(m, b, s, 1, true, Recompute::None, true, hw::Dtype::Bf16).v / 2);
}

// Eager GQA repeats K and V to every query head before the attention kernel, which saves them:
// without recompute K and V are kept at full width (2 + 2 bytes per s·b·h instead of 2 + 2g),
// and F.silu(gate) · up keeps a fourth f-wide tensor; under per-op checkpointing both are re-run,
// so nothing changes there.
TEST(Activations, EagerModulesKeepRepeatedKvAndTheSiluOutput) {
  workload::ModelSpec m;
  m.layers = 1; m.hidden = 4096; m.heads = 32; m.kv_heads = 8; m.ffn_hidden = 14336; m.vocab = 1000;
  m.activation = workload::Activation::SwiGlu;
  const double s = 4096, b = 2, sbh = s * b * 4096;
  const double shared = activation_bytes_per_layer(m, b, s, 1, true, Recompute::None, true, hw::Dtype::Bf16).v;
  const double repeated = activation_bytes_per_layer(m, b, s, 1, true, Recompute::None, true, hw::Dtype::Bf16, true).v;
  EXPECT_NEAR(repeated - shared, (2.0 * 2 * (1 - 0.25) + 2.0 * 14336 / 4096) * sbh, 1.0);
  EXPECT_NEAR(activation_bytes_per_layer(m, b, s, 1, true, Recompute::SelectiveOp, true, hw::Dtype::Bf16, true).v,
              activation_bytes_per_layer(m, b, s, 1, true, Recompute::SelectiveOp, true, hw::Dtype::Bf16).v, 1.0);
  m.kv_heads = 32;  // MHA with GeLU: nothing to repeat, no SiLU
  m.activation = workload::Activation::Gelu;
  EXPECT_NEAR(activation_bytes_per_layer(m, b, s, 1, true, Recompute::None, true, hw::Dtype::Bf16, true).v,
              activation_bytes_per_layer(m, b, s, 1, true, Recompute::None, true, hw::Dtype::Bf16).v, 1.0);
}

// Wider queries (head_dim set) keep Q and the out-projection input at their width; shared experts
// keep what a dense MLP of their total width keeps (SwiGLU: gate, up, product).
TEST(Activations, QueryWidthAndSharedExperts) {
  workload::ModelSpec m;
  m.layers = 1; m.hidden = 2048; m.heads = 32; m.kv_heads = 4; m.ffn_hidden = 768; m.vocab = 1000;
  m.activation = workload::Activation::SwiGlu;
  m.experts = 8; m.top_k = 2;
  const double s = 4096, b = 1, sbh = s * b * 2048;
  auto bytes = [&] { return activation_bytes_per_layer(m, b, s, 1, true, Recompute::None, true, hw::Dtype::Bf16).v; };
  const double narrow = bytes();
  m.explicit_head_dim = 128;  // Q 4096 wide (2 × hidden), K and V 512 (was 256)
  EXPECT_NEAR(bytes() - narrow, (2.0 * 2 * (2 - 1) + 2.0 * 2 * (512.0 - 256) / 2048) * sbh, 1.0);
  const double routed = bytes();
  m.shared_experts = 1;
  m.shared_ffn_hidden = 1024;
  EXPECT_NEAR(bytes() - routed, 2.0 * 3 * 1024 / 2048 * sbh, 1.0);
}

// Megatron-Core's selective recompute modules (docs/research-recompute-modules.md): each stops
// keeping what it re-creates. DeepSeek-V3 (MLA, MoE with a shared expert) at tp 2 with sequence
// parallelism, one 4096-token sequence, bf16, fused attention; per unit of s·b·h:
//  layernorm    its two separate norms' outputs (MLA's input norm, the MoE's pre-MLP norm): 2·2/t
//  mla_up_proj  Q, K (heads·192), V (heads·128): 2·(2·heads·192 + heads·128)/h/t
//  moe_act      one f-wide tensor a routed row: top_k·2·f/t
//  shared_experts  their gate, up and product: 2·3·shared/h/t
//  moe          the whole block: (top_k·2·(1 + 3f) + 4·experts/h + 2·3·shared/h)/t
// A dense Llama layer (TE fuses its norms into the GEMMs): layernorm keeps it all; mlp drops the
// MLP's gate, up and product and its fused norm's output: (2·3·f)/t + 2/t.
TEST(Activations, RecomputeModulesDropWhatTheyReCreate) {
  using workload::RecomputeModule;
  const double s = 4096, b = 1;
  const auto with = [&](const workload::ModelSpec& m, std::initializer_list<RecomputeModule> mods) {
    workload::RecomputeModules set = 0;
    for (auto x : mods) set = static_cast<workload::RecomputeModules>(set | workload::module_bit(x));
    return activation_bytes_per_layer(m, b, s, 2, true, Recompute::Selective, true, hw::Dtype::Bf16, false, 1, set).v;
  };
  const workload::ModelSpec ds = *workload::preset("deepseek-v3");
  const double h = ds.hidden, sbh = s * b * h, t = 2;
  const double base = with(ds, {RecomputeModule::CoreAttn});
  EXPECT_DOUBLE_EQ(base, activation_bytes_per_layer(ds, b, s, 2, true, Recompute::None, true, hw::Dtype::Bf16).v);
  EXPECT_NEAR(base - with(ds, {RecomputeModule::LayerNorm}), 2.0 * 2 / t * sbh, 1.0);
  // (MLA keeps Q and K heads·192 wide, V and the attention output heads·128.)
  EXPECT_NEAR(base - with(ds, {RecomputeModule::MlaUpProj}), 2.0 * (2 * ds.q_width() + ds.heads * ds.v_head_dim) / h / t * sbh,
              1.0);
  const double f = ds.ffn_hidden / h, k = ds.top_k * workload::moe_rank_load(ds, 1), shared = ds.shared_width() / h;
  EXPECT_NEAR(base - with(ds, {RecomputeModule::MoeAct}), k * 2 * f / t * sbh, 1.0);
  EXPECT_NEAR(base - with(ds, {RecomputeModule::SharedExperts}), 2.0 * 3 * shared / t * sbh, 1.0);
  EXPECT_NEAR(base - with(ds, {RecomputeModule::Moe}), (k * 2 * (1 + 3 * f) + 4.0 * ds.experts / h + 2.0 * 3 * shared) / t * sbh,
              1.0);
  // moe covers moe_act and shared_experts; modules add up.
  EXPECT_DOUBLE_EQ(with(ds, {RecomputeModule::Moe, RecomputeModule::MoeAct, RecomputeModule::SharedExperts}),
                   with(ds, {RecomputeModule::Moe}));
  EXPECT_NEAR(base - with(ds, {RecomputeModule::LayerNorm, RecomputeModule::MoeAct}),
              (base - with(ds, {RecomputeModule::LayerNorm})) + (base - with(ds, {RecomputeModule::MoeAct})), 1.0);
  const workload::ModelSpec ll = *workload::preset("llama3-8b");
  const double lsbh = s * b * ll.hidden, lbase = with(ll, {RecomputeModule::CoreAttn});
  EXPECT_DOUBLE_EQ(with(ll, {RecomputeModule::LayerNorm}), lbase);
  EXPECT_NEAR(lbase - with(ll, {RecomputeModule::Mlp}), (2.0 * 3 * ll.ffn_hidden / ll.hidden / t + 2.0 / t) * lsbh, 1.0);
  // Unfused attention keeps its scores unless core_attn is recomputed.
  const double scores = activation_bytes_per_layer(ll, b, s, 2, true, Recompute::Selective, false, hw::Dtype::Bf16, false, 1,
                                                   workload::module_bit(RecomputeModule::LayerNorm)).v -
                        activation_bytes_per_layer(ll, b, s, 2, true, Recompute::Selective, false, hw::Dtype::Bf16).v;
  EXPECT_NEAR(scores, 2.0 * 2 * ll.heads * s * s * b / t, 1.0);
}

TEST(Recompute, SharesFollowTheRecomputeMode) {
  workload::Op attention;
  attention.kind = workload::OpKind::Attention;
  attention.modules = workload::module_bit(workload::RecomputeModule::CoreAttn);
  attention.op_recompute = 0;
  workload::Op norm;
  norm.kind = workload::OpKind::Norm;
  norm.op_recompute = 1;
  EXPECT_EQ(recompute_share(attention, Recompute::None), 0);
  EXPECT_EQ(recompute_share(attention, Recompute::Selective), 1);
  EXPECT_EQ(recompute_share(attention, Recompute::SelectiveOp), 0);
  EXPECT_EQ(recompute_share(norm, Recompute::Selective), 0);
  EXPECT_EQ(recompute_share(norm, Recompute::SelectiveOp), 1);
  EXPECT_EQ(recompute_share(norm, Recompute::Full), 1);
  // Selective re-runs the ops of the chosen modules.
  norm.modules = workload::module_bit(workload::RecomputeModule::LayerNorm);
  EXPECT_EQ(recompute_share(norm, Recompute::Selective), 0);
  EXPECT_EQ(recompute_share(norm, Recompute::Selective, norm.modules), 1);
  EXPECT_EQ(recompute_share(attention, Recompute::Selective, norm.modules), 0);
  EXPECT_EQ(recompute_share(norm, Recompute::None, norm.modules), 0);
  EXPECT_EQ(recompute_name(Recompute::SelectiveOp), "selective_op");
}

TEST(InFlight, SchedulesKeepTheirMicroBatches) {
  EXPECT_EQ(in_flight_micro_batches(Schedule::GPipe, 0, 4, 16, 1), 16);
  EXPECT_EQ(in_flight_micro_batches(Schedule::OneFOneB, 0, 4, 16, 1), 4);
  EXPECT_EQ(in_flight_micro_batches(Schedule::OneFOneB, 3, 4, 16, 1), 1);
  EXPECT_EQ(in_flight_micro_batches(Schedule::OneFOneB, 0, 8, 2, 1), 2);
  // Interleaved, first stage: p + (p − 1)/v = 4 + 3/2
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(Schedule::Interleaved, 0, 4, 16, 2), 5.5);
}

TEST(StateBytes, MixedPrecisionAdamIs18PerParameter) {
  const auto sb = state_bytes(hw::Dtype::Bf16, workload::Optimizer::Adam);
  EXPECT_DOUBLE_EQ(sb.weights + sb.grads + sb.optimizer, 18);
  const auto f32 = state_bytes(hw::Dtype::Fp32, workload::Optimizer::Adam);
  EXPECT_DOUBLE_EQ(f32.weights + f32.grads + f32.optimizer, 16);
}

// torch.autocast trains fp32 parameters: 4 + 4 + 8 whatever the GEMMs' format; the weights, which
// data parallelism gathers, are 4 bytes.
TEST(StateBytes, AutocastKeepsFp32ParametersAndNoMasterCopy) {
  const auto sb = state_bytes(hw::Dtype::Bf16, workload::Optimizer::Adam, true);
  EXPECT_DOUBLE_EQ(sb.weights, 4);
  EXPECT_DOUBLE_EQ(sb.grads, 4);
  EXPECT_DOUBLE_EQ(sb.optimizer, 8);
  EXPECT_DOUBLE_EQ(state_bytes(hw::Dtype::Bf16, workload::Optimizer::Sgd, true).optimizer, 4);
}

TEST(DeviceMemory, ZeroStagesShardStateOverDataParallelRanks) {
  DeviceMemoryInput in;
  in.params = 1e9;
  in.state = state_bytes(hw::Dtype::Bf16, workload::Optimizer::Adam);
  in.dp = 8;
  // ZeRO 1 (Megatron distributed optimizer): 6 + 12/d bytes per parameter
  in.zero = 1;
  EXPECT_DOUBLE_EQ(device_memory(in).total().v, 1e9 * (6 + 12.0 / 8));
  in.zero = 2;
  EXPECT_DOUBLE_EQ(device_memory(in).total().v, 1e9 * (2 + 16.0 / 8));
  in.zero = 3;
  EXPECT_DOUBLE_EQ(device_memory(in).total().v, 1e9 * 18.0 / 8);
  in.zero = 0;
  in.fragmentation = 0.1;
  in.runtime_reserve = Bytes{1e9};
  // 18 GB state, +10 % fragmentation, + 1 GB reserve
  EXPECT_DOUBLE_EQ(device_memory(in).total().v, 18e9 * 1.1 + 1e9);
}

// Routed experts keep gradients of their own width (NeMo Automodel: bf16 experts outside FSDP),
// and their ZeRO shards span dp·fold/ep ranks: 1 B dense + 3 B expert parameters at dp 8, ep 4
// (experts' data-parallel ranks: 2), ZeRO 1, optimizer 4 B (bf16 moments, no master).
TEST(DeviceMemory, ExpertGradientsAndOptimizerStateTakeTheirOwnWidths) {
  DeviceMemoryInput in;
  in.params = 4e9;
  in.expert_params = 3e9;
  in.ep = 4;
  in.dp = 8;
  in.zero = 1;
  in.state = state_bytes(hw::Dtype::Bf16, workload::Optimizer::Adam);
  in.state.expert_grads = 2;
  in.state.optimizer = 4;
  const auto mb = device_memory(in);
  EXPECT_DOUBLE_EQ(mb.get("weights").v, 4e9 * 2);
  EXPECT_DOUBLE_EQ(mb.get("gradients").v, 1e9 * 4 + 3e9 * 2);
  EXPECT_DOUBLE_EQ(mb.get("optimizer").v, 1e9 * 4 / 8 + 3e9 * 4 / 2);
}

}  // namespace
}  // namespace hetsim::cost
