#include "models/cost/compute.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace hetsim::cost {
namespace {

hw::DeviceSpec device() {
  hw::DeviceSpec d;
  d.name = "test";
  d.peak[hw::Dtype::Bf16] = FlopRate{1e15};
  d.peak[hw::Dtype::Fp32] = FlopRate{50e12};
  d.memory = Bytes{80 * kGiB};
  d.memory_bandwidth = BytesPerSec{2e12};
  d.efficiency.gemm = 0.8;
  d.efficiency.gemm_half_dim = 64;
  d.efficiency.attention = 0.5;
  d.efficiency.memory = 0.9;
  d.efficiency.launch_overhead = Duration{5e-6};
  return d;
}

// A device with a tile model: 4 SMs of 1 TFLOP/s main-loop rate each (peak 4e12, gemm 1),
// 128×128 tiles, 1 us per tile.
hw::DeviceSpec tiled() {
  hw::DeviceSpec d = device();
  d.peak[hw::Dtype::Bf16] = FlopRate{4e12};
  d.efficiency.gemm = 1.0;
  d.efficiency.sms = 4;
  d.efficiency.tile_m = 128;
  d.efficiency.tile_n = 128;
  d.efficiency.tile_overhead = Duration{1e-6};
  return d;
}

TEST(GemmEfficiency, SaturatesForLargeAndCollapsesForSkinny) {
  const auto d = device();
  const FlopRate p{1e15};
  // min dim 4096: 0.8·4096/4160 = 0.78769…; min dim 64: 0.8·0.5 = 0.4; min dim 8: 0.8·8/72
  EXPECT_NEAR(gemm_efficiency(d, p, 4096, 8192, 4096), 0.8 * 4096 / 4160, 1e-12);
  EXPECT_NEAR(gemm_efficiency(d, p, 64, 8192, 8192), 0.4, 1e-12);
  EXPECT_NEAR(gemm_efficiency(d, p, 8192, 8, 8192), 0.8 * 8 / 72, 1e-12);
}

TEST(GemmTileModel, OneFullWaveIsMainLoopPlusTileOverhead) {
  // 256×256×1024: 2×2 = 4 tiles on 4 SMs, one wave: 2·128·128·1024 / 1e12 = 33.554 us + 1 us.
  const auto d = tiled();
  const double t = 2.0 * 128 * 128 * 1024 / 1e12 + 1e-6;
  EXPECT_NEAR(gemm_compute_time(d, FlopRate{4e12}, 256, 256, 1024).v, t, 1e-12);
  EXPECT_NEAR(gemm_efficiency(d, FlopRate{4e12}, 256, 256, 1024), 2.0 * 256 * 256 * 1024 / (t * 4e12), 1e-12);
}

TEST(GemmTileModel, APartialWaveCostsAWholeWave) {
  // 384×256×1024: 3×2 = 6 tiles on 4 SMs: 2 waves, the second half empty -> efficiency 0.728.
  const auto d = tiled();
  const double t = 2 * (2.0 * 128 * 128 * 1024 / 1e12 + 1e-6);
  EXPECT_NEAR(gemm_compute_time(d, FlopRate{4e12}, 384, 256, 1024).v, t, 1e-12);
  EXPECT_LT(gemm_efficiency(d, FlopRate{4e12}, 384, 256, 1024), 0.75);
  // Rounding up: 129 rows need a second row of tiles, as 256 do.
  EXPECT_DOUBLE_EQ(gemm_compute_time(d, FlopRate{4e12}, 129, 256, 1024).v,
                   gemm_compute_time(d, FlopRate{4e12}, 256, 256, 1024).v);
}

TEST(GemmTileModel, SplitKFillsIdleSms) {
  // 128×128×4096 is one tile on 4 SMs. Split 4 ways (split 8 would exceed the SMs): each slice
  // 2·128·128·1024/1e12 = 33.554 us + 1 us, plus the fp32 partials written and read back:
  // 2·4·128·128·4 B / (2e12·0.9 B/s) = 0.2913 us. Unsplit it would take 135.2 us.
  const auto d = tiled();
  const double want = 2.0 * 128 * 128 * 1024 / 1e12 + 1e-6 + 2.0 * 4 * 128 * 128 * 4 / 1.8e12;
  EXPECT_NEAR(gemm_compute_time(d, FlopRate{4e12}, 128, 128, 4096).v, want, 1e-12);
}

TEST(GemmTileModel, BatchedGemmsShareTheWaves) {
  // 4 batched 128×128×1024 GEMMs fill the 4 SMs in one wave: the time of one.
  const auto d = tiled();
  EXPECT_DOUBLE_EQ(gemm_compute_time(d, FlopRate{4e12}, 128, 128, 1024, 4).v,
                   2.0 * 128 * 128 * 1024 / 1e12 + 1e-6);
}

// A MoE layer's local experts (workload::Op::count GEMMs): grouped (batched), their tiles share
// the waves; in a loop each GEMM rounds up to whole waves and pays its own launch. On H100's
// tile model, Transformer Engine's grouped shapes (g experts, m rows, n, k) of TransformerEngine
// PR #2045: (8, 4096, 768, 2048) measured 628 TFLOP/s (TE 2.7's multi-stream cuBLAS) and 651
// (CUTLASS), (16, 2048, 768, 2048) 554 and 637; grouped, the model gives 626 for both, a loop
// 436 and 244 (docs/cost-models.md#experts).
TEST(OpTime, GroupedExpertGemmsShareTheWavesALoopDoesNot) {
  hw::DeviceSpec h = device();
  h.peak[hw::Dtype::Bf16] = FlopRate{989e12};
  h.memory_bandwidth = BytesPerSec{3.35e12};
  h.efficiency.gemm = 0.745;
  h.efficiency.sms = 132;
  h.efficiency.tile_m = 128;
  h.efficiency.tile_n = 256;
  h.efficiency.tile_overhead = Duration{3e-6};
  h.efficiency.memory = 0.85;
  h.efficiency.launch_overhead = Duration{2.5e-6};
  struct Case { int g; double m, n, k, grouped_tflops, loop_tflops; };
  for (const Case c : {Case{8, 4096, 768, 2048, 626, 436}, Case{16, 2048, 768, 2048, 626, 244}}) {
    workload::Op op;
    op.kind = workload::OpKind::Gemm;
    op.m = c.m;
    op.n = c.n;
    op.k = c.k;
    op.count = c.g;
    const double flops = 2 * c.m * c.n * c.k * c.g;
    op.batched = true;
    const double grouped = flops / op_time(h, hw::Dtype::Bf16, op, Pass::Forward).v / 1e12;
    op.batched = false;
    const double loop = flops / op_time(h, hw::Dtype::Bf16, op, Pass::Forward).v / 1e12;
    EXPECT_NEAR(grouped, c.grouped_tflops, 1.0) << c.g;
    EXPECT_NEAR(loop, c.loop_tflops, 1.0) << c.g;
  }
  // By hand, (8, 4096, 768, 2048): an SM's main loop runs 989e12 · 0.745 / 132 FLOP/s, a
  // 128×256 tile over k = 2048 takes 2·128·256·2048 / that + 3 us. Grouped: 8 × 32 × 3 = 768
  // tiles, 6 waves (split-K does not pay: the tiles fill the SMs), plus one launch. A loop:
  // each GEMM's 96 tiles are one wave (split-K in 2 costs two waves and the fp32 partials), plus
  // its launch, 8 times. Memory never binds here.
  const double rate_sm = 989e12 * 0.745 / 132;
  const double tile = 2.0 * 128 * 256 * 2048 / rate_sm + 3e-6;
  workload::Op op;
  op.kind = workload::OpKind::Gemm;
  op.m = 4096;
  op.n = 768;
  op.k = 2048;
  op.count = 8;
  op.batched = true;
  EXPECT_NEAR(op_time(h, hw::Dtype::Bf16, op, Pass::Forward).v, 6 * tile + 2.5e-6, 1e-12);
  op.batched = false;
  EXPECT_NEAR(op_time(h, hw::Dtype::Bf16, op, Pass::Forward).v, 8 * (tile + 2.5e-6), 1e-12);
}

TEST(OpTime, BackwardGemmPricesDataAndWeightGradientsByTheirOwnShapes) {
  // C[m×n] = A[m×k]·B[k×n], m = 384, n = 128, k = 128 on the tiled device.
  // dgrad m×k×n = 384×128×128: 3 tiles, 1 wave of 2·128·128·128/1e12 + 1 us = 5.194 us;
  // wgrad k×n×m = 128×128×384: 1 tile, split 2 (split 4 would leave slices of 96 < 128):
  //   2·128·128·192/1e12 + 1 us + 2·2·128·128·4 B/1.8e12 = 7.437 us. Each + 5 us launch.
  workload::Op op;
  op.kind = workload::OpKind::Gemm;
  op.m = 384; op.n = 128; op.k = 128;
  op.operand_bytes = 2;
  const double dgrad = 2.0 * 128 * 128 * 128 / 1e12 + 1e-6;
  const double wgrad = 2.0 * 128 * 128 * 192 / 1e12 + 1e-6 + 2.0 * 2 * 128 * 128 * 4 / 1.8e12;
  EXPECT_NEAR(op_time(tiled(), hw::Dtype::Bf16, op, Pass::Backward).v, dgrad + wgrad + 10e-6, 1e-12);
}

workload::Op gemm_op(double m, double n, double k, double operand_bytes) {
  workload::Op op;
  op.kind = workload::OpKind::Gemm;
  op.m = m; op.n = n; op.k = k;
  op.operand_bytes = operand_bytes;
  return op;
}

// A measured GEMM is priced at its measured time, forward and in both backward GEMMs of the
// shapes that were measured; other formats keep the model's time.
TEST(MeasuredGemms, AMeasuredShapeTakesItsMeasuredTime) {
  auto d = device();
  const double model = gemm_model_time(d, hw::Dtype::Fp32, 512, 256, 1024).v;
  d.measured_gemms = {{512, 256, 1024, hw::Dtype::Fp32, Duration{1.7 * model}}};
  EXPECT_NEAR(measured_gemm_factor(d, hw::Dtype::Fp32, 512, 256, 1024), 1.7, 1e-12);
  EXPECT_NEAR(op_time(d, hw::Dtype::Fp32, gemm_op(512, 256, 1024, 4), Pass::Forward).v, 1.7 * model, 1e-15);
  // Backward of C[m×n] = A[m×k]·B[k×n] with m = 512, n = 1024, k = 256 runs (m, k, n) = (512, 256, 1024).
  const auto plain = device();
  const double wgrad = op_time_parts(plain, hw::Dtype::Fp32, gemm_op(512, 1024, 256, 4), Pass::Backward).total.v -
                       gemm_model_time(plain, hw::Dtype::Fp32, 512, 256, 1024).v;
  const double back = op_time(d, hw::Dtype::Fp32, gemm_op(512, 1024, 256, 4), Pass::Backward).v;
  EXPECT_NEAR(back, 1.7 * model + wgrad * measured_gemm_factor(d, hw::Dtype::Fp32, 256, 1024, 512), 1e-15);
  // bf16 has no measurement: the model's time, to the bit.
  EXPECT_EQ(measured_gemm_factor(d, hw::Dtype::Bf16, 512, 256, 1024), 1.0);
  EXPECT_EQ(op_time(d, hw::Dtype::Bf16, gemm_op(512, 256, 1024, 2), Pass::Forward).v,
            op_time(plain, hw::Dtype::Bf16, gemm_op(512, 256, 1024, 2), Pass::Forward).v);
}

// Between measurements: inverse-distance weights 1/d² in octaves, and the model's own 1/16.
TEST(MeasuredGemms, OtherShapesFollowTheNearestMeasurementsByInverseDistance) {
  auto d = device();
  auto model = [&](double m, double n, double k) { return gemm_model_time(d, hw::Dtype::Fp32, m, n, k).v; };
  d.measured_gemms = {{256, 256, 256, hw::Dtype::Fp32, Duration{2.0 * model(256, 256, 256)}},
                      {1024, 1024, 1024, hw::Dtype::Fp32, Duration{1.25 * model(1024, 1024, 1024)}}};
  // (512, 512, 512) is √3 octaves from both: w = 1/3 each.
  const double w = 1.0 / 3;
  const double want = std::exp((w * std::log(2.0) + w * std::log(1.25)) / (2 * w + 1.0 / 16));
  EXPECT_NEAR(measured_gemm_factor(d, hw::Dtype::Fp32, 512, 512, 512), want, 1e-12);
  // (256, 256, 512) is one octave from the first and √(2² + 2² + 1²) = 3 from the second.
  const double want2 = std::exp((std::log(2.0) + std::log(1.25) / 9) / (1 + 1.0 / 9 + 1.0 / 16));
  EXPECT_NEAR(measured_gemm_factor(d, hw::Dtype::Fp32, 256, 256, 512), want2, 1e-12);
  // Far from both (m 2^20 times the first's: 20 octaves, and √(18² + 2² + 2²) from the second),
  // the model's own weight dominates: 1.036, against 1.25–2 near them.
  const double w1 = 1.0 / 400, w2 = 1.0 / 332;
  const double want3 = std::exp((w1 * std::log(2.0) + w2 * std::log(1.25)) / (w1 + w2 + 1.0 / 16));
  EXPECT_NEAR(measured_gemm_factor(d, hw::Dtype::Fp32, 256.0 * 1024 * 1024, 256, 256), want3, 1e-12);
  EXPECT_LT(want3, 1.04);
}

TEST(PassTime, TheHostBoundsAPassOfShortKernels) {
  // 10 kernels of 1 MB each at 1.8e12 B/s: 0.556 us + 5 us launch = 55.6 us on the device;
  // a host that needs 9 us per kernel takes 90 us.
  auto d = device();
  d.efficiency.host_overhead = Duration{9e-6};
  std::vector<workload::Op> ops(10);
  for (auto& op : ops) { op.kind = workload::OpKind::Elementwise; op.fwd_bytes = Bytes{1e6}; }
  EXPECT_NEAR(ops_time(d, hw::Dtype::Bf16, ops, Pass::Forward).v, 10 * (1e6 / 1.8e12 + 5e-6), 1e-12);
  EXPECT_NEAR(pass_time(d, hw::Dtype::Bf16, ops, Pass::Forward).v, 90e-6, 1e-12);
  d.efficiency.host_overhead = Duration{1e-6};
  EXPECT_NEAR(pass_time(d, hw::Dtype::Bf16, ops, Pass::Forward).v, 10 * (1e6 / 1.8e12 + 5e-6), 1e-12);
}

TEST(AttentionEfficiency, RisesWithSequenceLength) {
  // attention · s/(s + half): 0.5 · 512/1024 = 0.25 at s = 512, 0.5 · 16384/16896 at 16k.
  auto d = device();
  d.efficiency.attention_half_seq = 512;
  EXPECT_NEAR(attention_efficiency(d, 512), 0.25, 1e-12);
  EXPECT_NEAR(attention_efficiency(d, 16384), 0.5 * 16384 / 16896, 1e-12);
  d.efficiency.attention_half_seq = 0;
  EXPECT_DOUBLE_EQ(attention_efficiency(d, 512), 0.5);
}

TEST(OpTime, ComputeBoundGemmIsFlopsOverAchievedPeakPlusLaunch) {
  // 8192³ GEMM: 2·8192³ = 1.0995e12 FLOPs at 1e15·0.8·8192/8256 -> +5 us launch
  workload::Op op;
  op.kind = workload::OpKind::Gemm;
  op.m = op.n = op.k = 8192;
  op.operand_bytes = 2;
  op.fwd_flops = Flops{2.0 * 8192 * 8192 * 8192};
  op.fwd_bytes = Bytes{3.0 * 8192 * 8192 * 2};
  const double eff = 0.8 * 8192 / (8192 + 64);
  const double want = 2.0 * 8192 * 8192 * 8192 / (1e15 * eff) + 5e-6;
  EXPECT_NEAR(op_time(device(), hw::Dtype::Bf16, op, Pass::Forward).v, want, 1e-12);
}

// An 8192³ GEMM of 1-byte operands on the test device given a 2 PFLOP/s fp8 peak; compute-bound:
// 2·8192³ FLOPs at 2e15 × main loop × 8192/(8192 + 64) (the half-dimension curve), + 5 µs launch.
struct Fp8Gemm {
  workload::Op op;
  hw::DeviceSpec d = device();
  const double flops = 2.0 * 8192 * 8192 * 8192, shape = 8192.0 / (8192 + 64);
  Fp8Gemm() {
    op.kind = workload::OpKind::Gemm;
    op.m = op.n = op.k = 8192;
    op.operand_bytes = 1;
    d.peak[hw::Dtype::Fp8] = FlopRate{2e15};
  }
};

// fp8 GEMMs run at gemm_fp8 of the fp8 peak; without one, at gemm; GEMMs kept in 16 bits in an
// fp8 run at the 16-bit peak and gemm.
TEST(OpTime, Fp8GemmsUseTheirOwnMainLoopFraction) {
  Fp8Gemm g;
  auto& [op, d, flops, shape] = g;
  EXPECT_NEAR(op_time(d, hw::Dtype::Fp8, op, Pass::Forward).v, flops / (2e15 * 0.8 * shape) + 5e-6, 1e-12);
  d.efficiency.gemm_fp8 = 0.5;
  EXPECT_DOUBLE_EQ(d.efficiency.main_loop(hw::Dtype::Fp8), 0.5);
  EXPECT_DOUBLE_EQ(d.efficiency.main_loop(hw::Dtype::Bf16), 0.8);
  EXPECT_NEAR(op_time(d, hw::Dtype::Fp8, op, Pass::Forward).v, flops / (2e15 * 0.5 * shape) + 5e-6, 1e-12);
  op.keep_16bit = true;
  EXPECT_NEAR(op_time(d, hw::Dtype::Fp8, op, Pass::Forward).v, flops / (1e15 * 0.8 * shape) + 5e-6, 1e-12);
}

// The backward's two fp8 GEMMs (input and weight gradients) run at gemm_fp8_precise where the
// device gives one (fp32 promotion, as Transformer Engine and torchao run them); the forward
// keeps gemm_fp8 (fast accumulation); 16-bit GEMMs are unaffected.
// Each of the two backward kernels has the forward's shape here (a cube), so the backward is
// 2 × one kernel at its main loop.
TEST(OpTime, Fp8BackwardGemmsRunAtThePreciseMainLoop) {
  Fp8Gemm g;
  auto& [op, d, flops, shape] = g;
  d.efficiency.gemm_fp8 = 0.75;
  auto at = [&](double main) { return flops / (2e15 * main * shape) + 5e-6; };
  EXPECT_NEAR(op_time(d, hw::Dtype::Fp8, op, Pass::Backward).v, 2 * at(0.75), 1e-12);
  d.efficiency.gemm_fp8_precise = 0.6;
  EXPECT_NEAR(op_time(d, hw::Dtype::Fp8, op, Pass::Forward).v, at(0.75), 1e-12);
  EXPECT_NEAR(op_time(d, hw::Dtype::Fp8, op, Pass::Backward).v, 2 * at(0.6), 1e-12);
  const double bf16 = op_time(d, hw::Dtype::Bf16, op, Pass::Backward).v;
  d.efficiency.gemm_fp8_precise = 0;
  EXPECT_DOUBLE_EQ(op_time(d, hw::Dtype::Bf16, op, Pass::Backward).v, bf16);
}

// An elementwise op that moves 1 GB forward: at the test device's `memory` (2e12·0.9 B/s) 1e9 /
// 1.8e12 s, + 5 µs launch.
workload::Op gigabyte_stream() {
  workload::Op op;
  op.kind = workload::OpKind::Elementwise;
  op.fwd_bytes = Bytes{1e9};
  return op;
}

TEST(OpTime, ElementwiseIsMemoryBound) {
  // 1 GB moved at 2e12·0.9 B/s = 0.5556 ms (+5 us); its 1e8 FLOPs at 50 TF/s take 2 us.
  workload::Op op = gigabyte_stream();
  op.fwd_flops = Flops{1e8};
  EXPECT_NEAR(op_time(device(), hw::Dtype::Bf16, op, Pass::Forward).v, 1e9 / 1.8e12 + 5e-6, 1e-12);
}

// PyTorch's non-vectorized kernels (strided operands, dtype-converting copies) stream at the
// device's unvectorized_memory fraction where it has one, else at `memory`.
TEST(OpTime, UnvectorizedKernelsStreamAtTheirOwnFraction) {
  workload::Op op = gigabyte_stream();
  op.unvectorized = true;
  auto d = device();
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, op, Pass::Forward).v, 1e9 / 1.8e12 + 5e-6, 1e-12);
  d.efficiency.unvectorized_memory = 0.4;
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, op, Pass::Forward).v, 1e9 / 0.8e12 + 5e-6, 1e-12);
  op.unvectorized = false;
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, op, Pass::Forward).v, 1e9 / 1.8e12 + 5e-6, 1e-12);
}

