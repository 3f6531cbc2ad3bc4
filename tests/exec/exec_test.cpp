// The executor: replay runs exactly the planned tasks in the planned order on real buffers of the
// planned sizes; compare and calibration compute what they claim; bad plans fail clearly.

#include <gtest/gtest.h>

#include <thread>

#include "exec/calibrate/calibrate.hpp"
#include "exec/comm/shm_group.hpp"
#include "exec/compare/compare.hpp"
#include "exec/cpu/cpu_backend.hpp"
#include "exec/replay/replay.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

std::string small(const std::string& parallel, int devices = 2) {
  return "[model]\npreset = \"tiny\"\nlayers = 4\nhidden = 128\nheads = 4\nkv_heads = 4\nffn_hidden = 512\nvocab = 512\n"
         "[training]\nglobal_batch = 4\nseq_len = 64\nprecision = \"fp32\"\n"
         "[[cluster.link]]\nname = \"shm\"\nkind = \"scale-up\"\nbandwidth = \"10GB/s\"\nlatency = \"1us\"\n"
         "[[cluster.pool]]\nnodes = 1\n"
         "[cluster.pool.device]\nname = \"core\"\npeak = { fp32 = \"20GFLOPS\" }\nmemory = \"1GiB\"\n"
         "memory_bandwidth = \"10GB/s\"\nnode = { devices = " + std::to_string(devices) +
         ", fabric = \"shm\", nics = 1, nic = \"shm\" }\n"
         "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n"
         "[parallel]\n" + parallel;
}

TEST(Replay, RunsExactlyThePlannedTasksInOrder) {
  auto s = test::parse(small("tp = 1\npp = 2\ndp = 1\nmicro_batch = 1\n"));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto backend = exec::make_cpu_backend(2);
  auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  const auto& g = r->graph;
  const auto& m = r->measured;
  ASSERT_EQ(m.start.size(), g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    ASSERT_GE(m.start[i], 0);
    ASSERT_GE(m.end[i], m.start[i]);
    for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1]; ++k)
      EXPECT_LE(m.end[i], m.start[g.succ[k]]) << "measured run broke a dependency";
  }
  // Per device, tasks ran one at a time in the predicted order.
  for (std::uint32_t d = 0; d < g.devices.size(); ++d) {
    std::vector<std::uint32_t> ids;
    for (std::uint32_t i = 0; i < g.size(); ++i)
      if (g.tasks[i].device == d) ids.push_back(i);
    std::stable_sort(ids.begin(), ids.end(), [&](auto a, auto b) { return r->predicted.start[a] < r->predicted.start[b]; });
    for (std::size_t k = 1; k < ids.size(); ++k) EXPECT_LE(m.end[ids[k - 1]], m.start[ids[k]]);
  }
  // Real buffers of the planned sizes: the measured peak is the predicted one.
  for (std::size_t d = 0; d < g.devices.size(); ++d) EXPECT_EQ(m.peak_bytes[d], r->predicted.peak_bytes[d]);
}

void check_replay(const exec::Replay& r) {
  const auto& g = r.graph;
  const auto& m = r.measured;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    ASSERT_GE(m.start[i], 0);
    ASSERT_GE(m.end[i], m.start[i]);
  }
  for (std::size_t d = 0; d < g.devices.size(); ++d) EXPECT_EQ(m.peak_bytes[d], r.predicted.peak_bytes[d]);
}

TEST(Replay, TensorAndDataParallelPlansRunWithRealCollectives) {
  auto backend = exec::make_cpu_backend(4);
  // (plan, devices per node)
  for (const auto& [par, devs] : std::vector<std::pair<const char*, int>>{{"tp = 2\npp = 1\ndp = 1\n", 2},
                                                                        {"tp = 1\npp = 1\ndp = 2\n", 2},
                                                                        {"tp = 2\npp = 1\ndp = 2\n", 4},
                                                                        {"tp = 1\npp = 2\ndp = 2\nzero = 3\n", 4},
                                                                        {"tp = 1\npp = 1\ndp = 2\nzero = 0\n", 2}}) {
    auto s = test::parse(small(par, devs));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_TRUE(r.ok()) << par << test::all_errors(r.errors());
    check_replay(*r);
  }
}

// Regression (found while benchmarking): backward GEMMs of micro-batches larger than one used to
// overrun the scratch buffers (m·n > max(n, m)·k). ASan in CI catches a relapse.
TEST(Replay, MicroBatchesLargerThanOneRun) {
  auto s = test::parse(small("tp = 1\npp = 1\ndp = 2\nmicro_batch = 2\n"));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto backend = exec::make_cpu_backend(2);
  auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  check_replay(*r);
}

