#pragma once
// Stragglers and jitter (docs/simulation.md#variability): per-device compute factors drawn from
// a VariabilitySpec, and the distribution of the step over sampled steps, each a run of the
// native engine with its factors. Deterministic: the same graph, spec and seed give the same
// factors and steps, bit for bit (own normal draws from std::mt19937_64, no std:: distribution).

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "models/base/result.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/scenario/variability.hpp"

namespace hetsim::engine {

/// Draws the compute factors of a folded graph's devices. A simulated device stands for
/// `count` real ones (its TP ranks times its group's replicas; member j is TP rank j mod tp of
/// replica j / tp). next_step() gives each simulated device the largest factor of its real
/// devices: exact for TP ranks (they meet at every layer), an upper bound across replicas whose
/// stragglers sit on different stages. runs() gives, for the same draw, the factor vectors of
/// one run per distinct replica (docs/simulation.md#variability): its group's devices at that
/// replica's factors (a replica being an expert-parallel group of `ep` replicas, which meet at
/// every MoE layer), every other group at its smallest factor per stage; dominated vectors are
/// left out, and beyond kMaxRuns the folded vector alone is run.
class FactorSampler {
 public:
  static constexpr std::size_t kMaxRuns = 32;

  /// More slow_devices than the graph's real devices makes every one of them a straggler.
  FactorSampler(const schedule::TaskGraph& g, const VariabilitySpec& v);

  /// The next sampled step's factors, one per device of the graph (the largest of each
  /// device's real ones).
  [[nodiscard]] const std::vector<double>& next_step();

  /// The runs of the step next_step() last drew (see above); the folded vector alone when
  /// there are more than kMaxRuns or when the graph's replicas meet before their data-parallel
  /// sync (a parameter gather or gradient reduction that a compute task waits for: ZeRO 3).
  [[nodiscard]] const std::vector<std::vector<double>>& runs() const { return runs_; }

  /// Real devices drawn as stragglers (fixed for the seed).
  [[nodiscard]] int stragglers() const { return stragglers_; }

 private:
  void fill(bool jitter);
  void make_runs(const std::vector<double>& real);

  const schedule::TaskGraph& g_;
  VariabilitySpec v_;
  std::vector<double> persistent_;  ///< per real device, in device order then member order
  std::vector<double> factors_;     ///< per simulated device
  std::vector<std::vector<double>> runs_;
  struct Member {
    std::uint32_t device;  ///< simulated device, one per stage of its group
    std::size_t first;     ///< its first real device in persistent_'s order
  };
  std::map<int, std::vector<Member>> groups_;  ///< replica group → its devices
  bool coupled_ = false;            ///< replicas meet before their DP sync: fold them
  std::mt19937_64 jitter_rng_;
  int stragglers_ = 0;
};

/// Real devices a folded graph stands for (Σ DeviceRep::count).
[[nodiscard]] std::int64_t real_devices(const schedule::TaskGraph& g);

/// The step over sampled steps: each step the longest of its runs (FactorSampler::runs), or,
/// where the runs' data-parallel syncs differ, the latest sync plus the longest time any run
/// took after its own (its optimizer): every replica waits for the slowest at the sync.
struct StepDistribution {
  std::uint64_t seed = 0;
  int stragglers = 0;                ///< real devices drawn slow
  double nominal_s = 0;              ///< every factor 1
  double mean_s = 0, min_s = 0, max_s = 0;
  double p50_s = 0, p90_s = 0, p99_s = 0;
  std::vector<double> steps_s;       ///< in the order sampled
};

/// The nearest-rank percentile (0 < p ≤ 100) of `sorted` (ascending, not empty):
/// sorted[⌈p/100 · n⌉ − 1].
[[nodiscard]] double percentile(const std::vector<double>& sorted, double p);

/// A replica group of a closed-form step (analytic::Estimate; docs/cost-models.md#pipeline) as
/// sample_closed_form draws it: `replicas` pipelines of the same stages, each running
/// `micro_batches` micro-batches through them.
struct ClosedFormGroup {
  struct Stage {
    int tp = 1;             ///< devices of the stage in one replica
    Duration per_micro_batch;  ///< everything a micro-batch takes on the stage (c_i)
    Duration compute;       ///< its forward, backward and recompute: what a factor scales
    Duration optimizer;     ///< the stage's optimizer step, scaled too
  };
  int replicas = 1, micro_batches = 1, virtual_stages = 1, pipeline_runs = 1;
  std::vector<Stage> stages;
};

/// Samples v.steps steps of a closed-form estimate whose step is `nominal_s`, with each real
/// device's factors drawn as FactorSampler draws them (the plan's devices in group, replica,
/// stage, TP-rank order: the same distributions, not the same draws as a simulation's). A
/// stage of a replica takes the largest factor of its TP ranks; each replica's pipeline is
/// m·max c + (Σc − max c)/v over its stages' c = per_micro_batch + (factor − 1)·compute; the step
/// moves by how much the slowest pipeline, and the slowest optimizer, moved. Every factor 1
/// gives `nominal_s` exactly. Requires: groups as the estimate has them (not empty).
[[nodiscard]] StepDistribution sample_closed_form(const std::vector<ClosedFormGroup>& groups, double nominal_s,
                                                  const VariabilitySpec& v);

/// Runs v.steps steps of `g`, each with its factors. `nominal` is g's makespan with every
/// factor 1. `control.progress` gets the fraction of steps done; `control.stop` ends it with
/// stopped_error(). Fails only as run_native does.
[[nodiscard]] Result<StepDistribution> sample_steps(const schedule::TaskGraph& g, const VariabilitySpec& v,
                                                    SimTime nominal, const RunControl& control = {});

}  // namespace hetsim::engine
