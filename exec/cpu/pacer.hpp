#pragma once
// The pace of a slowed cpu device: each kernel, then an idle until the kernel would have ended on
// a device `speed` times as fast, by the host's steady clock (docs/executor.md, "Devices of
// unequal speed").

#include <cstdint>

namespace hetsim::exec {

/// Paces the kernels of one device running at `speed` of full speed (0 < speed ≤ 1).
///
/// Around a kernel: `began = now()`, the kernel, `idle_after(began)`. The idle spins on the clock
/// until `began + ran/speed`, where `ran` is the kernel's time without the pacer's own (its clock
/// reads and calls, `overhead_ns` on each side of the kernel, charged to the idle), so the time
/// from one kernel's start to the next's is the kernel's time / speed. A wait that ends late (the last read's granularity, kernels too
/// short to pay for the pacer's reads, an interrupt) is owed and taken off the next idles: over
/// any run of kernels the device's time is Σ ran / speed plus the last wait's lateness
/// (owed_ns()), not a lateness per kernel. Up to kMaxOwedNs: a thread descheduled by the machine's
/// load (a time slice, milliseconds) loses that time beyond its deadline, as an unslowed device
/// loses a stall; made up, it would run the next kernels unpaced, a burst at full speed that
/// every measurement of a few kernels (a task, an op class, a calibration batch) would catch.
/// A deadline, not a CPU-time budget: reading a thread's CPU time is a system call (about 3 µs on
/// the development machine, as long as a small kernel), the steady clock a vDSO read (about
/// 70 ns); a sleep wakes 100–200 µs late there, longer than many kernels, so the idle spins.
/// Not thread-safe: one per device thread.
class Pacer {
 public:
  using Clock = std::int64_t (*)();  ///< a monotonic clock, ns
  /// The most lateness carried into the next idles, ns.
  static constexpr double kMaxOwedNs = 20'000;

  /// A pacer on the host's steady clock (host_clock_ns), its overhead measured once per process
  /// (host_pacing_overhead_ns). Requires: 0 < speed ≤ 1.
  explicit Pacer(double speed);
  /// A pacer on `clock` whose own time is `overhead_ns` on each side of a kernel (tests pass a
  /// fake clock whose reads cost that much).
  Pacer(double speed, Clock clock, std::int64_t overhead_ns);

  [[nodiscard]] std::int64_t now() const { return clock_(); }
  /// Idles after a kernel that began at `began` (a now() reading) and has just ended.
  void idle_after(std::int64_t began);
  /// The kernels' time so far (Σ ran), ns.
  [[nodiscard]] double kernel_ns() const { return kernel_ns_; }
  /// Lateness carried into the next idle, ns (0 … kMaxOwedNs).
  [[nodiscard]] double owed_ns() const { return owed_ns_; }
  [[nodiscard]] double speed() const { return speed_; }

 private:
  double speed_;
  Clock clock_;
  double overhead_ns_;
  double owed_ns_ = 0;
  double kernel_ns_ = 0;
};

/// The host pacer's own time on each side of a kernel, ns: half the median time of a paced call
/// with no kernel (two clock reads and the calls; about 70 ns on the development machine),
/// measured on the first call.
[[nodiscard]] std::int64_t host_pacing_overhead_ns();

}  // namespace hetsim::exec
