#include "exec/replay/routing.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "models/base/assert.hpp"
#include "models/base/splitmix.hpp"

namespace hetsim::exec {
namespace {

// One SplitMix64 step: spreads the routing's coordinates over the generator's seed.
std::uint64_t mix(std::uint64_t x) { return splitmix_finalise(x + kSplitmixGamma); }

// A uniform double in [0, 1) from the generator's top 53 bits (not a std:: distribution, whose
// algorithm differs between standard libraries).
double uniform(std::mt19937_64& gen) { return static_cast<double>(gen() >> 11) * 0x1.0p-53; }

}  // namespace

std::int64_t LayerRouting::expert_rows(int x) const {
  std::int64_t n = 0;
  for (const auto& src : rows) n += src[static_cast<std::size_t>(x)];
  return n;
}

LayerRouting route_layer(const workload::ModelSpec& m, int ep, std::int64_t tokens, std::uint64_t seed, int layer,
                         int micro_batch, int group) {
  HETSIM_ASSERT(m.moe() && ep >= 1 && m.experts % ep == 0 && m.top_k >= 1 && m.top_k <= m.experts,
                "route_layer: a MoE model, ep dividing the experts, top_k ≤ experts");
  const auto E = static_cast<std::size_t>(m.experts);
  // The cumulative load over the experts.
  std::vector<double> cdf(E);
  double sum = 0;
  for (std::size_t x = 0; x < E; ++x) {
    sum += m.expert_load.size() == E ? std::max(0.0, m.expert_load[x]) : 1.0;
    cdf[x] = sum;
  }
  std::mt19937_64 gen(mix(mix(mix(mix(seed) ^ static_cast<std::uint64_t>(layer)) ^ static_cast<std::uint64_t>(micro_batch)) ^
                          static_cast<std::uint64_t>(group)));
  // Tokens per (source, expert): each token's top_k distinct experts, drawn by load (a repeat is
  // drawn again; after 64 repeats the first unused expert is taken, so skewed loads end too).
  std::vector<std::vector<std::int64_t>> picked(static_cast<std::size_t>(ep), std::vector<std::int64_t>(E, 0));
  std::vector<int> mine;
  for (auto& src : picked)
    for (std::int64_t t = 0; t < tokens; ++t) {
      mine.clear();
      for (int k = 0; k < m.top_k; ++k) {
        int x = -1;
        for (int tries = 0; tries < 64 && x < 0; ++tries) {
          const double u = uniform(gen) * sum;
          const int y = static_cast<int>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
          const int z = std::min(y, m.experts - 1);
          if (std::find(mine.begin(), mine.end(), z) == mine.end()) x = z;
        }
        for (int z = 0; x < 0; ++z)
          if (std::find(mine.begin(), mine.end(), z) == mine.end()) x = z;
        mine.push_back(x);
        ++src[static_cast<std::size_t>(x)];
      }
    }
  // What each expert's buffer holds per source: its tokens (dropless; at least the capacity when
  // one is set), or exactly the capacity (dropping: the rest dropped, the buffer padded).
  const double mean = static_cast<double>(tokens) * m.top_k / m.experts;
  const auto capacity = static_cast<std::int64_t>(std::ceil((m.capacity_factor > 0 ? m.capacity_factor : 1.0) * mean - 1e-9));
  LayerRouting r;
  r.rows = picked;
  for (auto& src : r.rows)
    for (auto& n : src) n = m.dropless ? (m.capacity_factor > 0 ? std::max(n, capacity) : n) : capacity;
  const std::size_t local = E / static_cast<std::size_t>(ep);
  for (const auto& src : r.rows)
    for (std::size_t dst = 0; dst < static_cast<std::size_t>(ep); ++dst) {
      std::int64_t n = 0;
      for (std::size_t x = dst * local; x < (dst + 1) * local; ++x) n += src[x];
      r.max_pair_rows = std::max(r.max_pair_rows, n);
    }
  return r;
}

}  // namespace hetsim::exec
