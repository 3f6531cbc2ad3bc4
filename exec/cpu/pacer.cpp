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

std::int64_t host_clock_read_ns() {
  static const std::int64_t cost = [] {
    std::array<std::int64_t, 201> t{};
    for (auto& x : t) x = host_clock_ns();
    std::array<std::int64_t, 200> gap{};
    for (std::size_t i = 0; i < gap.size(); ++i) gap[i] = t[i + 1] - t[i];
    std::nth_element(gap.begin(), gap.begin() + 100, gap.end());
    return gap[100];
  }();
  return cost;
}

Pacer::Pacer(double speed) : Pacer(speed, host_clock, host_clock_read_ns()) {}

Pacer::Pacer(double speed, Clock clock, std::int64_t read_ns)
    : speed_(speed), clock_(clock), read_ns_(static_cast<double>(read_ns)) {
  HETSIM_ASSERT(speed > 0 && speed <= 1, "a pacer's speed is in (0, 1]");
}

void Pacer::idle_after(std::int64_t began) {
  const std::int64_t ended = clock_();
  // The kernel ran from `began` to `ended` less the read that returned `ended`; the next
  // kernel's `began` read comes after the deadline, so it is taken off the deadline too.
  const double ran = static_cast<double>(ended - began) - read_ns_;
  kernel_ns_ += ran;
  const double deadline = static_cast<double>(began) + ran / speed_ - read_ns_ - owed_ns_;
  std::int64_t t = ended;
  while (static_cast<double>(t) < deadline) {
    relax();
    t = clock_();
  }
  owed_ns_ = std::min(static_cast<double>(t) - deadline, kMaxOwedNs);
}

}  // namespace hetsim::exec