// Unfused attention's s×s ops (workload::Op::score_traffic) stream at score_memory where the
// device has it: the softmax's bytes, and a batched score product whose s×s output binds it
// (2048 × 2048 × 64 per head, 128 heads: 1.07 GB written against 69 GFLOP).
TEST(OpTime, UnfusedAttentionScoresStreamAtTheirOwnFraction) {
  workload::Op softmax = gigabyte_stream();
  softmax.score_traffic = true;
  auto d = device();
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, softmax, Pass::Forward).v, 1e9 / 1.8e12 + 5e-6, 1e-12);
  d.efficiency.score_memory = 0.5;
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, softmax, Pass::Forward).v, 1e9 / 1e12 + 5e-6, 1e-12);
  softmax.score_traffic = false;  // dropout of the probabilities: `memory`
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, softmax, Pass::Forward).v, 1e9 / 1.8e12 + 5e-6, 1e-12);

  workload::Op qk;
  qk.kind = workload::OpKind::Gemm;
  qk.m = 2048; qk.n = 2048; qk.k = 64;
  qk.count = 128;
  qk.batched = true;
  qk.operand_bytes = 2;
  qk.score_traffic = true;
  const double bytes = (2048.0 * 64 * 2 + 2048.0 * 2048) * 2 * 128;
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, qk, Pass::Forward).v, bytes / 1e12 + 5e-6, 1e-9);
  // A calibrated profile's timed GEMMs do not scale it again (they are priced against the
  // triad's rate, which score_memory replaces here)...
  auto timed_at_3x = [&](double m, double n, double k) {
    return hw::MeasuredGemm{m, n, k, hw::Dtype::Bf16, Duration{3 * gemm_model_time(d, hw::Dtype::Bf16, m, n, k).v}};
  };
  d.measured_gemms = {timed_at_3x(2048, 2048, 64)};
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, qk, Pass::Forward).v, bytes / 1e12 + 5e-6, 1e-9);
  // (A score product bound by compute, here a head dim of 8192, takes the factor as any GEMM.)
  workload::Op wide = qk;
  wide.k = 8192;
  d.measured_gemms.clear();
  const double unscaled = op_time(d, hw::Dtype::Bf16, wide, Pass::Forward).v;
  d.measured_gemms.push_back(timed_at_3x(2048, 2048, 8192));
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, wide, Pass::Forward).v, 3 * unscaled, 1e-9);
  d.measured_gemms.clear();
  d.efficiency.score_memory = 0;
  const double at_memory = op_time(d, hw::Dtype::Bf16, qk, Pass::Forward).v;
  EXPECT_LT(at_memory, bytes / 1e12 + 5e-6);
  EXPECT_GE(at_memory, bytes / 1.8e12 + 5e-6 - 1e-12);
  // ... but do where it streams at the triad's rate, as any GEMM.
  d.measured_gemms = {timed_at_3x(2048, 2048, 64)};
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, qk, Pass::Forward).v, 3 * at_memory, 1e-9);
}

