#include "models/cost/compute.hpp"

#include <gtest/gtest.h>

namespace hetsim::cost {
namespace {

hw::DeviceSpec device() {
  hw::DeviceSpec d;
  d.name = "test";
  d.peak[hw::Dtype::Bf16] = FlopRate{1e15};
  d.peak[hw::Dtype::Fp32] = FlopRate{50e12};
  d.memory = Bytes{80 * kGiB};
  d.memory_bandwidth = BytesPerSec{2e12};
  d.efficiency = {0.8, 64, 0.5, 0.9, Duration{5e-6}};
  return d;
}

TEST(GemmEfficiency, SaturatesForLargeAndCollapsesForSkinny) {
  const auto d = device();
  // min dim 4096: 0.8·4096/4160 = 0.78769…; min dim 64: 0.8·0.5 = 0.4; min dim 8: 0.8·8/72
  EXPECT_NEAR(gemm_efficiency(d, 4096, 8192, 4096), 0.8 * 4096 / 4160, 1e-12);
  EXPECT_NEAR(gemm_efficiency(d, 64, 8192, 8192), 0.4, 1e-12);
  EXPECT_NEAR(gemm_efficiency(d, 8192, 8, 8192), 0.8 * 8 / 72, 1e-12);
}

TEST(OpTime, ComputeBoundGemmIsFlopsOverAchievedPeakPlusLaunch) {
  // 8192³ GEMM: 2·8192³ = 1.0995e12 FLOPs at 1e15·0.8·8192/8256 -> +5 us launch
  workload::Op op;
  op.kind = workload::OpKind::Gemm;
  op.m = op.n = op.k = 8192;
  op.fwd_flops = Flops{2.0 * 8192 * 8192 * 8192};
  op.fwd_bytes = Bytes{3.0 * 8192 * 8192 * 2};
  const double eff = 0.8 * 8192 / (8192 + 64);
  const double want = 2.0 * 8192 * 8192 * 8192 / (1e15 * eff) + 5e-6;
  EXPECT_NEAR(op_time(device(), hw::Dtype::Bf16, op, Pass::Forward).v, want, 1e-12);
}

TEST(OpTime, ElementwiseIsMemoryBound) {
  // 1 GB moved at 2e12·0.9 B/s = 0.5556 ms (+5 us); its 1e8 FLOPs at 50 TF/s take 2 us.
  workload::Op op;
  op.kind = workload::OpKind::Elementwise;
  op.fwd_flops = Flops{1e8};
  op.fwd_bytes = Bytes{1e9};
  EXPECT_NEAR(op_time(device(), hw::Dtype::Bf16, op, Pass::Forward).v, 1e9 / 1.8e12 + 5e-6, 1e-12);
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

TEST(OptimizerTime, SweepsStateBytes) {
  // 1e9 params · 30 B / (2e12·0.9 B/s) = 16.67 ms (+5 us)
  EXPECT_NEAR(optimizer_time(device(), 1e9, 30).v, 30e9 / 1.8e12 + 5e-6, 1e-12);
}

}  // namespace
}  // namespace hetsim::cost
