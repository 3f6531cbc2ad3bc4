// A slowed cpu device's pace (exec/cpu/pacer.hpp) on a fake clock: from one kernel's start to the
// next's, the kernel's time / speed; small lateness carried forward, so a run of kernels takes
// exactly Σ kernel / speed plus the last wait's lateness; a long stall is not made up.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "exec/cpu/pacer.hpp"

namespace hetsim {
namespace {

// The fake clock: each read costs kRead ns; a kernel, or a stall, moves it on by hand.
constexpr std::int64_t kRead = 70;
std::int64_t fake_now = 0;
std::int64_t stall_at = -1;        // the read at which the thread is "descheduled" …
std::int64_t stall_ns = 0;         // … for this long
std::int64_t reads = 0;
std::int64_t fake_clock() {
  if (reads++ == stall_at) fake_now += stall_ns;
  return fake_now += kRead;
}
void reset_clock() {
  fake_now = 1'000'000;
  stall_at = -1;
  stall_ns = 0;
  reads = 0;
}

// Runs kernels of the given lengths through `p`, back to back; returns the time from the first
// kernel's start to the start of the kernel after the last.
std::int64_t run(exec::Pacer& p, const std::vector<std::int64_t>& kernels) {
  const std::int64_t first = p.now();
  std::int64_t began = first;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (i > 0) began = p.now();
    fake_now += kernels[i];
    p.idle_after(began);
  }
  return p.now() - first;
}

// Kernel lengths from 100 ns to 3 ms, the calibration's shortest and longest kind alike.
std::vector<std::int64_t> mixed_kernels() {
  std::vector<std::int64_t> k;
  for (int i = 0; i < 400; ++i) k.push_back(100 + (i * 7919) % 30'000 + (i % 50 == 0 ? 3'000'000 : 0));
  return k;
}

std::int64_t sum(const std::vector<std::int64_t>& v) {
  std::int64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

// Speed f: 400 kernels of Σ k ns take Σ k / f, plus at most one clock read of lateness.
TEST(Pacer, ARunOfKernelsTakesItsTimeOverTheSpeed) {
  for (const double f : {0.5, 0.25, 0.1}) {
    reset_clock();
    exec::Pacer p(f, fake_clock, kRead);
    const auto k = mixed_kernels();
    const std::int64_t took = run(p, k);
    EXPECT_NEAR(double(took), double(sum(k)) / f + p.owed_ns(), 1e-3) << "speed " << f;
    EXPECT_LE(p.owed_ns(), double(kRead)) << "speed " << f;
    EXPECT_GE(p.owed_ns(), 0.0);
  }
}

// Each kernel alone: from its start to the next kernel's start, its time / speed (within one
// read), whatever its length: 1 µs as 1 ms.
TEST(Pacer, EachKernelTakesItsTimeOverTheSpeed) {
  reset_clock();
  exec::Pacer p(0.5, fake_clock, kRead);
  for (const std::int64_t k : {1'000, 8'000, 50'000, 1'000'000}) {
    const std::int64_t took = run(p, {k});
    EXPECT_NEAR(double(took), 2.0 * double(k), double(kRead)) << k << " ns";
  }
}

// A wait that ends 15 µs late (an interrupt) is taken off the next idles: the run keeps its
// length.
TEST(Pacer, LatenessIsCarriedIntoTheNextIdles) {
  const auto k = mixed_kernels();
  reset_clock();
  exec::Pacer plain(0.5, fake_clock, kRead);
  const std::int64_t expected = run(plain, k);
  reset_clock();
  // Reads: 0 the run's start, 1 the first kernel's end, 2 its idle's first: 15 µs past the
  // deadline (the kernel is 3.0001 ms, its idle as long).
  stall_at = 2;
  stall_ns = 3'000'100 + 15'000;
  exec::Pacer stalled(0.5, fake_clock, kRead);
  const std::int64_t first = run(stalled, {k[0]});
  EXPECT_GE(stalled.owed_ns(), 15'000.0);
  const std::int64_t rest = run(stalled, std::vector<std::int64_t>(k.begin() + 1, k.end()));
  EXPECT_LE(stalled.owed_ns(), double(kRead));
  EXPECT_NEAR(double(first + rest), double(expected), 2.0 * kRead);
}

// A wait that ends 100 ms late (the thread descheduled) is made up by kMaxOwedNs only: the run is
// longer by the rest, as an unslowed device's is by a stall.
TEST(Pacer, ALongStallIsMadeUpByTheMostOnly) {
  const std::vector<std::int64_t> k(9, 10'000'000);
  reset_clock();
  exec::Pacer plain(0.5, fake_clock, kRead);
  const std::int64_t expected = run(plain, k);
  reset_clock();
  stall_at = 2;  // the first kernel's idle's first read: 100 ms past its deadline
  stall_ns = 10'000'000 + 100'000'000;
  exec::Pacer stalled(0.5, fake_clock, kRead);
  const std::int64_t first = run(stalled, {k[0]});
  EXPECT_DOUBLE_EQ(stalled.owed_ns(), exec::Pacer::kMaxOwedNs);
  const std::int64_t rest = run(stalled, std::vector<std::int64_t>(k.begin() + 1, k.end()));
  EXPECT_LE(stalled.owed_ns(), double(kRead));
  EXPECT_NEAR(double(first + rest), double(expected) + 100'000'000 - exec::Pacer::kMaxOwedNs, 5.0 * kRead);
}

// Kernels too short to pay for the pacer's own clock reads put the device behind; the debt is
// paid from the next long kernel's idle, so the total stays Σ k / speed.
TEST(Pacer, ShortKernelsOverheadIsPaidByLaterIdles) {
  reset_clock();
  exec::Pacer p(0.5, fake_clock, kRead);
  std::vector<std::int64_t> k(100, 10);  // 10 ns: less than a read
  const std::int64_t short_run = run(p, k);
  EXPECT_GT(double(short_run), 2.0 * double(sum(k)));
  EXPECT_GT(p.owed_ns(), 0.0);
  k.push_back(1'000'000);
  reset_clock();
  exec::Pacer q(0.5, fake_clock, kRead);
  EXPECT_NEAR(double(run(q, k)), 2.0 * double(sum(k)), double(kRead));
}

// On the host's clock with real kernels (passes over 16 KiB, about a microsecond, and over 4 MiB,
// about a millisecond): from one kernel's start to the next's, the kernel's time / speed, within
// 5 %. The median over the kernels: a kernel after a stall (the machine's load) starts early, by
// what is made up, and the run as a whole then keeps its length.
TEST(Pacer, OnTheHostClockEachKernelTakesItsTimeOverTheSpeed) {
  std::vector<float> a(std::size_t(1) << 20, 0.5f), b(a.size());
  for (const double f : {0.5, 0.25}) {
    for (const std::size_t n : {std::size_t(4) << 10, std::size_t(1) << 20}) {
      exec::Pacer p(f);
      std::vector<double> ratio;
      std::int64_t began = p.now();
      double ran = p.kernel_ns();
      for (int i = 0; i < (n < 10'000 ? 2000 : 40); ++i) {
        for (std::size_t j = 0; j < n; ++j) b[j] = a[j] * 0.999f + 1e-3f;
        p.idle_after(began);
        const std::int64_t next = p.now();
        ratio.push_back(double(next - began) / (p.kernel_ns() - ran) * f);
        began = next;
        ran = p.kernel_ns();
      }
      std::nth_element(ratio.begin(), ratio.begin() + std::ptrdiff_t(ratio.size() / 2), ratio.end());
      EXPECT_NEAR(ratio[ratio.size() / 2], 1.0, 0.05) << "speed " << f << ", " << n << " floats";
      EXPECT_FLOAT_EQ(b[n - 1], 0.5f * 0.999f + 1e-3f);
    }
  }
}

TEST(Pacer, TheHostPacersOverheadIsMeasured) {
  EXPECT_GE(exec::host_pacing_overhead_ns(), 0);
  EXPECT_LT(exec::host_pacing_overhead_ns(), 100'000);
}

}  // namespace
}  // namespace hetsim