TEST(OpTime, AttentionUsesAttentionEfficiency) {
  workload::Op op;
  op.kind = workload::OpKind::Attention;
  op.bwd_flops = Flops{1e12};
  op.bwd_bytes = Bytes{1e6};
  op.bwd_kernels = 1;
  // 1e12 / (1e15·0.5) = 2 ms, + 5 us
  EXPECT_NEAR(op_time(device(), hw::Dtype::Bf16, op, Pass::Backward).v, 2e-3 + 5e-6, 1e-12);
}

TEST(OpTime, FlashAttention2KernelsRunAtTheirShareOfTheVendorKernel) {
  hw::DeviceSpec d = device();
  d.efficiency.attention_fa2 = 0.62;
  workload::Op op;
  op.kind = workload::OpKind::Attention;
  op.fwd_flops = Flops{1e12};
  op.fwd_bytes = Bytes{1e6};
  // 1e12 / (1e15·0.5) = 2 ms + 5 us; FlashAttention-2: 1e12 / (1e15·0.5·0.62) + 5 us.
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, op, Pass::Forward).v, 2e-3 + 5e-6, 1e-12);
  op.attention_kernel = workload::AttentionKernel::Fa2;
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, op, Pass::Forward).v, 2e-3 / 0.62 + 5e-6, 1e-12);
  // A device whose figure is FlashAttention-2's own (the default 1) does not change.
  EXPECT_NEAR(op_time(device(), hw::Dtype::Bf16, op, Pass::Forward).v, 2e-3 + 5e-6, 1e-12);
}

