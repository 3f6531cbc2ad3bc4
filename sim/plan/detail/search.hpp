#pragma once
// The planner's search (private to sim/plan): the plan families it builds and estimates, and
// how it ranks them and verifies the best with the engine. detail/search.cpp runs the search
// (ranking, compaction, pruning, verification, sampling); detail/search_families.cpp builds the
// candidates of each family (single pool, pool-local replicas, mixed pipelines, expert
// parallelism, the uniform baseline).

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/engine/native_engine.hpp"
#include "sim/plan/planner.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::planner::detail {

/// The settings a plan family is searched over, besides its layout.
struct Settings {
  int micro_batch = 1;
  cost::Schedule schedule = cost::Schedule::OneFOneB;
  cost::Recompute recompute = cost::Recompute::None;
  int zero = 1;
  bool operator<(const Settings& o) const {
    return std::tie(micro_batch, schedule, recompute, zero) < std::tie(o.micro_batch, o.schedule, o.recompute, o.zero);
  }
};

/// One search of plans for a scenario (planner::search). Not thread-safe; run once.
class Search {
 public:
  /// Requires: `s` and `o` outlive this object.
  Search(const Scenario& s, const Options& o);
  Result run();

 private:
  // --- Ranking, verification, bookkeeping (detail/search.cpp) ---
  bool better(const Candidate& a, const Candidate& b) const;
  // Keeps, of the heterogeneous candidates, the best `keep` of each kind (family and ZeRO
  // stage), and every single-pool and uniform one. Verification takes at most three of each kind
  // first and then the best overall until max(verify, top): a candidate that is not among the
  // best max(verify, top) of its own kind is never reached, so dropping it changes nothing (the
  // ranking is a total order). Baselines use single-pool candidates only.
  void compact(std::vector<Candidate>& all) const;
  static bool same(const plan::Plan& a, const plan::Plan& b);
  // Whether the caller asked the search to stop; remembered in the result.
  bool stopped(Result& r) const;
  void progress(double f) const;
  plan::Plan base(const Settings& st) const;
  // Estimates a complete plan; keeps it when it fits.
  bool evaluate(plan::Plan p, const std::string& family, std::vector<Candidate>& out);
  // The invariants validate_plan checks, cheaply (the search only builds valid shapes).
  bool io_valid(const plan::Plan& p) const;
  std::vector<Settings> settings() const;
  // Verifies c by the engine within the task bounds; false (c keeps its estimate) when it is
  // too large, its step past the simulated clock (kMaxSimulatedStepS), or the engine fails.
  bool simulate(Candidate& c);
  // Ranks c by the percentile of its sampled steps, within the sampling budget.
  void sample(Candidate& c, const schedule::TaskGraph& g, engine::SimTime nominal, double tasks);
  // The best max(verify, top) scores of each kind (family, ZeRO stage) estimated so far, as a
  // max-heap: a candidate whose score is provably above the worst of them is never verified
  // (see compact) and need not be estimated.
  void note_best(const Candidate& c);
  // Whether every plan of this kind whose step time is at least `bound` is out of reach (a bound
  // of 0, none computed, never is).
  bool out_of_reach(const std::string& family, int zero, double bound) const;
  // How many candidates verification takes: max(verify, top), at least 1.
  std::size_t reach() const { return static_cast<std::size_t>(std::max({1, o_.verify, o_.top})); }

  // --- The plan families (detail/search_families.cpp) ---
  // Mixture-of-experts models: every plan found so far again with each expert-parallel degree
  // that divides the experts and every group's replicas (fewer expert weights per device, the
  // experts' DP sync over fewer ranks, all-to-alls added; docs/cost-models.md#expert-parallelism).
  //
  // With sequence parallelism, also every folded layout (MoE parallel folding,
  // docs/cost-models.md#expert-tensor-parallelism): each power-of-two expert_tp below the
  // largest stage tp that divides every stage's tp, with each power-of-two ep whose product with
  // it divides every stage's tp × replicas (the devices its expert groups are cut from).
  void expert_parallel(std::vector<Candidate>& all);
  // Every (tp, pipeline depth, replicas, settings) of one pool, layers split by partition_layers.
  std::vector<Candidate> single_pool(int pi);
  // Each pool runs its own replicas (its best few configurations); the batch is split unevenly
  // so the groups finish together.
  void pool_local(const std::vector<std::vector<Candidate>>& alone, std::vector<Candidate>& all);
  // Every replica's pipeline spans several pools (in each order); the layer split follows the
  // stages' speeds and memories.
  void mixed_pipelines(const std::vector<std::vector<Candidate>>& alone, std::vector<Candidate>& all);
  // With Options::same_vendor, a combination of pools must share one vendor.
  bool vendors_compatible(unsigned mask) const;
  // Baseline (a): one tp and pp for every pool, equal layers per stage, equal micro-batches per
  // replica, as a homogeneous framework would run the cluster.
  std::optional<Candidate> uniform(std::vector<Candidate>& all);
  // What a stage of `pool` at `tp` pays per micro-batch (micro-batch and recompute of `st`),
  // whatever else the plan holds: per layer (compute and exposed TP collectives), and for the
  // embedding and the head when it holds them. Cached.
  struct StageRates {
    double layer = 0, emb = 0, head = 0;
  };
  const StageRates& stage_rates(int pool, int tp, const Settings& st);

  const Scenario& s_;
  const Options& o_;
  /// [parallel] pipeline_runs: every group's micro-batches are a multiple of it.
  const int runs_ = std::max(1, s_.framework.pipeline_runs);
  std::vector<int> micro_batches_;
  std::map<std::pair<std::string, int>, std::priority_queue<double>> best_;
  std::map<std::tuple<int, int, int, int>, StageRates> rates_;
  std::size_t pruned_ = 0;
  std::size_t evaluated_ = 0;
  double tasks_simulated_ = 0;
  double tasks_sampled_ = 0;
  std::size_t sampled_ = 0, unsampled_ = 0;
  std::vector<Candidate>* all_ = nullptr;  ///< the list compact() bounds, while it grows
  std::size_t compact_at_ = o_.compact_at;
};

}  // namespace hetsim::planner::detail
