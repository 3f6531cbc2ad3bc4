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
                         int micro_batch, int group, int nodes) {
  HETSIM_ASSERT(m.moe() && ep >= 1 && m.experts % ep == 0 && m.top_k >= 1 && m.top_k <= m.experts && nodes >= 1 &&
                    ep % nodes == 0,
                "route_layer: a MoE model, ep dividing the experts, top_k ≤ experts, nodes dividing ep");
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
  // Group-limited routing: the groups' summed loads, cumulative.
  const int G = m.expert_groups > 0 && m.expert_group_topk > 0 ? m.expert_groups : 0;
  const std::size_t per_group = G > 0 ? E / static_cast<std::size_t>(G) : E;
  std::vector<double> gcdf(static_cast<std::size_t>(G));
  for (std::size_t q = 0; q < gcdf.size(); ++q) gcdf[q] = cdf[(q + 1) * per_group - 1];
  // One draw from a cumulative table of `n` entries, avoiding those `taken` says (a repeat is
  // drawn again; after 64 repeats the first allowed entry is taken, so skewed loads end too).
  std::vector<int> mine, groups;
  auto draw = [&](const std::vector<double>& c, int n, const auto& taken) {
    int x = -1;
    for (int tries = 0; tries < 64 && x < 0; ++tries) {
      const double u = uniform(gen) * c.back();
      const int z = std::min(static_cast<int>(std::upper_bound(c.begin(), c.end(), u) - c.begin()), n - 1);
      if (!taken(z)) x = z;
    }
    for (int z = 0; x < 0 && z < n; ++z)
      if (!taken(z)) x = z;
    return x;
  };
  auto in_groups = [&](int x) {
    return G == 0 || std::find(groups.begin(), groups.end(), x / static_cast<int>(per_group)) != groups.end();
  };
  // Tokens per (source, expert): each token's top_k distinct experts, drawn by load; and, for
  // the hierarchical dispatch, per (source, node) the tokens with an expert there.
  const int per_node_ranks = ep / nodes;
  const std::size_t experts_per_node = E / static_cast<std::size_t>(nodes);
  std::vector<std::vector<std::int64_t>> picked(static_cast<std::size_t>(ep), std::vector<std::int64_t>(E, 0));
  std::vector<std::vector<std::int64_t>> to_node(static_cast<std::size_t>(ep),
                                                 std::vector<std::int64_t>(static_cast<std::size_t>(nodes), 0));
  std::vector<char> hit(static_cast<std::size_t>(nodes));
  const std::size_t local = E / static_cast<std::size_t>(ep);
  // to_rank[src][dst]: src's tokens with at least one expert on EP rank dst.
  std::vector<std::vector<std::int64_t>> to_rank(static_cast<std::size_t>(ep),
                                                 std::vector<std::int64_t>(static_cast<std::size_t>(ep), 0));
  std::vector<char> rank_hit(static_cast<std::size_t>(ep));
  for (std::size_t s = 0; s < picked.size(); ++s)
    for (std::int64_t t = 0; t < tokens; ++t) {
      mine.clear();
      groups.clear();
      for (int q = 0; q < std::min(G, m.expert_group_topk); ++q)
        groups.push_back(draw(gcdf, G, [&](int z) { return std::find(groups.begin(), groups.end(), z) != groups.end(); }));
      std::fill(hit.begin(), hit.end(), 0);
      std::fill(rank_hit.begin(), rank_hit.end(), 0);
      for (int k = 0; k < m.top_k; ++k) {
        const int x = draw(cdf, m.experts, [&](int z) {
          return !in_groups(z) || std::find(mine.begin(), mine.end(), z) != mine.end();
        });
        mine.push_back(x);
        ++picked[s][static_cast<std::size_t>(x)];
        hit[static_cast<std::size_t>(x) / experts_per_node] = 1;
        rank_hit[static_cast<std::size_t>(x) / local] = 1;
      }
      for (std::size_t b = 0; b < hit.size(); ++b) to_node[s][b] += hit[b];
      for (std::size_t q = 0; q < rank_hit.size(); ++q) to_rank[s][q] += rank_hit[q];
    }
  // What each expert's buffer holds per source: its tokens (dropless; at least the capacity when
  // one is set), or exactly the capacity (dropping: the rest dropped, the buffer padded).
  const double mean = static_cast<double>(tokens) * m.top_k / m.experts;
  const auto capacity = static_cast<std::int64_t>(std::ceil((m.capacity_factor > 0 ? m.capacity_factor : 1.0) * mean - 1e-9));
  LayerRouting r;
  r.rows = picked;
  for (auto& src : r.rows)
    for (auto& n : src) n = m.dropless ? (m.capacity_factor > 0 ? std::max(n, capacity) : n) : capacity;
  // pair[src][dst]: the rows src's tokens send EP rank dst.
  std::vector<std::vector<std::int64_t>> pair(static_cast<std::size_t>(ep), std::vector<std::int64_t>(static_cast<std::size_t>(ep), 0));
  for (std::size_t src = 0; src < r.rows.size(); ++src)
    for (std::size_t dst = 0; dst < static_cast<std::size_t>(ep); ++dst) {
      std::int64_t n = 0;
      for (std::size_t x = dst * local; x < (dst + 1) * local; ++x) n += r.rows[src][x];
      pair[src][dst] = n;
      r.max_pair_rows = std::max(r.max_pair_rows, n);
      r.max_rank_rows = std::max(r.max_rank_rows, to_rank[src][dst]);
    }
  if (nodes > 1) {
    const auto k = static_cast<std::size_t>(per_node_ranks);
    for (std::size_t src = 0; src < to_node.size(); ++src)
      for (std::size_t b = 0; b < to_node[src].size(); ++b)
        if (b != src / k) r.max_rail_rows = std::max(r.max_rail_rows, to_node[src][b]);
    // Rank (b, i) forwards to rank (b, j ≠ i) each token of every source at local index i with
    // an expert on j, once.
    for (std::size_t b = 0; b < static_cast<std::size_t>(nodes); ++b)
      for (std::size_t i = 0; i < k; ++i)
        for (std::size_t j = 0; j < k; ++j) {
          if (i == j) continue;
          std::int64_t n = 0;
          for (std::size_t a = 0; a < static_cast<std::size_t>(nodes); ++a) n += to_rank[a * k + i][b * k + j];
          r.max_fanout_rows = std::max(r.max_fanout_rows, n);
        }
  }
  return r;
}

}  // namespace hetsim::exec