// The Triton FlashAttention: FlashAttention-2's rate over 1.4 in the forward and over 2 in the
// backward (FA2 paper §4.1), on top of the device's FlashAttention-2 share.
TEST(OpTime, TritonFlashAttentionRunsAtItsPublishedShareOfFlashAttention2) {
  hw::DeviceSpec d = device();
  d.efficiency.attention_fa2 = 0.62;
  d.efficiency.attention_bwd = 0;  // the passes at the same rate: η = 0.5 each
  workload::Op op;
  op.kind = workload::OpKind::Attention;
  op.fwd_flops = Flops{1e12};
  op.bwd_flops = Flops{2.5e12};
  op.attention_kernel = workload::AttentionKernel::Triton;
  // forward 1e12 / (1e15·0.5·0.62/1.4) + 5 us; backward 2.5e12 / (1e15·0.5·0.62/2) + 5 us.
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, op, Pass::Forward).v, 2e-3 * 1.4 / 0.62 + 5e-6, 1e-12);
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, op, Pass::Backward).v, 5e-3 * 2.0 / 0.62 + 5e-6, 1e-12);
  op.attention_kernel = workload::AttentionKernel::Vendor;
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, op, Pass::Backward).v, 5e-3 + 5e-6, 1e-12);
}

TEST(AttentionEfficiency, FallsAtSmallHeadDimensionsAndStopsAtTheReference) {
  // head(d) = [d/(d + 44)] / [128/(128 + 44)]: 0.7929 at d = 64, 1 at 128, capped at 1 above.
  auto d = device();
  d.efficiency.attention_head_half = 44;
  EXPECT_NEAR(attention_efficiency(d, 0, 64), 0.5 * (64.0 / 108) / (128.0 / 172), 1e-12);
  EXPECT_DOUBLE_EQ(attention_efficiency(d, 0, 128), 0.5);
  EXPECT_DOUBLE_EQ(attention_efficiency(d, 0, 256), 0.5);
  EXPECT_DOUBLE_EQ(attention_efficiency(d, 0, 0), 0.5);  // no head dim: priced as 128
  EXPECT_LT(attention_efficiency(d, 0, 32), attention_efficiency(d, 0, 64));
  d.efficiency.attention_head_half = 0;  // flat
  EXPECT_DOUBLE_EQ(attention_efficiency(d, 0, 64), 0.5);
}

