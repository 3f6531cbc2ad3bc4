// A GPU backend (cuda, or hip: compiled once for each) on a real GPU: every kernel against the
// cpu backend's (tested against the textbook formulas), collectives against sums, one-GPU and
// two-"device" replays whose measured peak memory is the planned one, and a calibration. Skipped
// cleanly without a GPU (ctest label `gpu`; CI runs them and they skip, tests/gpu/run.sh runs
// them on a GPU machine).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "exec/calibrate/calibrate.hpp"
#include "exec/cpu/cpu_backend.hpp"
#ifdef HETSIM_TEST_HIP
#include "exec/hip/hip_backend.hpp"
#else
#include "exec/cuda/cuda_backend.hpp"
#endif
#include "exec/replay/replay.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

#ifdef HETSIM_TEST_HIP
constexpr bool kVendorBlas = false;  // Debian's ROCm: the own tiled GEMM
auto make_backend(int devices = 0) { return exec::make_hip_backend(devices); }
#else
constexpr bool kVendorBlas = true;  // cuBLAS
auto make_backend(int devices = 0) { return exec::make_cuda_backend(devices); }
#endif

std::unique_ptr<exec::Backend> gpu_or_skip(int devices = 0) {
  auto b = make_backend(devices);
  if (!b) return nullptr;
  return std::move(*b);
}

TEST(Gpu, ABackendWithoutADeviceSaysSoClearly) {
  auto b = make_backend();
  if (b) GTEST_SKIP() << "a GPU is present";
  const auto msg = to_string(b.errors()[0]);
  EXPECT_NE(msg.find("no "), std::string::npos) << msg;
  EXPECT_NE(msg.find("--backend cpu"), std::string::npos) << msg;
}

std::vector<float> ramp(std::size_t n, float scale, int salt) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * float(int((i * 7 + std::size_t(salt) * 13) % 17) - 8) / 8.0f;
  return v;
}

// Host data on the device (fp32) and back.
struct DeviceBuffer {
  exec::Device& dev;
  void* p;
  std::size_t n;
  DeviceBuffer(exec::Device& d, int slot, const std::vector<float>& v) : dev(d), p(d.workspace(slot, v.size() * 4)), n(v.size()) {
    dev.from_host(v.data(), p, n * 4);
  }
  std::vector<float> get() {
    std::vector<float> out(n);
    (void)dev.resolve();
    dev.to_host(p, out.data(), n * 4);
    return out;
  }
};

TEST(Gpu, GemmMatchesAHostReference) {
  auto backend = gpu_or_skip();
  if (!backend) GTEST_SKIP() << "no GPU";
  auto dev = backend->open(0);
  const int m = 37, n = 19, k = 23;
  const auto a = ramp(std::size_t(m) * k, 1, 1), b = ramp(std::size_t(k) * n, 1, 2);
  std::vector<float> ref(std::size_t(m) * n, 0.0f);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int x = 0; x < k; ++x) ref[std::size_t(i) * n + j] += a[std::size_t(i) * k + x] * b[std::size_t(x) * n + j];
  DeviceBuffer da(*dev, 0, a), db(*dev, 1, b), dc(*dev, 2, std::vector<float>(ref.size(), 0.0f));
  dev->gemm(m, n, k, exec::Format::Fp32, da.p, db.p, dc.p);
  const auto c = dc.get();
  for (std::size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], ref[i], 1e-3f * (1 + std::abs(ref[i])));
}

// Workspaces start as random numbers, not zeros (GEMMs on zeros run unthrottled): finite and in
// ±[1, 2) whether read as bf16, fp16 or fp32.
TEST(Gpu, WorkspacesStartAsFiniteVariedNumbers) {
  auto backend = gpu_or_skip();
  if (!backend) GTEST_SKIP() << "no GPU";
  auto dev = backend->open(0);
  const std::size_t words = std::size_t{1} << 21;
  void* p = dev->workspace(0, words * 2);
  ASSERT_NE(p, nullptr);
  std::vector<std::uint16_t> h(words);
  (void)dev->resolve();
  dev->to_host(p, h.data(), words * 2);
  ASSERT_TRUE(dev->failure().empty()) << dev->failure();
  EXPECT_GT(std::set<std::uint16_t>(h.begin(), h.end()).size(), 200u);
  for (std::size_t i = 0; i < words; ++i) {
    ASSERT_EQ((h[i] >> 7) & 0xffu, 0x7fu) << i;   // bf16 exponent: [1, 2)
    ASSERT_EQ((h[i] >> 10) & 0x1fu, 15u) << i;    // fp16 exponent: [1, 2)
  }
  for (std::size_t i = 1; i < words; i += 2) {
    const std::uint32_t u = std::uint32_t(h[i]) << 16 | h[i - 1];
    float f = 0;
    std::memcpy(&f, &u, 4);
    ASSERT_TRUE(std::abs(f) >= 1.0f && std::abs(f) < 2.0f) << i << " " << f;
  }
}

