// A cpu device of several cores (exec/cpu/team.hpp): its team runs every part once, each on its
// own thread, and the device computes what a device of one core computes.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/cpu/team.hpp"

namespace hetsim {
namespace {

TEST(CpuTeam, RunsEveryPartOnceEachOnItsOwnThreadAndReturnsWhenAllHave) {
  exec::cpu::Team team(3);
  ASSERT_EQ(team.size(), 3);
  for (const int parts : {3, 2, 1, 3}) {
    std::mutex m;
    std::vector<std::thread::id> ids(static_cast<std::size_t>(parts));
    std::vector<int> runs(static_cast<std::size_t>(parts), 0);
    team.run(parts, [&](int i, int all) {
      EXPECT_EQ(all, parts);
      std::this_thread::sleep_for(std::chrono::milliseconds(i == 0 ? 0 : 5));  // helpers finish last
      const std::lock_guard lock(m);
      ids[static_cast<std::size_t>(i)] = std::this_thread::get_id();
      ++runs[static_cast<std::size_t>(i)];
    });
    for (const int r : runs) EXPECT_EQ(r, 1) << parts << " parts";  // every one done when run() returned
    EXPECT_EQ(ids[0], std::this_thread::get_id()) << "part 0 on the caller";
    EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), static_cast<std::size_t>(parts));
  }
  // Many short rounds, some with fewer parts than helpers: none lost, none run twice.
  std::atomic<long> sum{0};
  for (int round = 0; round < 2000; ++round)
    team.run(1 + round % 3, [&](int i, int) { sum += i + 1; });
  long expected = 0;
  for (int round = 0; round < 2000; ++round) expected += (1 + round % 3) * (2 + round % 3) / 2;
  EXPECT_EQ(sum.load(), expected);
}

TEST(CpuTeam, PartsCoverTheRangeOnceInWholeGrains) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{1000}, std::size_t{4097}})
    for (const int parts : {1, 2, 3, 7})
      for (const std::size_t grain : {std::size_t{1}, std::size_t{64}}) {
        std::size_t next = 0;
        for (int i = 0; i < parts; ++i) {
          const auto r = exec::cpu::part_of(n, i, parts, grain);
          EXPECT_EQ(r.begin, next) << n << " " << parts << " " << grain;
          EXPECT_LE(r.begin, r.end);
          if (r.end < n) {
            EXPECT_EQ(r.end % grain, 0u);
          }
          next = r.end;
        }
        EXPECT_EQ(next, n) << n << " " << parts << " " << grain;
      }
}

std::vector<float> values(std::size_t n, int salt) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + std::size_t(salt) * 13) % 17) / 16.0f - 0.5f;
  return v;
}