TEST(AttentionEfficiency, NonCausalKernelsRunFasterPerCountedFlop) {
  auto d = device();
  d.efficiency.attention_noncausal = 1.1;
  EXPECT_DOUBLE_EQ(attention_efficiency(d, 0, 128, true), 0.5);
  EXPECT_NEAR(attention_efficiency(d, 0, 128, false), 0.55, 1e-12);
}

TEST(AttentionEfficiency, PassesSplitSoThatBothTogetherTakeTheCombinedTime) {
  // Forward F FLOPs, backward 2.5·F: F/η_f + 2.5·F/η_b = 3.5·F/η, with η_b = ρ·η_f.
  auto d = device();
  d.efficiency.attention_bwd = 0.8;
  const double ef = attention_pass_efficiency(d, Pass::Forward, 0);
  const double eb = attention_pass_efficiency(d, Pass::Backward, 0);
  EXPECT_NEAR(eb / ef, 0.8, 1e-12);
  EXPECT_NEAR(1 / ef + 2.5 / eb, 3.5 / 0.5, 1e-9);
  EXPECT_GT(ef, 0.5);  // the faster pass is above the combined figure
  // And op_time follows it: a forward attention of 1e12 FLOPs at 1e15·η_f.
  workload::Op op;
  op.kind = workload::OpKind::Attention;
  op.fwd_flops = Flops{1e12};
  op.fwd_kernels = 1;
  EXPECT_NEAR(op_time(d, hw::Dtype::Bf16, op, Pass::Forward).v, 1e12 / (1e15 * ef) + 5e-6, 1e-12);
}

