#include "exec/replay/scale.hpp"

#include <algorithm>
#include <cstdint>

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

Result<Scaled> scale_to_fit(const Scenario& s, const plan::Plan& p, int devices, std::size_t capacity) {
  Scaled out{s, p, {}};
  if (p.groups.size() != 1)
    return Diagnostic{{}, "plan", "--fit scales plans with one replica group only (this one has " +
                                      std::to_string(p.groups.size()) + ")",
                      "run the plan itself with as many devices as it needs (mpirun, or --devices); see docs/executor.md, Limits"};
  auto& grp = out.plan.groups[0];
  int per_replica = 0;
  for (const auto& st : grp.stages) per_replica += st.tp;
  if (per_replica > devices)
    return Diagnostic{{}, "plan", "one replica needs " + std::to_string(per_replica) + " devices (tensor × pipeline "
                                  "parallel) but " + std::to_string(devices) + " are available",
                      "--fit only drops data-parallel replicas and layers; plan for fewer devices"};
  // Data parallelism: as many replicas as the devices hold; the global batch shrinks with them.
  if (grp.replicas * per_replica > devices) {
    const int before = grp.replicas, batch = out.scenario.training.global_batch;
    grp.replicas = devices / per_replica;
    out.scenario.training.global_batch = out.plan.sequences_per_step();
    out.notes.push_back("data-parallel replicas " + std::to_string(before) + " → " + std::to_string(grp.replicas) +
                        " (global batch " + std::to_string(batch) + " → " +
                        std::to_string(out.scenario.training.global_batch) + " sequences)");
  }
  if (capacity == 0 || peak_bytes(out.scenario, out.plan) <= static_cast<std::int64_t>(capacity)) return out;
  // Memory: fewer layers in every stage (the same fraction, whole model chunks of the
  // interleaved schedule), halving until the busiest device fits.
  const int v = std::max(1, p.virtual_stages);
  const int layers_before = s.model.layers;
  for (double f = 0.5;; f /= 2) {
    int first = 0;
    bool smallest = true;
    for (std::size_t i = 0; i < grp.stages.size(); ++i) {
      const int planned = p.groups[0].stages[i].layers;
      const int n = std::max(v, static_cast<int>(planned * f) / v * v);
      smallest = smallest && n == std::min(v, planned);
      grp.stages[i].first_layer = first;
      grp.stages[i].layers = std::min(n, planned);
      first += grp.stages[i].layers;
    }
    out.scenario.model.layers = first;
    if (peak_bytes(out.scenario, out.plan) <= static_cast<std::int64_t>(capacity)) break;
    if (smallest)
      return Diagnostic{{}, "", "even " + std::to_string(v) + " layer(s) per stage do not fit in " +
                                    std::to_string(capacity) + " bytes per device",
                        "a device with more memory, or a plan with more tensor or pipeline parallelism"};
  }
  std::string per;
  for (const auto& st : grp.stages) per += (per.empty() ? "" : ", ") + std::to_string(st.layers);
  out.notes.push_back("layers " + std::to_string(layers_before) + " → " + std::to_string(out.scenario.model.layers) +
                      " (per stage: " + per + ") to fit " + std::to_string(capacity >> 20) + " MiB per device");
  return out;
}

}  // namespace hetsim::exec
