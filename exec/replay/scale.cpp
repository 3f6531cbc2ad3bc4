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

// The highest simulated peak over the plan's devices (bytes).
std::int64_t peak_bytes(const Scenario& s, const plan::Plan& p) {
  const auto g = schedule::build_schedule(s, p);
  auto t = engine::run_native(g);
  if (!t) return INT64_MAX;
  return t->peak_bytes.empty() ? 0 : *std::max_element(t->peak_bytes.begin(), t->peak_bytes.end());
}

}  // namespace

std::optional<Diagnostic> context_parallel_refusal(const plan::Plan& p) {
  if (p.cp <= 1) return std::nullopt;
  return Diagnostic{{}, "parallel.cp", "context parallelism (cp = " + std::to_string(p.cp) +
                                           ") is not replayed: the executor has no ring attention",
                    "estimate or simulate the plan, or replay it with cp = 1 (docs/executor.md, Limits)"};
}

Result<Scaled> scale_to_fit(const Scenario& s, const plan::Plan& p, int devices, std::size_t capacity) {
  Scaled out{s, p, {}};
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
  if (capacity == 0 || peak_bytes(out.scenario, out.plan) <= static_cast<std::int64_t>(capacity)) return out;
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
    if (peak_bytes(out.scenario, out.plan) <= static_cast<std::int64_t>(capacity)) break;
    if (total == floor)  // every stage of the longest pipeline is down to one chunk
      return Diagnostic{{}, "", "even " + std::to_string(v) + " layer(s) per stage do not fit in " +
                                    std::to_string(capacity) + " bytes per device",
                        "a device with more memory, or a plan with more tensor or pipeline parallelism"};
  }
  std::string per;
  for (const auto& g : groups) {
    std::string one;
    for (const auto& st : g.stages) one += (one.empty() ? "" : ", ") + std::to_string(st.layers);
    per += (per.empty() ? "" : "; ") + one;
  }
  out.notes.push_back("layers " + std::to_string(layers_before) + " → " + std::to_string(out.scenario.model.layers) +
                      " (per stage: " + per + ") to fit " + std::to_string(capacity >> 20) + " MiB per device");
  return out;
}

}  // namespace hetsim::exec
