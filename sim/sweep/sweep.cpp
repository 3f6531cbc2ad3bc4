#include "sim/sweep/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "sim/api/api.hpp"
#include "sim/report/estimate_report.hpp"
#include "sim/report/plan_report.hpp"
#include "sim/sweep/detail/ordered_run.hpp"

namespace hetsim::sweep {

namespace {

std::string one_line(const Diagnostic& d) {
  std::string s = to_string(d);
  for (std::size_t at; (at = s.find("\n  ")) != std::string::npos;) s.replace(at, 3, "; ");
  return s;
}

void fail(Row& row, const Diagnostics& d) {
  row.ok = false;
  row.kind = worst_kind(d);
  row.error = one_line(d.front());
}

void fill(Row& row, const Scenario& s, const plan::Plan& p, const analytic::Estimate& e) {
  row.has_figures = true;
  row.step_s = e.step_time.v;
  row.tokens_per_s = e.tokens_per_s;
  row.mfu = e.mfu;
  row.time_to_train_s = e.time_to_train.v;
  row.goodput = e.goodput.fraction;
  row.effective_time_to_train_s = e.goodput.fraction > 0 ? e.time_to_train.v / e.goodput.fraction : 0;
  row.cost_to_train_usd = e.cost_to_train_usd;
  row.devices = e.devices;
  row.plan = report::plan_summary(s, p);
  for (const auto& d : e.device_types)
    row.pools.push_back({d.pool, d.peak_memory.v, d.capacity.v, d.count, d.fits});
  if (e.fits) {
    row.ok = true;
    return;
  }
  row.ok = false;
  row.kind = ErrorKind::DoesNotFit;
  for (const auto& d : e.device_types)
    if (!d.fits) {
      row.error = fmt::format("plan does not fit in memory on pool '{}' ({}): needs {} of {} ({})", d.pool, d.device,
                              format_bytes(d.peak_memory), format_bytes(d.capacity), d.worst_stage);
      break;
    }
}

void fill_sampled(Row& row, const std::optional<engine::StepDistribution>& d) {
  if (!d) return;
  row.sampled = true;
  row.step_p50_s = d->p50_s;
  row.step_p90_s = d->p90_s;
  row.step_p99_s = d->p99_s;
}

}  // namespace

std::string Row::status() const { return ok ? "ok" : kind_name(kind); }

Row run_point(const io::SweepDocument& doc, std::size_t i) {
  Row row;
  row.point = i;
  row.values = doc.values(i);
  auto sc = doc.scenario(i);
  if (!sc) {
    fail(row, sc.errors());
    return row;
  }
  const io::SweepSpec& spec = doc.spec();
  if (spec.command == io::SweepCommand::Plan) {
    planner::Options opts;
    opts.objective = spec.cost_objective ? planner::Objective::Cost : planner::Objective::Time;
    auto planned = api::plan(*sc, opts);  // `hetsim plan`'s defaults: top 5, verify 10
    if (!planned) {
      fail(row, planned.errors());
      return row;
    }
    if (planned->result.top.empty()) {
      fail(row, {about(sc->file, "",
                       fmt::format("no plan fits this cluster's memory ({} plans tried)", planned->result.evaluated),
                       report::no_plan_hint(*sc), ErrorKind::DoesNotFit)});
      return row;
    }
    const plan::Plan& best = planned->result.top.front().plan;
    // The figures `hetsim plan` reports: a simulation of the best plan's step.
    auto sim = api::simulate(*sc, best);
    if (!sim) {
      fail(row, sim.errors());
      return row;
    }
    fill(row, *sc, best, sim->sim.simulated);
    fill_sampled(row, sim->sim.variability);
    return row;
  }
  auto p = api::plan_to_run(*sc, "", "sweep");
  if (!p) {
    fail(row, p.errors());
    return row;
  }
  if (spec.command == io::SweepCommand::Estimate) {
    const auto e = api::estimate(*sc, *p);
    fill(row, *sc, *p, e);
    fill_sampled(row, api::sample_estimate(*sc, *p, e));
    return row;
  }
  api::SimulateOptions opts;
  opts.engine = spec.simgrid ? api::Engine::SimGrid : api::Engine::Native;
  auto sim = api::simulate(*sc, *p, opts);
  if (!sim) {
    fail(row, sim.errors());
    return row;
  }
  fill(row, *sc, *p, sim->sim.simulated);
  fill_sampled(row, sim->sim.variability);
  return row;
}

Validation validate(const io::SweepDocument& doc, int jobs, std::size_t max_reported, Share share) {
  const std::size_t n = doc.spec().points;
  const bool needs_plan = doc.spec().command != io::SweepCommand::Plan;
  const std::size_t of = std::max<std::size_t>(share.of, 1);
  std::atomic<std::size_t> next{share.index};
  std::mutex mu;
  std::map<std::size_t, Diagnostics> bad;  // the first max_reported invalid points
  std::size_t invalid = 0;
  std::vector<std::string> pools;
  bool variability = false;
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(of)) < n;) {
      auto sc = doc.scenario(i);
      Diagnostics d;
      if (!sc) d = sc.errors();
      else if (needs_plan && !sc->plan)
        d = {about(doc.spec().file, "parallel",
                   fmt::format("sweep point {}: this sweep's command needs a fixed plan", i),
                   "add a [parallel] table, or command = \"plan\" in [sweep] to search one per point")};
      if (sc && i == 0) {
        std::lock_guard lock(mu);
        for (const auto& p : sc->cluster.pools) pools.push_back(p.name);
        variability = sc->variability.has_value();
      }
      if (d.empty()) continue;
      std::lock_guard lock(mu);
      ++invalid;
      bad.emplace(i, std::move(d));
      if (bad.size() > max_reported) bad.erase(std::prev(bad.end()));
    }
  };
  std::vector<std::jthread> threads;
  for (int t = 1; t < std::max(jobs, 1); ++t) threads.emplace_back(work);
  work();
  threads.clear();
  Validation v;
  v.invalid = invalid;
  v.pools = std::move(pools);
  v.variability = variability;
  for (auto& [i, d] : bad)
    for (auto& x : d) {
      v.errors.push_back(std::move(x));
      v.error_points.push_back(i);
    }
  return v;
}

Validation merge(std::vector<Validation> shares, std::size_t max_reported) {
  Validation v;
  std::map<std::size_t, Diagnostics> bad;
  for (Validation& s : shares) {
    v.invalid += s.invalid;
    if (!s.pools.empty() || s.variability) {
      v.pools = std::move(s.pools);
      v.variability = s.variability;
    }
    for (std::size_t k = 0; k < s.errors.size() && k < s.error_points.size(); ++k)
      bad[s.error_points[k]].push_back(std::move(s.errors[k]));
  }
  std::size_t points = 0;
  for (auto& [i, d] : bad) {
    if (++points > max_reported) break;
    for (auto& x : d) {
      v.errors.push_back(std::move(x));
      v.error_points.push_back(i);
    }
  }
  return v;
}

std::size_t run(const io::SweepDocument& doc, const RunOptions& opts) {
  if (opts.first >= doc.spec().points) return 0;
  detail::OrderedRun run(doc, opts, static_cast<std::size_t>(std::max(opts.jobs, 1)) * 16);
  run.start();
  while (run.deliver()) run.wait(std::chrono::milliseconds(50));
  return run.delivered();
}

}  // namespace hetsim::sweep
