#include "sim/engine/variability.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "models/base/assert.hpp"

namespace hetsim::engine {
namespace {

// One seed per purpose (stragglers, per-device spread, jitter), so that changing one spread
// leaves the others' draws as they were. SplitMix64's finaliser.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t purpose) {
  std::uint64_t z = seed + purpose * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1]: the top 53 bits, plus one.
double uniform(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53; }

// Standard normal (Box–Muller, one draw per two uniforms).
double normal(std::mt19937_64& rng) {
  const double u1 = uniform(rng);
  const double u2 = uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

std::int64_t real_devices(const schedule::TaskGraph& g) {
  std::int64_t n = 0;
  for (const auto& d : g.devices) n += d.count;
  return n;
}

FactorSampler::FactorSampler(const schedule::TaskGraph& g, const VariabilitySpec& v)
    : g_(g), v_(v), jitter_rng_(stream_seed(v.seed, 3)) {
  const std::int64_t n = real_devices(g);
  v_.slow_devices = static_cast<int>(std::clamp<std::int64_t>(v.slow_devices, 0, n));
  persistent_.assign(static_cast<std::size_t>(n), 1.0);
  std::vector<bool> slow(static_cast<std::size_t>(n), false);
  std::mt19937_64 pick(stream_seed(v.seed, 1));
  if (v_.slow_devices > 0) {
    // Floyd's sampling: exactly slow_devices distinct devices, each set equally likely.
    for (std::int64_t j = n - v_.slow_devices; j < n; ++j) {
      // Modulo bias: below n / 2⁶⁴.
      const auto k = static_cast<std::size_t>(pick() % static_cast<std::uint64_t>(j + 1));
      slow[slow[k] ? static_cast<std::size_t>(j) : k] = true;
    }
  } else if (v.slow_fraction > 0) {
    for (std::size_t i = 0; i < slow.size(); ++i) slow[i] = uniform(pick) <= v.slow_fraction;
  }
  std::mt19937_64 spread(stream_seed(v.seed, 2));
  for (std::size_t i = 0; i < persistent_.size(); ++i) {
    if (slow[i]) {
      persistent_[i] = v.slow_factor;
      ++stragglers_;
    }
    if (v.sigma > 0) persistent_[i] *= std::exp(v.sigma * normal(spread));
  }
  factors_.assign(g.devices.size(), 1.0);
  if (v.jitter == 0) fill(false);
}

// Each simulated device's factor: the largest of its real devices' (with this step's jitter).
void FactorSampler::fill(bool jitter) {
  std::size_t i = 0;
  for (std::size_t k = 0; k < g_.devices.size(); ++k) {
    double f = 1.0;
    for (int j = 0; j < g_.devices[k].count; ++j, ++i) {
      const double x = jitter ? persistent_[i] * std::exp(v_.jitter * normal(jitter_rng_)) : persistent_[i];
      f = j == 0 ? x : std::max(f, x);
    }
    factors_[k] = f;
  }
}

const std::vector<double>& FactorSampler::next_step() {
  if (v_.jitter != 0) fill(true);
  return factors_;
}

double percentile(const std::vector<double>& sorted, double p) {
  HETSIM_ASSERT(!sorted.empty() && p > 0 && p <= 100, "a percentile of some samples");
  const auto n = static_cast<double>(sorted.size());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

Result<StepDistribution> sample_steps(const schedule::TaskGraph& g, const VariabilitySpec& v, SimTime nominal,
                                      const RunControl& control) {
  StepDistribution d;
  d.seed = v.seed;
  d.nominal_s = static_cast<double>(nominal) * 1e-9;
  FactorSampler sampler(g, v);
  d.stragglers = sampler.stragglers();
  const RunControl inner{control.stop, {}};
  d.steps_s.reserve(static_cast<std::size_t>(v.steps));
  double sum = 0;
  for (int k = 0; k < v.steps; ++k) {
    if (control.stop.stop_requested()) return stopped_error();
    auto t = run_native(g, inner, sampler.next_step());
    if (!t) return t.errors();
    const double s = static_cast<double>(t->makespan) * 1e-9;
    d.steps_s.push_back(s);
    sum += s;
    if (control.progress) control.progress(static_cast<double>(k + 1) / v.steps);
  }
  std::vector<double> sorted = d.steps_s;
  std::sort(sorted.begin(), sorted.end());
  d.mean_s = sum / static_cast<double>(sorted.size());
  d.min_s = sorted.front();
  d.max_s = sorted.back();
  d.p50_s = percentile(sorted, 50);
  d.p90_s = percentile(sorted, 90);
  d.p99_s = percentile(sorted, 99);
  return d;
}

}  // namespace hetsim::engine