// Every kernel on devices of 2 and 3 cores against one of 1: the same result (a GEMM's rows are
// computed alike whichever thread takes them; tolerance only for Eigen's blocking by size).
TEST(CpuDevice, ADeviceOfSeveralCoresComputesWhatOneCoreDoes) {
  auto backend = exec::make_cpu_backend(1);
  auto one = backend->open(0);
  for (const int cores : {2, 3}) {
    SCOPED_TRACE(std::to_string(cores) + " cores");
    exec::DeviceSetup setup;
    setup.cores = cores;
    auto many = backend->open_as(0, setup);
    ASSERT_TRUE(many.ok());
    auto& dev = **many;
    auto same = [](const std::vector<float>& a, const std::vector<float>& b, float tol, const char* what) {
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], tol * (1 + std::abs(a[i]))) << what << " [" << i << "]";
    };
    // GEMM, fp32 and bf16 (rows not a multiple of the parts).
    const int m = 101, n = 40, k = 56;
    const auto a = values(std::size_t(m) * k, 1), b = values(std::size_t(k) * n, 2);
    std::vector<float> c1(std::size_t(m) * n), c2(c1.size());
    one->gemm(m, n, k, exec::Format::Fp32, a.data(), b.data(), c1.data());
    dev.gemm(m, n, k, exec::Format::Fp32, a.data(), b.data(), c2.data());
    same(c1, c2, 1e-5f, "gemm fp32");
    // bf16, with B large enough (k·n ≥ 32 Ki) for its widening to be split too.
    const int n16 = 192, k16 = 192;
    std::vector<std::uint16_t> a16(std::size_t(m) * k16), b16(std::size_t(k16) * n16), o1(std::size_t(m) * n16),
        o2(o1.size());
    for (std::size_t i = 0; i < a16.size(); ++i) a16[i] = static_cast<std::uint16_t>(0x3c00 + i % 97);
    for (std::size_t i = 0; i < b16.size(); ++i) b16[i] = static_cast<std::uint16_t>(0x3c80 + i % 89);
    one->gemm(m, n16, k16, exec::Format::Bf16, a16.data(), b16.data(), o1.data());
    dev.gemm(m, n16, k16, exec::Format::Bf16, a16.data(), b16.data(), o2.data());
    for (std::size_t i = 0; i < o1.size(); ++i)
      ASSERT_LE(std::abs(int(o1[i]) - int(o2[i])), 1) << "gemm bf16 [" << i << "]";
    // Attention forward and backward, three heads.
    const exec::AttentionShape s{3, 48, 16, true};
    const std::size_t per = std::size_t(s.heads) * s.seq * s.head_dim;
    const auto qkv = values(3 * per, 3);
    std::vector<float> out1 = values(per, 4), out2 = out1, g1(3 * per), g2(3 * per);
    one->attention(s, exec::Format::Fp32, qkv.data(), out1.data(), nullptr, false);
    dev.attention(s, exec::Format::Fp32, qkv.data(), out2.data(), nullptr, false);
    same(out1, out2, 1e-5f, "attention");
    one->attention(s, exec::Format::Fp32, qkv.data(), out1.data(), g1.data(), true);
    dev.attention(s, exec::Format::Fp32, qkv.data(), out2.data(), g2.data(), true);
    same(g1, g2, 1e-5f, "attention backward");
    // The same in bf16 (2-byte elements: the heads' offsets in bytes).
    std::vector<std::uint16_t> q16(3 * per), out16a(per), out16b(per), g16a(3 * per), g16b(3 * per);
    for (std::size_t i = 0; i < q16.size(); ++i) q16[i] = static_cast<std::uint16_t>(0x3e00 + i % 61);
    for (std::size_t i = 0; i < out16a.size(); ++i) out16a[i] = out16b[i] = static_cast<std::uint16_t>(0x3d00 + i % 53);
    one->attention(s, exec::Format::Bf16, q16.data(), out16a.data(), g16a.data(), true);
    dev.attention(s, exec::Format::Bf16, q16.data(), out16b.data(), g16b.data(), true);
    EXPECT_EQ(g16a, g16b) << "attention backward, bf16";
    one->attention(s, exec::Format::Bf16, q16.data(), out16a.data(), nullptr, false);
    dev.attention(s, exec::Format::Bf16, q16.data(), out16b.data(), nullptr, false);
    EXPECT_EQ(out16a, out16b) << "attention, bf16";
    // Norm forward and backward, 70 rows.
    const auto x = values(70 * 64, 5);
    std::vector<float> y1(x.size()), y2(x.size());
    one->norm(70, 64, exec::Format::Fp32, x.data(), y1.data(), false);
    dev.norm(70, 64, exec::Format::Fp32, x.data(), y2.data(), false);
    same(y1, y2, 1e-6f, "norm");
    one->norm(70, 64, exec::Format::Fp32, x.data(), y1.data(), true);
    dev.norm(70, 64, exec::Format::Fp32, x.data(), y2.data(), true);
    same(y1, y2, 1e-6f, "norm backward");
    std::vector<std::uint16_t> x16(70 * 64), n16a(x16.size()), n16b(x16.size());
    for (std::size_t i = 0; i < x16.size(); ++i) x16[i] = static_cast<std::uint16_t>(0x3f00 + i % 71);
    one->norm(70, 64, exec::Format::Bf16, x16.data(), n16a.data(), false);
    dev.norm(70, 64, exec::Format::Bf16, x16.data(), n16b.data(), false);
    EXPECT_EQ(n16a, n16b) << "norm, bf16";
    // Elementwise passes (fp32 and 16-bit, vectorized and not) and Adam, over 100,003 elements.
    const std::size_t count = 100'003;
    const auto src = values(count, 6);
    for (const auto f : {exec::Format::Fp32, exec::Format::Bf16})
      for (const bool unvec : {false, true}) {
        std::vector<float> d1(count, 0.0f), d2(count, 0.0f);
        const std::size_t elems = count;  // 16-bit: the first half of the buffers' bytes
        if (unvec) {
          one->elementwise_unvectorized(elems, f, src.data(), d1.data());
          dev.elementwise_unvectorized(elems, f, src.data(), d2.data());
        } else {
          one->elementwise(elems, f, src.data(), d1.data());
          dev.elementwise(elems, f, src.data(), d2.data());
        }
        EXPECT_EQ(std::memcmp(d1.data(), d2.data(), count * sizeof(float)), 0)
            << exec::format_name(f) << (unvec ? " unvectorized" : "");
      }
    std::vector<float> st1 = values(4 * count, 7), st2 = st1;
    one->adam(count, st1.data());
    dev.adam(count, st2.data());
    EXPECT_EQ(std::memcmp(st1.data(), st2.data(), st1.size() * sizeof(float)), 0) << "adam";
  }
  // Out of range: refused, naming the key.
  for (const int bad : {-1, exec::kMaxCores + 1}) {
    exec::DeviceSetup setup;
    setup.cores = bad;
    auto r = backend->open_as(0, setup);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.errors()[0].key, "cores");
  }
  EXPECT_FALSE(exec::make_cpu_backend_at(1, 0, 1.0, 0).ok());
}