TEST(Replay, RefusesWhatItCannotRunWithAClearMessage) {
  auto backend = exec::make_cpu_backend(2);
  {
    auto s = test::parse(small("tp = 1\npp = 4\ndp = 1\n", 4));
    ASSERT_TRUE(s.ok());
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(to_string(r.errors()[0]).find("needs 4 devices but the cpu backend has 2"), std::string::npos);
  }
  {
    auto s = test::parse(small("micro_batch = 1\n[[parallel.replicas]]\ncount = 1\nmicro_batches = 3\n"
                               "stages = [{tp = 1, layers = 4}]\n[[parallel.replicas]]\ncount = 1\nmicro_batches = 1\n"
                               "stages = [{tp = 1, layers = 2}, {tp = 1, layers = 2}]\n", 4));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(to_string(r.errors()[0]).find("replica groups"), std::string::npos);
  }
}

TEST(ShmGroup, CollectivesAreNumericallyRight) {
  // 3 members; member r holds values r + 1 + i/10. Sum over members: 6 + 3·i/10.
  const int n = 3;
  const std::size_t count = 6;
  exec::ShmGroup grp(n);
  std::vector<std::vector<float>> reduced(n), gathered(n, std::vector<float>(n * count)), scattered(n, std::vector<float>(2));
  std::vector<std::thread> th;
  for (int r = 0; r < n; ++r)
    th.emplace_back([&, r] {
      std::vector<float> mine(count);
      for (std::size_t i = 0; i < count; ++i) mine[i] = float(r + 1) + float(i) / 10;
      reduced[r] = mine;
      grp.all_reduce(r, reduced[r].data(), count);
      grp.all_gather(r, mine.data(), gathered[r].data(), count);
      grp.reduce_scatter(r, mine.data(), scattered[r].data(), 2);
    });
  for (auto& t : th) t.join();
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      EXPECT_FLOAT_EQ(reduced[r][i], 6.0f + 3.0f * float(i) / 10);
      for (int q = 0; q < n; ++q) EXPECT_FLOAT_EQ(gathered[r][q * count + i], float(q + 1) + float(i) / 10);
    }
    for (std::size_t i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(scattered[r][i], 6.0f + 3.0f * float(r * 2 + i) / 10);
  }
}

TEST(Replay, OutOfMemoryNamesTheDeviceAndTask) {
  auto s = test::parse(small("tp = 1\npp = 2\ndp = 1\nmicro_batch = 1\n"));
  ASSERT_TRUE(s.ok());
  auto backend = exec::make_cpu_backend(2, 9'000'000);  // ~9 MB per device: the activations do not fit
  auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
  ASSERT_FALSE(r.ok());
  const std::string msg = to_string(r.errors()[0]);
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
}

TEST(Replay, OutOfMemoryInsideCollectivesFailsWithoutHanging) {
  // Both replicas run out of memory; the members that fail leave their groups so the others
  // do not wait for them forever.
  for (const char* par : {"tp = 1\npp = 1\ndp = 2\n", "tp = 2\npp = 1\ndp = 1\n"}) {
    auto s = test::parse(small(par));
    ASSERT_TRUE(s.ok());
    auto backend = exec::make_cpu_backend(2, 3'000'000);
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_FALSE(r.ok()) << par;
    EXPECT_NE(to_string(r.errors()[0]).find("out of memory"), std::string::npos);
    EXPECT_NE(r.errors()[0].key, "plan");  // an environment failure, not a plan the executor refuses
  }
}

// A backend whose devices fail every allocation after the first `budget` calls: a device that
// breaks in the middle of a run.
class FlakyBackend final : public exec::Backend {
 public:
  FlakyBackend(std::unique_ptr<exec::Backend> inner, int budget) : inner_(std::move(inner)), budget_(budget) {}
  std::string name() const override { return "flaky"; }
  int device_count() const override { return inner_->device_count(); }
  std::unique_ptr<exec::Device> open(int index) override {
    struct Flaky final : exec::Device {
      std::unique_ptr<exec::Device> d;
      int left;
      std::string name() const override { return "flaky" + d->name(); }
      Result<void*> allocate(std::size_t bytes) override {
        if (--left < 0) return Diagnostic{{}, "", name() + ": device lost", ""};
        return d->allocate(bytes);
      }
      void release(void* p, std::size_t b) override { d->release(p, b); }
      void gemm(int m, int n, int k, const float* a, const float* b, float* c) override { d->gemm(m, n, k, a, b, c); }
      void stream(const float* s, float* t, std::size_t n) override { d->stream(s, t, n); }
      void copy(const float* s, float* t, std::size_t n) override { d->copy(s, t, n); }
      float* workspace(int slot, std::size_t n) override { return d->workspace(slot, n); }
      bool host_memory() const override { return true; }
      std::int64_t now_ns() const override { return d->now_ns(); }
      std::size_t live_bytes() const override { return d->live_bytes(); }
      std::size_t peak_bytes() const override { return d->peak_bytes(); }
    };
    auto f = std::make_unique<Flaky>();
    f->d = inner_->open(index);
    f->left = budget_;
    return f;
  }

