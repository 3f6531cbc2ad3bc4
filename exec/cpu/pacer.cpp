#include "exec/cpu/pacer.hpp"

#include <algorithm>
#include <array>

#include "exec/backend.hpp"
#include "models/base/assert.hpp"

namespace hetsim::exec {
namespace {

std::int64_t host_clock() { return host_clock_ns(); }

// Tells the core that this is a spin (lets a sibling hyperthread run, saves power).
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

std::int64_t host_pacing_overhead_ns() {
  // At speed 1 and no charge, a paced call never spins: from one `began` to the next is the
  // pacer's own time (two reads and the calls), half of it on each side of a kernel.
  static const std::int64_t cost = [] {
    Pacer p(1.0, host_clock, 0);
    std::array<std::int64_t, 401> began{};
    for (auto& b : began) {
      b = p.now();
      p.idle_after(b);
    }
    std::array<std::int64_t, 400> gap{};
    for (std::size_t i = 0; i < gap.size(); ++i) gap[i] = began[i + 1] - began[i];
    std::nth_element(gap.begin(), gap.begin() + 200, gap.end());
    return gap[200] / 2;
  }();
  return cost;
}

Pacer::Pacer(double speed) : Pacer(speed, host_clock, host_pacing_overhead_ns()) {}

Pacer::Pacer(double speed, Clock clock, std::int64_t overhead_ns)
    : speed_(speed), clock_(clock), overhead_ns_(static_cast<double>(overhead_ns)) {
  HETSIM_ASSERT(speed > 0 && speed <= 1, "a pacer's speed is in (0, 1]");
}

void Pacer::idle_after(std::int64_t began) {
  const std::int64_t ended = clock_();
  // The kernel ran from `began` to `ended` less the pacer's own time on this side of it (the read
  // that returned `ended`); the pacer's time on the other side (returning, the next `began`
  // read) comes after the deadline, so it is taken off the deadline too.
  const double ran = static_cast<double>(ended - began) - overhead_ns_;
  kernel_ns_ += ran;
  const double deadline = static_cast<double>(began) + ran / speed_ - overhead_ns_ - owed_ns_;
  std::int64_t t = ended;
  while (static_cast<double>(t) < deadline) {
    relax();
    t = clock_();
  }
  owed_ns_ = std::min(static_cast<double>(t) - deadline, kMaxOwedNs);
}

}  // namespace hetsim::exec
