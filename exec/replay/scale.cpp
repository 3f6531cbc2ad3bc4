#include "exec/replay/scale.hpp"

#include <algorithm>
#include <climits>
#include <numeric>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/native_engine.hpp"
#include "sim/schedule/schedule.hpp"

namespace hetsim::exec {
namespace {

// Whether every device's simulated peak fits its pool's capacity (a plan the engine cannot run
// does not).
bool fits(const Scenario& s, const plan::Plan& p, const std::vector<std::size_t>& capacity) {
  auto over = over_capacity(s, p, capacity);
  return over && !over->has_value();
}

// "4096 MiB per device", or per pool where they differ ("fast 4096 MiB, slow 1024 MiB").
std::string capacities(const Scenario& s, const std::vector<std::size_t>& capacity) {
  bool same = true;
  for (const auto c : capacity) same = same && c == capacity.front();
  if (same) return std::to_string(capacity.front() >> 20) + " MiB per device";
  std::string out;
  for (std::size_t k = 0; k < capacity.size() && k < s.cluster.pools.size(); ++k)
    out += (out.empty() ? "" : ", ") + s.cluster.pools[k].name + " " +
           (capacity[k] == 0 ? std::string("unlimited") : std::to_string(capacity[k] >> 20) + " MiB");
  return out + " per device";
}

}  // namespace

Result<std::optional<OverCapacity>> over_capacity(const Scenario& s, const plan::Plan& p,
                                                  const std::vector<std::size_t>& capacity) {
  const auto g = schedule::build_schedule(s, p);
  auto t = engine::run_native(g);
  if (!t) return t.errors();
  for (std::size_t d = 0; d < t->peak_bytes.size() && d < g.devices.size(); ++d) {
    const auto pool = static_cast<std::size_t>(g.devices[d].pool);
    const std::size_t cap = pool < capacity.size() ? capacity[pool] : 0;
    if (cap > 0 && t->peak_bytes[d] > static_cast<std::int64_t>(cap))
      return std::optional<OverCapacity>{OverCapacity{g.devices[d].label, pool, t->peak_bytes[d], cap}};
  }
  return std::optional<OverCapacity>{};
}

std::optional<Diagnostic> context_parallel_refusal(const plan::Plan& p) {
  if (p.cp <= 1) return std::nullopt;
  return Diagnostic{{}, "parallel.cp", "context parallelism (cp = " + std::to_string(p.cp) +
                                           ") is not replayed: the executor has no ring attention",
                    "estimate or simulate the plan, or replay it with cp = 1 (docs/executor.md, Limits)"};
}

Result<Scaled> scale_to_fit(const Scenario& s, const plan::Plan& p, int devices, std::size_t capacity) {
  return scale_to_fit(s, p, devices, std::vector<std::size_t>(std::max<std::size_t>(1, s.cluster.pools.size()), capacity));
}

Result<Scaled> scale_to_fit(const Scenario& s, const plan::Plan& p, int devices, const std::vector<std::size_t>& capacity) {
  Scaled out{s, p, {}};
  const bool limited = std::any_of(capacity.begin(), capacity.end(), [](std::size_t c) { return c > 0; });
  auto& groups = out.plan.groups;
  if (groups.empty()) return Diagnostic{{}, "plan", "the plan has no replica group", ""};
  if (auto no = context_parallel_refusal(p)) return *no;  // said before anything is cut
  const int ep = std::max(1, p.ep);  // replicas stay a multiple of the EP degree
  std::vector<int> per_replica;      // devices of one replica of each group (tensor × pipeline)
  int least = 0;                     // one replica (ep under expert parallelism) of every group
  for (const auto& g : groups) {
    int n = 0;
    for (const auto& st : g.stages) n += st.tp;
    per_replica.push_back(n);
    least += n * std::min(ep, g.replicas);
  }
  if (least > devices) {
    const std::string what = groups.size() == 1 ? "one replica needs " : "one replica of each of the " +
                                                                              std::to_string(groups.size()) +
                                                                              " replica groups needs ";
    return Diagnostic{{}, "plan", what + std::to_string(least) + " devices (tensor × pipeline parallel" +
                                      (ep > 1 ? ", × ep" : "") + ") but " + std::to_string(devices) +
                                      " are available",
                      "--fit only drops data-parallel replicas and layers; plan for fewer devices"};
  }
  // Data parallelism: as many replicas as the devices hold, each group cut in the same
  // proportion (at least one replica, or ep, each), then the largest groups one by one until the
  // plan fits; the global batch shrinks with them.
  auto used = [&] {
    int n = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) n += groups[g].replicas * per_replica[g];
    return n;
  };
  if (used() > devices) {
    const long total = used();
    std::string before;
    for (auto& g : groups) {
      before += (before.empty() ? "" : " + ") + std::to_string(g.replicas);
      const int floor = std::min(ep, g.replicas);
      g.replicas = std::max(floor, static_cast<int>(long{g.replicas} * devices / total) / ep * ep);
    }
    while (used() > devices) {
      std::size_t most = groups.size();
      for (std::size_t g = 0; g < groups.size(); ++g)
        if (groups[g].replicas > std::min(ep, p.groups[g].replicas) &&
            (most == groups.size() || groups[g].replicas * per_replica[g] >= groups[most].replicas * per_replica[most]))
          most = g;
      if (most == groups.size()) break;  // not reached: `least` fits
      groups[most].replicas -= ep;
    }
    std::string after;
    for (const auto& g : groups) after += (after.empty() ? "" : " + ") + std::to_string(g.replicas);
    const int batch = out.scenario.training.global_batch;
    out.scenario.training.global_batch = out.plan.sequences_per_step();
    out.notes.push_back("data-parallel replicas " + before + " → " + after + " (global batch " + std::to_string(batch) +
                        " → " + std::to_string(out.scenario.training.global_batch) + " sequences)");
  }
  if (!limited || fits(out.scenario, out.plan, capacity)) return out;
  // Memory: fewer layers in every stage (the same fraction, whole model chunks of the
  // interleaved schedule), halving until the busiest device fits. Every group holds the whole
  // (shortened) model, of the fewest layers a group came to (at least a chunk per stage of the
  // longest pipeline): a group with more gives up layers from its largest stages, one chunk at a
  // time, a group with fewer takes them on the stage that kept the smallest share.
  const int v = std::max(1, p.virtual_stages);
  const int layers_before = s.model.layers;
  for (double f = 0.5;; f /= 2) {
    std::vector<std::vector<int>> n(groups.size());
    int total = INT_MAX, floor = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (const auto& st : p.groups[g].stages)
        n[g].push_back(std::min(std::max(v, static_cast<int>(st.layers * f) / v * v), st.layers));
      total = std::min(total, std::accumulate(n[g].begin(), n[g].end(), 0));
      floor = std::max(floor, v * static_cast<int>(p.groups[g].stages.size()));
    }
    total = std::max(total, floor);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      auto& k = n[g];
      auto sum = [&] { return std::accumulate(k.begin(), k.end(), 0); };
      while (sum() > total) *std::max_element(k.begin(), k.end()) -= v;
      while (sum() < total) {  // fewer stages than the longest pipeline: the smallest share grows
        std::size_t low = 0;
        for (std::size_t i = 1; i < k.size(); ++i)
          if (static_cast<double>(k[i]) / p.groups[g].stages[i].layers <
              static_cast<double>(k[low]) / p.groups[g].stages[low].layers)
            low = i;
        k[low] += v;
      }
      int first = 0;
      for (std::size_t i = 0; i < k.size(); ++i) {
        groups[g].stages[i].first_layer = first;
        groups[g].stages[i].layers = k[i];
        first += k[i];
      }
    }
    out.scenario.model.layers = total;
    if (fits(out.scenario, out.plan, capacity)) break;
    if (total == floor)  // every stage of the longest pipeline is down to one chunk
      return Diagnostic{{}, "", "even " + std::to_string(v) + " layer(s) per stage do not fit in " +
                                    capacities(s, capacity),
                        "a device with more memory, or a plan with more tensor or pipeline parallelism"};
  }
  std::string per;
  for (const auto& g : groups) {
    std::string one;
    for (const auto& st : g.stages) one += (one.empty() ? "" : ", ") + std::to_string(st.layers);
    per += (per.empty() ? "" : "; ") + one;
  }
  out.notes.push_back("layers " + std::to_string(layers_before) + " → " + std::to_string(out.scenario.model.layers) +
                      " (per stage: " + per + ") to fit " + capacities(s, capacity));
  return out;
}

}  // namespace hetsim::exec