// The threads of the process (Linux: /proc/self/task), -1 where that cannot be read.
int process_threads() {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++n;
  return ec ? -1 : n;
}

// A device of N cores holds N − 1 helper threads while it is open.
TEST(CpuDevice, ADeviceOfNCoresHoldsNMinusOneHelperThreads) {
  const int before = process_threads();
  if (before < 0) GTEST_SKIP() << "no /proc/self/task";
  auto backend = exec::make_cpu_backend(1);
  {
    exec::DeviceSetup setup;
    setup.cores = 4;
    auto dev = backend->open_as(0, setup);
    ASSERT_TRUE(dev.ok());
    EXPECT_EQ(process_threads(), before + 3);
    auto plain = backend->open(0);
    EXPECT_EQ(process_threads(), before + 3) << "a device of the backend's one core has no helpers";
  }
  EXPECT_EQ(process_threads(), before) << "the helpers end with their device";
  auto wide = exec::make_cpu_backend_at(1, 0, 1.0, 3);
  ASSERT_TRUE(wide.ok());
  auto dev = (*wide)->open(0);
  EXPECT_EQ(process_threads(), before + 2) << "the backend's own core count";
}

// Memory per device: open_as caps what allocate() hands out.
TEST(CpuDevice, ADeviceOpenedWithItsOwnMemoryAllocatesUpToIt) {
  auto backend = exec::make_cpu_backend(1, std::size_t{1} << 30);
  exec::DeviceSetup setup;
  setup.memory = std::size_t{1} << 20;
  auto dev = backend->open_as(0, setup);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ((*dev)->capacity(), std::size_t{1} << 20);
  auto block = (*dev)->allocate(std::size_t{3} << 18);
  ASSERT_TRUE(block.ok());
  EXPECT_FALSE((*dev)->allocate(std::size_t{1} << 19).ok()) << "over the device's own 1 MiB";
  (*dev)->release(*block, std::size_t{3} << 18);
  EXPECT_EQ(backend->open(0)->capacity(), std::size_t{1} << 30) << "the backend's own otherwise";
}

}  // namespace
}  // namespace hetsim