// Wide heads slow the backward alone: attention_bwd_wide at d ≥ 256, none up to 192, halfway
// at 224; the forward keeps its rate.
TEST(AttentionEfficiency, WideHeadsSlowTheBackwardAlone) {
  auto d = device();
  d.efficiency.attention_bwd_wide = 0.7;
  const auto bwd = [&](double hd) { return attention_pass_efficiency(d, Pass::Backward, 0, hd); };
  const auto fwd = [&](double hd) { return attention_pass_efficiency(d, Pass::Forward, 0, hd); };
  EXPECT_DOUBLE_EQ(bwd(192), bwd(128));
  EXPECT_NEAR(bwd(224), bwd(128) * 0.85, 1e-12);
  EXPECT_NEAR(bwd(256), bwd(128) * 0.7, 1e-12);
  EXPECT_NEAR(bwd(512), bwd(128) * 0.7, 1e-12);
  EXPECT_DOUBLE_EQ(fwd(256), fwd(128));
  d.efficiency.attention_bwd_wide = 1;
  EXPECT_DOUBLE_EQ(attention_pass_efficiency(d, Pass::Backward, 0, 256), bwd(128));
}

TEST(OpTimeParts, PartsAddUpAndNameWhatBinds) {
  // A 1 GB elementwise kernel is memory-bound; a 8192³ GEMM compute-bound; the total is op_time.
  workload::Op ew;
  ew.kind = workload::OpKind::Elementwise;
  ew.fwd_flops = Flops{1e8};
  ew.fwd_bytes = Bytes{1e9};
  const OpTime a = op_time_parts(device(), hw::Dtype::Bf16, ew, Pass::Forward);
  EXPECT_TRUE(a.memory_bound());
  EXPECT_NEAR(a.total.v, std::max(a.compute.v, a.memory.v) + a.launch.v, 1e-15);
  EXPECT_DOUBLE_EQ(a.total.v, op_time(device(), hw::Dtype::Bf16, ew, Pass::Forward).v);
  workload::Op g;
  g.kind = workload::OpKind::Gemm;
  g.m = g.n = g.k = 8192;
  const OpTime b = op_time_parts(device(), hw::Dtype::Bf16, g, Pass::Backward);
  EXPECT_FALSE(b.memory_bound());
  EXPECT_NEAR(b.launch.v, 2 * 5e-6, 1e-15);  // data- and weight-gradient kernels
  EXPECT_DOUBLE_EQ(b.total.v, op_time(device(), hw::Dtype::Bf16, g, Pass::Backward).v);
}

TEST(OptimizerTime, SweepsStateBytes) {
  // 1e9 params · 30 B / (2e12·0.9 B/s) = 16.67 ms (+5 us)
  EXPECT_NEAR(optimizer_time(device(), 1e9, 30).v, 30e9 / 1.8e12 + 5e-6, 1e-12);
}

}  // namespace
}  // namespace hetsim::cost
