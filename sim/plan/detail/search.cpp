#include "sim/plan/detail/search.hpp"

#include <algorithm>

#include "sim/analytic/estimate.hpp"
#include "sim/engine/variability.hpp"
#include "sim/plan/detail/feasibility.hpp"
#include "sim/schedule/schedule.hpp"

namespace hetsim::planner::detail {
namespace {

// ZeRO stages searched: 1 (Megatron's distributed optimizer) first; 2 and 3 trade DP traffic
// for memory. 0 is never better than 1 here (same traffic, more memory).
constexpr int kZeroStages[] = {1, 2, 3};

}  // namespace

Search::Search(const Scenario& s, const Options& o) : s_(s), o_(o) {
  for (int mb : {1, 2, 4, 8})
    if (s.training.global_batch % mb == 0) micro_batches_.push_back(mb);
}

Result Search::run() {
  Result r;
  const std::size_t P = s_.cluster.pools.size();
  // 1. Each pool alone: the building blocks, and baselines (b) and (c).
  std::vector<std::vector<Candidate>> alone(P);
  for (std::size_t pi = 0; pi < P && !stopped(r); ++pi) {
    alone[pi] = single_pool(static_cast<int>(pi));
    progress(0.4 * double(pi + 1) / double(P));
  }
  // 2. Heterogeneous plans. Only the best of each kind can be verified (see compact), so the
  // list is compacted as it grows: memory stays bounded however many plans are estimated.
  std::vector<Candidate> all;
  all_ = &all;
  for (auto& v : alone) all.insert(all.end(), v.begin(), v.end());
  if (P > 1 && !stopped(r)) {
    pool_local(alone, all);
    progress(0.55);
    if (!stopped(r)) mixed_pipelines(alone, all);
    progress(0.75);
  }
  if (!stopped(r)) expert_parallel(all);
  all_ = nullptr;
  std::optional<Candidate> uniform_best = stopped(r) ? std::nullopt : uniform(all);
  progress(0.8);
  // 3. Rank by the estimate, verify the best (and every baseline's best) with the engine.
  std::sort(all.begin(), all.end(), [&](const Candidate& a, const Candidate& b) { return better(a, b); });
  r.evaluated = evaluated_;
  r.pruned = pruned_;
  if (all.empty()) return r;
  std::vector<Candidate> verified;
  auto verify = [&](Candidate c) {
    // Stopped: the rest keep their closed-form estimates.
    if (!stopped(r) && simulate(c)) ++r.simulated;
    else ++r.unverified;
    verified.push_back(std::move(c));
  };
  // Verify the best estimates, at most three of each kind (family and ZeRO stage) first, so
  // that one kind the closed form flatters cannot crowd out the others.
  const std::size_t n = std::min<std::size_t>(all.size(), static_cast<std::size_t>(std::max(o_.verify, o_.top)));
  std::map<std::pair<std::string, int>, int> per_kind;
  std::vector<bool> taken(all.size(), false);
  for (std::size_t i = 0; i < all.size() && verified.size() < n; ++i)
    if (per_kind[{all[i].family, all[i].plan.zero}]++ < 3) {
      taken[i] = true;
      verify(all[i]);
    }
  for (std::size_t i = 0; i < all.size() && verified.size() < n; ++i)
    if (!taken[i]) verify(all[i]);
  // A pool's baseline: its best few estimates (one per ZeRO stage first), simulated.
  auto best_of = [&](int pool) -> std::optional<Candidate> {
    std::optional<Candidate> b;
    std::map<int, int> per_zero;
    int tried = 0;
    for (const auto& c : all) {
      if (c.family != "single pool" || c.plan.groups[0].stages[0].pool != pool) continue;
      if (per_zero[c.plan.zero]++ >= 1 && tried >= 3) continue;
      Candidate v = c;
      if (!stopped(r) && simulate(v)) ++r.simulated;
      else ++r.unverified;
      if (!b || better(v, *b)) b = v;
      if (++tried >= 5) break;
    }
    return b;
  };
  if (uniform_best) {
    if (!stopped(r) && simulate(*uniform_best)) ++r.simulated;
    else ++r.unverified;
  }
  r.baselines.push_back({"uniform Megatron over all devices", uniform_best});
  std::optional<Candidate> fastest;
  for (std::size_t pi = 0; pi < P; ++pi) {
    Baseline b{s_.cluster.pools[pi].name + " alone", best_of(static_cast<int>(pi))};
    if (b.best && (!fastest || b.best->step_s() < fastest->step_s())) fastest = b.best;
    r.baselines.push_back(std::move(b));
  }
  r.baselines.insert(r.baselines.begin() + 1, Baseline{"fastest pool alone", fastest});
  // A baseline can only win if the verified ranking missed it: keep the answer honest.
  for (const auto& b : r.baselines)
    if (b.best) verified.push_back(*b.best);
  std::stable_sort(verified.begin(), verified.end(), [&](const Candidate& a, const Candidate& b) { return better(a, b); });
  // Distinct plans only.
  for (auto& c : verified) {
    bool dup = false;
    for (const auto& t : r.top) dup = dup || same(t.plan, c.plan);
    if (!dup && static_cast<int>(r.top.size()) < o_.top) r.top.push_back(std::move(c));
  }
  r.rank_percentile = o_.rank_percentile > 0 && s_.variability ? o_.rank_percentile : 0;
  r.sampled = sampled_;
  r.unsampled = unsampled_;
  progress(1.0);
  return r;
}

bool Search::better(const Candidate& a, const Candidate& b) const {
  const double sa = a.score(o_.objective), sb = b.score(o_.objective);
  if (sa != sb) return sa < sb;
  if (a.estimate.devices != b.estimate.devices) return a.estimate.devices < b.estimate.devices;  // fewer devices on a tie
  return a.order < b.order;  // then the one estimated first: a total order, so any subset ranks alike
}

void Search::compact(std::vector<Candidate>& all) const {
  const std::size_t keep = std::max<std::size_t>(3, reach());
  std::map<std::pair<std::string, int>, std::vector<std::size_t>> kinds;
  std::vector<Candidate> kept;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].family == "single pool" || all[i].family == "uniform") kept.push_back(std::move(all[i]));
    else kinds[{all[i].family, all[i].plan.zero}].push_back(i);
  }
  for (auto& [kind, idx] : kinds) {
    const std::size_t n = std::min(keep, idx.size());
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(),
                      [&](std::size_t a, std::size_t b) { return better(all[a], all[b]); });
    for (std::size_t k = 0; k < n; ++k) kept.push_back(std::move(all[idx[k]]));
  }
  all = std::move(kept);
}