// Attention, norm and elementwise on the GPU give the cpu backend's results (fp32).
TEST(Gpu, KernelsMatchTheCpuBackend) {
  auto backend = gpu_or_skip();
  if (!backend) GTEST_SKIP() << "no GPU";
  auto gpu = backend->open(0);
  auto cpu = exec::make_cpu_backend(1)->open(0);
  for (const bool causal : {true, false}) {
    const exec::AttentionShape s{3, 300, 16, causal};
    const std::size_t one = std::size_t(s.heads) * s.seq * s.head_dim;
    const auto qkv = ramp(3 * one, 0.5f, 3), dO = ramp(one, 1.0f, 4);
    for (const bool backward : {false, true}) {
      std::vector<float> o = dO, g(3 * one, 0.0f);
      cpu->attention(s, exec::Format::Fp32, qkv.data(), o.data(), g.data(), backward);
      DeviceBuffer dq(*gpu, 0, qkv), dgr(*gpu, 1, std::vector<float>(3 * one, 0.0f)), dout(*gpu, 2, dO);
      gpu->attention(s, exec::Format::Fp32, dq.p, dout.p, dgr.p, backward);
      const auto got = backward ? dgr.get() : dout.get();
      const auto& want = backward ? g : o;
      for (std::size_t i = 0; i < want.size(); i += 7) ASSERT_NEAR(got[i], want[i], 2e-3f) << causal << backward << i;
    }
  }
  auto x = ramp(4 * 1000, 2.0f, 5);
  for (std::size_t i = 2000; i < x.size(); ++i) x[i] += 1000.0f;  // rows 2–3: |mean| ≫ σ (two-pass variance)
  std::vector<float> y(x.size());
  cpu->norm(4, 1000, exec::Format::Fp32, x.data(), y.data(), false);
  DeviceBuffer dx(*gpu, 0, x), dy(*gpu, 1, std::vector<float>(y.size(), 0.0f));
  gpu->norm(4, 1000, exec::Format::Fp32, dx.p, dy.p, false);
  const auto gy = dy.get();
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(gy[i], y[i], 2e-3f) << i;
}

TEST(Gpu, CollectivesAreNumericallyRight) {
  auto backend = gpu_or_skip(2);
  if (!backend) GTEST_SKIP() << "no GPU";
  // Two devices: two GPUs through NCCL where there are two, else both on GPU 0 (host-staged).
  std::vector<std::unique_ptr<exec::Device>> devs;
  devs.push_back(backend->open(0));
  devs.push_back(backend->open(1));
  auto comms = backend->communicators({devs[0].get(), devs[1].get()});
  ASSERT_TRUE(comms.ok()) << test::all_errors(comms.errors());
  const std::size_t count = 1000;
  std::vector<std::vector<float>> got(2);
  std::vector<std::thread> th;
  for (int r = 0; r < 2; ++r)
    th.emplace_back([&, r] {
      DeviceBuffer b(*devs[r], 0, std::vector<float>(count, float(r + 1)));
      auto res = (*comms)[r]->all_reduce(static_cast<float*>(b.p), count);
      if (res.ok()) got[r] = b.get();
    });
  for (auto& t : th) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(got[r].size(), count);
    for (float v : got[r]) ASSERT_FLOAT_EQ(v, 3.0f);
  }
}

std::string gpu_scenario(const char* parallel, int devices, const char* precision) {
  return std::string("[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 8\nseq_len = 256\nprecision = \"") + precision +
         "\"\n[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\ndevices_per_node = " + std::to_string(devices) +
         "\n[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n[parallel]\n" + parallel;
}

TEST(Gpu, ReplaysAOneGpuPlanWithThePlannedMemory) {
  auto backend = gpu_or_skip();
  if (!backend) GTEST_SKIP() << "no GPU";
  for (const char* precision : {"fp32", "bf16"}) {
    auto s = test::parse(gpu_scenario("tp = 1\npp = 1\ndp = 1\n", 1, precision));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    auto r = exec::replay(*s, *s->plan, *backend, {2, 1});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    EXPECT_EQ(r->measured.peak_bytes[0], r->predicted.peak_bytes[0]);
    EXPECT_GT(r->measured.makespan, 0);
  }
}

TEST(Gpu, ReplaysTwoDevicePlans) {
  auto backend = gpu_or_skip(2);  // two GPUs, or two devices sharing one
  if (!backend) GTEST_SKIP() << "no GPU";
  // On one GPU the two "devices" share it (pipeline copies, host-staged collectives); on two,
  // they are two GPUs with NCCL.
  for (const char* par : {"tp = 1\npp = 2\ndp = 1\n", "tp = 2\npp = 1\ndp = 1\n", "tp = 1\npp = 1\ndp = 2\n"}) {
    auto s = test::parse(gpu_scenario(par, 2, "bf16"));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    auto r = exec::replay(*s, *s->plan, *backend, {2, 1});
    ASSERT_TRUE(r.ok()) << par << test::all_errors(r.errors());
    for (std::size_t d = 0; d < r->graph.devices.size(); ++d)
      EXPECT_EQ(r->measured.peak_bytes[d], r->predicted.peak_bytes[d]);
  }
}

TEST(Gpu, CalibratesAProfile) {
  auto backend = gpu_or_skip();
  if (!backend) GTEST_SKIP() << "no GPU";
  const auto p = exec::calibrate(*backend, 1.0);
  EXPECT_GT(p.gemm.peak_flops, 1e12);  // any datacentre GPU does well over 1 TFLOP/s in fp32
  if (kVendorBlas) {
    EXPECT_GT(p.peak_bf16, p.gemm.peak_flops);  // tensor cores
  }
  EXPECT_GT(p.memory_bandwidth, 1e11);
}

}  // namespace
}  // namespace hetsim
