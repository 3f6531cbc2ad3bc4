#pragma once
// The planner: searches plans for a scenario's cluster (replica and stage structure over the
// pools, TP per stage, pipeline depth, uneven layer partition, uneven batch split across
// heterogeneous replicas, micro-batch size, recompute), ranks them with the closed-form
// estimate, verifies the best with the native engine, and reports the baselines a user would
// otherwise get. Method: docs/planner.md.

#include <cstddef>
#include <functional>
#include <stop_token>
#include <optional>
#include <string>
#include <vector>

#include "sim/analytic/estimate.hpp"

namespace hetsim::planner {

enum class Objective { Time, Cost };

struct Options {
  Objective objective = Objective::Time;
  int top = 5;      ///< plans to report
  int verify = 10;  ///< best candidates re-ranked by the engine
  /// Only combine pools whose devices share a vendor (one NCCL/RCCL-style communicator): plans
  /// never pipeline or synchronise gradients between vendors. The default: NCCL and RCCL do not
  /// form one communicator, so a cross-vendor plan (false) needs a transport no standard stack has.
  bool same_vendor = true;
  /// Heterogeneous candidates held before the list is compacted to the best of each kind (the
  /// ones verification can reach); the result does not depend on it, memory does. Tests lower it.
  std::size_t compact_at = 4096;
  /// Skip mixed-pipeline shapes whose lower bound on the step (compute and TP time of their
  /// layers, balanced at best, plus the pipeline's fill) is already above every plan of their kind
  /// that verification can reach (Objective::Time only). The result does not depend on it, the
  /// time does (a 4-pool cluster: 244 k plans estimated without, 19 k with). Tests turn it off.
  bool prune = true;
  /// Called with the fraction done (0..1) as the search goes; may be empty.
  std::function<void(double)> progress;
  /// Asked to stop, the search ends after its current phase with the best plans found so far
  /// (Result::stopped); the GUI drops a search whose inputs changed, Ctrl-C ends one.
  std::stop_token stop;
  /// Verification by the engine is bounded: a candidate whose step has more tasks than this
  /// (schedule::estimated_tasks), or that would take the search past `verify_task_budget` tasks
  /// in all, keeps its closed-form estimate (Result::unverified counts them). The engine runs
  /// some 10⁶–10⁷ tasks a second, so these bound the verification to a few seconds.
  double max_verify_tasks = 2e6;
  double verify_task_budget = 10e6;
  /// With [variability]: each verified candidate's steps are sampled (VariabilitySpec::steps
  /// runs of the engine) and it is ranked by this percentile of them (1–100); 0 ranks by the
  /// nominal step; -1 takes the scenario's variability.rank_by. Sampling stops at
  /// `sample_task_budget` tasks in all: the candidates beyond it keep their nominal step
  /// (Result::unsampled counts them).
  int rank_percentile = -1;
  double sample_task_budget = 200e6;
};

struct Candidate {
  plan::Plan plan;
  std::string family;  ///< "single pool", "pool-local replicas", "mixed pipeline", "uniform"
  analytic::Estimate estimate;
  double simulated_step_s = 0;  ///< 0 until verified by the engine
  /// The percentile ranked by (Options::rank_percentile) of the sampled steps; 0 = not sampled.
  double ranked_step_s = 0;
  std::size_t order = 0;        ///< when the search estimated it: the last tie-break of the ranking
  [[nodiscard]] bool verified() const { return simulated_step_s > 0; }
  /// Step time (the sampled percentile when there is one, else simulated when verified, else
  /// estimated) for Objective::Time; $ per million tokens at that step for Cost.
  [[nodiscard]] double score(Objective o) const;
  [[nodiscard]] double step_s() const { return verified() ? simulated_step_s : estimate.step_time.v; }
};

struct Baseline {
  std::string name;  ///< "uniform Megatron over all devices", "h100 alone", …
  std::optional<Candidate> best;  ///< empty when no plan of that kind fits
};

struct Result {
  std::vector<Candidate> top;  ///< best first; top[0] is the answer
  std::vector<Baseline> baselines;
  std::size_t evaluated = 0;   ///< plans estimated
  std::size_t pruned = 0;      ///< plan shapes skipped unestimated by their lower bound (Options::prune)
  std::size_t simulated = 0;   ///< plans verified by the engine
  std::size_t unverified = 0;  ///< candidates too large to verify, ranked by their estimate
  int rank_percentile = 0;     ///< the percentile ranked by (0: the nominal step)
  std::size_t sampled = 0;     ///< candidates ranked by their sampled percentile
  std::size_t unsampled = 0;   ///< verified candidates beyond Options::sample_task_budget
  bool stopped = false;        ///< Options::stop was asked: the best of what was searched
};

/// Searches plans for `s` (its [parallel] table, if any, is ignored). Deterministic. When no
/// plan fits in memory, `top` is empty. Its time grows with the devices and pools, not with
/// the layers or the batch: layer splits are closed-form (partition_layers), verification is
/// bounded (Options::max_verify_tasks).
[[nodiscard]] Result search(const Scenario& s, const Options& o);

/// Splits the layers of group `g` of `p` over its stages (pools and tp already set) to minimise
/// the slowest stage's per-micro-batch time under each stage's memory; false when no split fits.
[[nodiscard]] bool partition_layers(const Scenario& s, plan::Plan& p, std::size_t g);

/// Splits the step's micro-batches over the plan's replica groups (their replicas fixed) so
/// that the groups finish together as nearly as whole micro-batches allow; false if impossible.
[[nodiscard]] bool split_batch(const Scenario& s, plan::Plan& p);

/// Whether the plan puts devices of more than one vendor in one pipeline or one gradient sync
/// (it uses pools of several vendors): only `Options::same_vendor = false` makes such plans.
[[nodiscard]] bool spans_vendors(const hw::ClusterSpec& c, const plan::Plan& p);

/// The TP degrees a pool can use for this model: divisors of its devices per node that divide
/// the heads and the FFN width (and fit the KV heads).
[[nodiscard]] std::vector<int> tp_choices(const Scenario& s, const hw::PoolSpec& pool);

}  // namespace hetsim::planner