bool Search::same(const plan::Plan& a, const plan::Plan& b) {
  if (a.micro_batch != b.micro_batch || a.schedule != b.schedule || a.recompute != b.recompute ||
      a.virtual_stages != b.virtual_stages || a.ep != b.ep || a.expert_tp != b.expert_tp ||
      a.groups.size() != b.groups.size())
    return false;
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    const auto &x = a.groups[g], &y = b.groups[g];
    if (x.replicas != y.replicas || x.micro_batches != y.micro_batches || x.stages.size() != y.stages.size())
      return false;
    for (std::size_t i = 0; i < x.stages.size(); ++i)
      if (x.stages[i].pool != y.stages[i].pool || x.stages[i].tp != y.stages[i].tp ||
          x.stages[i].layers != y.stages[i].layers)
        return false;
  }
  return true;
}

bool Search::stopped(Result& r) const {
  if (o_.stop.stop_requested()) r.stopped = true;
  return r.stopped;
}

void Search::progress(double f) const {
  if (o_.progress) o_.progress(f);
}

plan::Plan Search::base(const Settings& st) const {
  plan::Plan p;
  // How the framework runs, as the scenario's [parallel] says (Scenario::framework): the
  // search chooses the layout, micro-batch, schedule, recompute, ZeRO, ep and expert_tp, not
  // these.
  plan::copy_framework(s_.framework, p);
  p.micro_batch = st.micro_batch;
  p.schedule = st.schedule;
  p.virtual_stages = st.schedule == cost::Schedule::Interleaved ? 2 : 1;
  p.recompute = st.recompute;
  p.zero = st.zero;
  return p;
}

