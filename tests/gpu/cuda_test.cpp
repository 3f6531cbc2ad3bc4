// The cuda backend on a real GPU: GEMM numerics against a host reference, a one-GPU replay whose
// measured peak memory is the planned one, and a calibration. Skipped cleanly without a GPU
// (ctest label `gpu`; CI runs `ctest -LE gpu`, tests/gpu/run.sh runs these on a GPU machine).

#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <vector>

#include "exec/calibrate/calibrate.hpp"
#include "exec/cuda/cuda_backend.hpp"
#include "exec/replay/replay.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

std::unique_ptr<exec::Backend> gpu_or_skip() {
  auto b = exec::make_cuda_backend();
  if (!b) return nullptr;
  return std::move(*b);
}

TEST(Cuda, GemmMatchesAHostReference) {
  auto backend = gpu_or_skip();
  if (!backend) GTEST_SKIP() << "no CUDA device";
  auto dev = backend->open(0);
  const int m = 37, n = 19, k = 23;
  std::vector<float> a(m * k), b(k * n), c(m * n), ref(m * n, 0.0f);
  for (int i = 0; i < m * k; ++i) a[i] = float(i % 7) - 3.0f;
  for (int i = 0; i < k * n; ++i) b[i] = float(i % 5) * 0.5f;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int x = 0; x < k; ++x) ref[i * n + j] += a[i * k + x] * b[x * n + j];
  float* da = dev->workspace(0, a.size());
  float* db = dev->workspace(1, b.size());
  float* dc = dev->workspace(2, c.size());
  cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
  dev->gemm(m, n, k, da, db, dc);
  cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
  for (int i = 0; i < m * n; ++i) EXPECT_NEAR(c[i], ref[i], 1e-3f * (1 + std::abs(ref[i])));
}

TEST(Cuda, ReplaysAOneGpuPlanWithThePlannedMemory) {
  auto backend = gpu_or_skip();
  if (!backend) GTEST_SKIP() << "no CUDA device";
  auto s = test::parse(
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 8\nseq_len = 256\nprecision = \"fp32\"\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\ndevices_per_node = 1\n"
      "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n"
      "[parallel]\ntp = 1\npp = 1\ndp = 1\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto r = exec::replay(*s, *s->plan, *backend, {2, 1});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  EXPECT_EQ(r->measured.peak_bytes[0], r->predicted.peak_bytes[0]);
  EXPECT_GT(r->measured.makespan, 0);
}

TEST(Cuda, CalibratesAProfile) {
  auto backend = gpu_or_skip();
  if (!backend) GTEST_SKIP() << "no CUDA device";
  const auto p = exec::calibrate(*backend, 1.0);
  EXPECT_GT(p.gemm.peak_flops, 1e12);  // any datacentre GPU does well over 1 TFLOP/s in fp32
  EXPECT_GT(p.memory_bandwidth, 1e11);
}

}  // namespace
}  // namespace hetsim