 private:
  std::unique_ptr<exec::Backend> inner_;
  int budget_;
};

TEST(Replay, KeepsTheStepsMeasuredBeforeADeviceFails) {
  auto s = test::parse(small("tp = 1\npp = 2\ndp = 1\nmicro_batch = 1\n"));
  ASSERT_TRUE(s.ok());
  // Count one step's allocations per device, then allow two steps and a bit.
  auto probe = exec::replay(*s, *s->plan, *exec::make_cpu_backend(2), {1, 0});
  ASSERT_TRUE(probe.ok());
  int per_step = 1;  // the resident state
  for (const auto& t : probe->graph.tasks)
    if (t.device == 0 && (t.alloc_bytes > 0 || t.free_bytes > 0)) per_step += 2;  // its block and the kept one
  FlakyBackend flaky(exec::make_cpu_backend(2), 2 * per_step + 3);
  auto r = exec::replay(*s, *s->plan, flaky, {4, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_NE(to_string(*r->failure).find("device lost"), std::string::npos);
  EXPECT_GE(r->step_ns.size(), 1u);
  EXPECT_LT(r->step_ns.size(), 4u);
  // And a device that fails at once: an error, nothing measured.
  FlakyBackend dead(exec::make_cpu_backend(2), 0);
  EXPECT_FALSE(exec::replay(*s, *s->plan, dead, {2, 0}).ok());
}

TEST(Compare, ComputesErrorsPerKindStepAndMemory) {
  io::TraceFile p, m;
  p.devices = m.devices = {"d0"};
  p.peak_bytes = {100};
  m.peak_bytes = {80};
  p.makespan_ns = 1000;
  m.makespan_ns = 800;
  p.tasks = {{0, "forward", "F L0 mb0", 0, 300}, {0, "backward", "B L0 mb0", 300, 1000}};
  m.tasks = {{0, "forward", "F L0 mb0", 0, 200}, {0, "backward", "B L0 mb0", 200, 800}};
  auto c = exec::compare(p, m);
  ASSERT_TRUE(c.ok());
  EXPECT_NEAR(c->step_error(), 1000.0 / 800 - 1, 1e-12);
  EXPECT_EQ(c->kinds.size(), 2u);
  EXPECT_NEAR(c->kinds[0].error(), 300.0 / 200 - 1, 1e-12);
  EXPECT_NEAR(c->kinds[1].error(), 700.0 / 600 - 1, 1e-12);
  EXPECT_EQ(c->worst[0].name, "F L0 mb0");  // |300 − 200| = |700 − 600|: the first stays first
  m.tasks[1].name = "other";
  EXPECT_FALSE(exec::compare(p, m).ok());
}

TEST(Calibrate, RecoversKnownParametersFromSyntheticMeasurements) {
  // t = 2mnk / (peak · d/(d + h)) + launch with peak 50 GFLOP/s, h = 32, launch 20 us.
  const double peak = 50e9, h = 32, launch = 20e-6;
  std::vector<exec::GemmSample> samples;
  for (int m : {32, 64, 256, 1024})
    for (int n : {64, 512})
      for (int k : {16, 128, 1024}) {
        const double d = std::min({double(m), double(n), double(k)});
        samples.push_back({double(m), double(n), double(k), 2.0 * m * n * k / (peak * d / (d + h)) + launch});
      }
  const auto fit = exec::fit_gemm(samples);
  EXPECT_NEAR(fit.peak_flops / peak, 1.0, 1e-6);
  EXPECT_NEAR(fit.half_dim, h, 1e-9);
  EXPECT_NEAR(fit.launch_s, launch, 1e-9);
}

TEST(Calibrate, ProfileLoadsAsACatalogueDevice) {
  exec::Profile p;
  p.gemm = {40e9, 8, 2e-6, 0.01};
  p.attention_efficiency = 0.8;
  p.memory_bandwidth = 20e9;
  p.copy_bandwidth = 10e9;
  const std::string toml = exec::profile_toml(p, "cpu-x", 4.0 * 1073741824.0, 2);
  hw::Catalog cat = test::catalog();
  const auto errs = io::read_catalog_text(toml, "profile.toml", cat);
  ASSERT_TRUE(errs.empty()) << test::all_errors(errs);
  const auto* d = cat.find_device("cpu-x");
  ASSERT_NE(d, nullptr);
  EXPECT_NEAR(d->peak_for(hw::Dtype::Fp32)->v, 40e9, 1e3);
  EXPECT_DOUBLE_EQ(d->efficiency.gemm_half_dim, 8);
  EXPECT_NEAR(d->efficiency.launch_overhead.v, 2e-6, 1e-12);
  EXPECT_NE(cat.find_link("cpu-x-copy"), nullptr);
}

}  // namespace
}  // namespace hetsim