bool Search::evaluate(plan::Plan p, const std::string& family, std::vector<Candidate>& out) {
  if (!io_valid(p)) return false;
  ++evaluated_;
  Candidate c;
  c.estimate = analytic::estimate(s_, p);
  if (!c.estimate.fits) return false;
  c.plan = std::move(p);
  c.family = family;
  c.order = evaluated_;
  note_best(c);
  out.push_back(std::move(c));
  if (&out == all_ && out.size() >= compact_at_) {
    compact(out);
    compact_at_ = std::max(o_.compact_at, 2 * out.size());
  }
  return true;
}

bool Search::io_valid(const plan::Plan& p) const {
  if (!nic_paths_ok(s_, p)) return false;
  std::vector<int> used(s_.cluster.pools.size(), 0);
  for (const auto& g : p.groups) {
    int covered = 0;
    for (const auto& st : g.stages) {
      used[st.pool] += g.replicas * st.tp;
      covered += st.layers;
      if (st.layers < 1) return false;
    }
    if (covered != s_.model.layers || g.micro_batches < 1) return false;
    if (g.micro_batches % p.pipeline_runs) return false;
    if (p.schedule == cost::Schedule::Interleaved && p.run_micro_batches(g) % static_cast<int>(g.stages.size()))
      return false;
  }
  for (std::size_t pi = 0; pi < used.size(); ++pi)
    if (used[pi] > s_.cluster.pools[pi].devices()) return false;
  return p.sequences_per_step() == s_.training.global_batch;
}

std::vector<Settings> Search::settings() const {
  std::vector<Settings> out;
  for (int mb : micro_batches_)
    for (auto sch : {cost::Schedule::OneFOneB, cost::Schedule::Interleaved})
      for (int z : kZeroStages)
        for (auto rc : {cost::Recompute::None, cost::Recompute::Selective, cost::Recompute::Full})
          out.push_back({mb, sch, rc, z});
  return out;
}

bool Search::simulate(Candidate& c) {
  const double n = schedule::estimated_tasks(s_, c.plan);
  if (n > o_.max_verify_tasks || tasks_simulated_ + n > o_.verify_task_budget) return false;
  // (A step past the simulated clock keeps its estimate, as run_simulation refuses it.)
  if (!(c.estimate.step_time.v <= schedule::kMaxSimulatedStepS)) return false;
  tasks_simulated_ += n;
  const auto g = schedule::build_schedule(s_, c.plan);
  auto t = engine::run_native(g);
  if (!t) return false;  // not verified: it keeps its estimate and is not counted as simulated
  c.simulated_step_s = static_cast<double>(t->makespan) * 1e-9;
  if (o_.rank_percentile > 0 && s_.variability) sample(c, g, t->makespan, n);
  return true;
}

void Search::sample(Candidate& c, const schedule::TaskGraph& g, engine::SimTime nominal, double tasks) {
  const VariabilitySpec& v = *s_.variability;
  const double cost = tasks * v.steps;
  if (tasks_sampled_ + cost > o_.sample_task_budget) {
    ++unsampled_;
    return;
  }
  tasks_sampled_ += cost;
  auto d = engine::sample_steps(g, v, nominal);
  if (!d) return;
  std::vector<double> sorted = d->steps_s;
  std::sort(sorted.begin(), sorted.end());
  c.ranked_step_s = engine::percentile(sorted, o_.rank_percentile);
  ++sampled_;
}

void Search::note_best(const Candidate& c) {
  auto& h = best_[{c.family, c.plan.zero}];
  const double sc = c.score(o_.objective);
  if (h.size() < reach()) h.push(sc);
  else if (sc < h.top()) {
    h.pop();
    h.push(sc);
  }
}

bool Search::out_of_reach(const std::string& family, int zero, double bound) const {
  auto it = best_.find({family, zero});
  // A relative margin: the bound is summed in another order than the estimate, and a plan
  // whose estimate ties the worst kept score must not be lost to the last bit.
  return it != best_.end() && it->second.size() >= reach() && bound * (1 - 1e-12) > it->second.top();
}
}  // namespace hetsim::planner::detail
