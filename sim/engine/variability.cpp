#include "sim/engine/variability.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <numeric>

#include "models/base/assert.hpp"
#include "models/base/splitmix.hpp"

namespace hetsim::engine {
namespace {

// One seed per purpose (stragglers, per-device spread, jitter), so that changing one spread
// leaves the others' draws as they were. SplitMix64's finaliser.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t purpose) {
  return splitmix_finalise(seed + purpose * kSplitmixGamma);
}

// Uniform in (0, 1]: the top 53 bits, plus one.
double uniform(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53; }

// Standard normal (Box–Muller, one draw per two uniforms).
double normal(std::mt19937_64& rng) {
  const double u1 = uniform(rng);
  const double u2 = uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Each real device's persistent factor: slow_factor for a straggler (else 1), times
// exp(sigma · z); `stragglers` counts the slow ones.
std::vector<double> persistent_factors(std::int64_t n, const VariabilitySpec& v, int& stragglers) {
  const auto slow_devices = std::clamp<std::int64_t>(v.slow_devices, 0, n);
  std::vector<double> persistent(static_cast<std::size_t>(n), 1.0);
  std::vector<bool> slow(static_cast<std::size_t>(n), false);
  std::mt19937_64 pick(stream_seed(v.seed, 1));
  if (slow_devices > 0) {
    // Floyd's sampling: exactly slow_devices distinct devices, each set equally likely.
    for (std::int64_t j = n - slow_devices; j < n; ++j) {
      // Modulo bias: below n / 2⁶⁴.
      const auto k = static_cast<std::size_t>(pick() % static_cast<std::uint64_t>(j + 1));
      slow[slow[k] ? static_cast<std::size_t>(j) : k] = true;
    }
  } else if (v.slow_fraction > 0) {
    for (std::size_t i = 0; i < slow.size(); ++i) slow[i] = uniform(pick) <= v.slow_fraction;
  }
  std::mt19937_64 spread(stream_seed(v.seed, 2));
  stragglers = 0;
  for (std::size_t i = 0; i < persistent.size(); ++i) {
    if (slow[i]) {
      persistent[i] = v.slow_factor;
      ++stragglers;
    }
    if (v.sigma > 0) persistent[i] *= std::exp(v.sigma * normal(spread));
  }
  return persistent;
}

// Mean, extremes and percentiles of d.steps_s.
void summarise(StepDistribution& d) {
  std::vector<double> sorted = d.steps_s;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double s : d.steps_s) sum += s;
  d.mean_s = sum / static_cast<double>(sorted.size());
  d.min_s = sorted.front();
  d.max_s = sorted.back();
  d.p50_s = percentile(sorted, 50);
  d.p90_s = percentile(sorted, 90);
  d.p99_s = percentile(sorted, 99);
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
  persistent_ = persistent_factors(n, v_, stragglers_);
  factors_.assign(g.devices.size(), 1.0);
  // Replicas that meet between their compute tasks (a data-parallel collective that follows
  // compute and that compute waits for: ZeRO 3's gathers inside the step) cannot be run apart:
  // they stay folded. The gathers a step starts with follow no compute and time alike in
  // every replica. Marked: DP collectives reachable from a compute task through DP collectives.
  using schedule::TaskKind;
  auto is_dp = [&](std::uint32_t t) {
    return g.tasks[t].kind == TaskKind::ParamGather || g.tasks[t].kind == TaskKind::GradReduce;
  };
  auto is_compute = [&](std::uint32_t t) {
    const auto k = g.tasks[t].kind;
    return k == TaskKind::Forward || k == TaskKind::Backward || k == TaskKind::Recompute;
  };
  std::vector<char> after_compute(g.size(), 0);
  std::vector<std::uint32_t> todo;
  for (std::uint32_t t = 0; t < g.size(); ++t)
    if (is_compute(t))
      for (std::uint32_t e = g.succ_begin[t]; e < g.succ_begin[t + 1]; ++e)
        if (is_dp(g.succ[e]) && !after_compute[g.succ[e]]) {
          after_compute[g.succ[e]] = 1;
          todo.push_back(g.succ[e]);
        }
  while (!todo.empty() && !coupled_) {
    const std::uint32_t t = todo.back();
    todo.pop_back();
    for (std::uint32_t e = g.succ_begin[t]; e < g.succ_begin[t + 1]; ++e) {
      const std::uint32_t next = g.succ[e];
      coupled_ = coupled_ || is_compute(next);
      if (is_dp(next) && !after_compute[next]) {
        after_compute[next] = 1;
        todo.push_back(next);
      }
    }
  }
  // Each group's simulated devices (one per stage) and where their real devices start.
  std::size_t first = 0;
  for (std::uint32_t k = 0; k < g.devices.size(); ++k) {
    groups_[g.devices[k].group].push_back({k, first});
    first += static_cast<std::size_t>(g.devices[k].count);
  }
  if (v.jitter == 0) fill(false);
}

// One run per distinct replica's factor vector (per group: a replica's stage factors, the
// largest of its TP ranks'; an EP group of replicas counts as one), dominated ones left out;
// the other groups at their smallest factor per stage. A replica's step in such a run is its
// real one up to its data-parallel sync (replicas meet nowhere else), so the longest run is the
// step (sample_steps adds the sync's wait).
void FactorSampler::make_runs(const std::vector<double>& real) {
  runs_.clear();
  if (coupled_) {
    runs_.push_back(factors_);
    return;
  }
  // Per group: the stage-factor vector of each replica unit, deduplicated, undominated.
  std::map<int, std::vector<std::vector<double>>> cands;
  std::map<int, std::vector<double>> least;
  std::size_t total = 0;
  for (const auto& [gid, devs] : groups_) {
    const auto& d0 = g_.devices[devs.front().device];
    // The replicas an EP group couples: at every stage, the EP groups (blocks of ep · expert_tp
    // devices) and the replicas (tp devices) tile the stage in runs of lcm(ep · expert_tp, tp)
    // devices; the largest run over the stages, in replicas; and whole blocks of the cp replicas
    // that share a sequence (context parallelism).
    int unit = 1;
    for (const auto& sd : devs) {
      const auto& d = g_.devices[sd.device];
      const int tp = std::max(1, d.tp), block = std::max(1, d.ep) * d.expert_tp_or_tp();
      unit = std::max(unit, std::lcm(block, tp) / tp);
      unit = std::lcm(unit, std::max(1, d.cp));  // a sequence's cp replicas wait for one another
    }
    const int units = std::max(1, d0.replicas / unit);
    std::vector<std::vector<double>> vecs(static_cast<std::size_t>(units), std::vector<double>(devs.size(), 0.0));
    for (std::size_t s = 0; s < devs.size(); ++s) {
      const auto& d = g_.devices[devs[s].device];
      for (int j = 0; j < d.count; ++j) {
        const auto u = static_cast<std::size_t>(std::min(units - 1, (j / d.tp) / unit));
        vecs[u][s] = std::max(vecs[u][s], real[devs[s].first + static_cast<std::size_t>(j)]);
      }
    }
    std::sort(vecs.begin(), vecs.end());
    vecs.erase(std::unique(vecs.begin(), vecs.end()), vecs.end());
    auto& keep = cands[gid];
    for (const auto& a : vecs) {
      bool dominated = false;
      for (const auto& b : vecs) {
        if (&a == &b) continue;
        bool le = true;  // a ≤ b everywhere; b ≠ a, the vectors being distinct
        for (std::size_t s = 0; s < a.size() && le; ++s) le = a[s] <= b[s];
        dominated = dominated || le;
      }
      if (!dominated) keep.push_back(a);
    }
    auto& lo = least[gid];
    lo = vecs.front();
    for (const auto& a : vecs)
      for (std::size_t s = 0; s < a.size(); ++s) lo[s] = std::min(lo[s], a[s]);
    total += keep.size();
  }
  if (total > kMaxRuns) {
    runs_.push_back(factors_);
    return;
  }
  for (const auto& [gid, keep] : cands)
    for (const auto& vec : keep) {
      std::vector<double> f(g_.devices.size(), 1.0);
      for (const auto& [other, devs] : groups_)
        for (std::size_t s = 0; s < devs.size(); ++s) f[devs[s].device] = other == gid ? vec[s] : least[other][s];
      if (std::find(runs_.begin(), runs_.end(), f) == runs_.end()) runs_.push_back(std::move(f));
    }
}

// Each simulated device's factor: the largest of its real devices' (with this step's jitter);
// then the step's runs.
void FactorSampler::fill(bool jitter) {
  std::size_t i = 0;
  std::vector<double> real(persistent_.size());
  for (std::size_t k = 0; k < g_.devices.size(); ++k) {
    double f = 1.0;
    for (int j = 0; j < g_.devices[k].count; ++j, ++i) {
      const double x = jitter ? persistent_[i] * std::exp(v_.jitter * normal(jitter_rng_)) : persistent_[i];
      real[i] = x;
      f = j == 0 ? x : std::max(f, x);
    }
    factors_[k] = f;
  }
  make_runs(real);
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
  for (int k = 0; k < v.steps; ++k) {
    if (control.stop.stop_requested()) return stopped_error();
    (void)sampler.next_step();
    // The longest run; where the runs reach their data-parallel sync at different times, every
    // replica waits for the latest, then runs what it runs after it (its optimizer).
    SimTime longest = 0, sync = 0, after = 0;
    for (const auto& f : sampler.runs()) {
      auto t = run_native(g, inner, f);
      if (!t) return t.errors();
      SimTime reduced = 0;
      for (std::uint32_t i = 0; i < g.size(); ++i)
        if (g.tasks[i].kind == schedule::TaskKind::GradReduce) reduced = std::max(reduced, t->end[i]);
      longest = std::max(longest, t->makespan);
      sync = std::max(sync, reduced);
      after = std::max(after, t->makespan - reduced);
    }
    const double s = static_cast<double>(sampler.runs().size() > 1 ? std::max(longest, sync + after) : longest) * 1e-9;
    d.steps_s.push_back(s);
    if (control.progress) control.progress(static_cast<double>(k + 1) / v.steps);
  }
  summarise(d);
  return d;
}

StepDistribution sample_closed_form(const std::vector<ClosedFormGroup>& groups, double nominal_s,
                                    const VariabilitySpec& v) {
  HETSIM_ASSERT(!groups.empty(), "a closed-form step has a replica group");
  // A pipeline's time from its stages' per-micro-batch times, as analytic::estimate has it.
  auto pipeline = [](const ClosedFormGroup& g, const std::vector<Duration>& c) {
    Duration cmax{0}, csum{0};
    for (const Duration x : c) {
      csum += x;
      if (x > cmax) cmax = x;
    }
    return cmax * static_cast<double>(g.micro_batches) + (csum - cmax) * g.pipeline_runs / g.virtual_stages;
  };
  Duration pipe0{0}, opt0{0};
  std::int64_t n = 0;
  for (const auto& g : groups) {
    std::vector<Duration> c;
    for (const auto& st : g.stages) {
      c.push_back(st.per_micro_batch);
      opt0 = max(opt0, st.optimizer);
      n += static_cast<std::int64_t>(g.replicas) * st.tp;
    }
    pipe0 = max(pipe0, pipeline(g, c));
  }
  StepDistribution d;
  d.seed = v.seed;
  d.nominal_s = nominal_s;
  const std::vector<double> persistent = persistent_factors(n, v, d.stragglers);
  std::mt19937_64 jitter(stream_seed(v.seed, 3));
  d.steps_s.reserve(static_cast<std::size_t>(v.steps));
  std::vector<Duration> c;
  for (int k = 0; k < v.steps; ++k) {
    if (k > 0 && v.jitter == 0) {  // no per-step draw: every step is the first
      d.steps_s.push_back(d.steps_s.front());
      continue;
    }
    Duration pipe{0}, opt{0};
    std::size_t i = 0;  // the real device, in group, replica, stage, TP-rank order
    for (const auto& g : groups)
      for (int r = 0; r < g.replicas; ++r) {
        c.clear();
        for (const auto& st : g.stages) {
          double f = 0;
          for (int t = 0; t < st.tp; ++t, ++i) {
            const double x = v.jitter != 0 ? persistent[i] * std::exp(v.jitter * normal(jitter)) : persistent[i];
            f = t == 0 ? x : std::max(f, x);
          }
          c.push_back(st.per_micro_batch + st.compute * (f - 1.0));
          opt = max(opt, st.optimizer * f);
        }
        pipe = max(pipe, pipeline(g, c));
      }
    // Every factor 1: the nominal step itself, bit for bit (the differences are exactly 0).
    d.steps_s.push_back(nominal_s + ((pipe - pipe0) + (opt - opt0)).v);
  }
  summarise(d);
  return d;
}

}  // namespace hetsim::engine
