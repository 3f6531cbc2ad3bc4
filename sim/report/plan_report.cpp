#include "sim/report/plan_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sim/report/estimate_report.hpp"

namespace hetsim::report {
namespace {

double headroom(const analytic::Estimate& e) {
  double h = 1.0;
  for (const auto& d : e.device_types)
    if (d.count > 0) h = std::min(h, 1.0 - d.peak_memory / d.capacity);
  return h;
}

std::string unused(const analytic::Estimate& e) {
  std::string out;
  for (const auto& d : e.device_types)
    if (d.idle > 0) out += fmt::format("{}{} of {} '{}' devices", out.empty() ? "" : ", ", d.idle, d.idle + d.count, d.pool);
  return out;
}

// Why the winner wins, from its simulation: where time goes on its busiest device, its splits,
// what limits it.
std::vector<std::string> explain(const Scenario& s, const planner::Candidate& c, const Simulation& sim) {
  std::vector<std::string> lines;
  const auto& g = sim.graph;
  std::size_t busiest = 0;
  double most = -1;
  const auto ep = static_cast<std::size_t>(schedule::Stream::EpComm);
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    const auto& u = sim.summary.devices[d];
    const double busy = u.stream_fraction[0] + u.stream_fraction[1] + u.stream_fraction[2] + u.stream_fraction[ep];
    if (busy > most) { most = busy; busiest = d; }
  }
  const auto& u = sim.summary.devices[busiest];
  const std::string a2a = u.stream_fraction[ep] > 0
                            ? fmt::format(", expert all-to-alls {:.0f} %", 100 * u.stream_fraction[ep])
                            : std::string{};
  lines.push_back(fmt::format("bottleneck: {} — compute {:.0f} %, TP collectives {:.0f} %, pipeline sends {:.0f} %{}, "
                              "bubble {:.0f} % of the step",
                              g.devices[busiest].label, 100 * u.stream_fraction[0], 100 * u.stream_fraction[1],
                              100 * u.stream_fraction[2], a2a,
                              100.0 * static_cast<double>(u.bubble) / static_cast<double>(sim.trace.makespan)));
  for (std::size_t gi = 0; gi < c.plan.groups.size(); ++gi) {
    const auto& grp = c.plan.groups[gi];
    std::string layers;
    for (const auto& st : grp.stages)
      layers += fmt::format("{}{}", layers.empty() ? "" : "/", st.layers);
    lines.push_back(fmt::format("group {}: {} replica(s) × {} micro-batches; layers per stage {} on {}", gi,
                                grp.replicas / std::max(1, c.plan.cp),
                                grp.micro_batches, layers, [&] {
                                  std::string pools;
                                  for (const auto& st : grp.stages) {
                                    const auto& n = s.cluster.pools[st.pool].name;
                                    if (pools.find(n) == std::string::npos) pools += (pools.empty() ? "" : "+") + n;
                                  }
                                  return pools;
                                }()));
  }
  const double h = headroom(sim.simulated);
  std::string limit;
  if (h < 0.1) limit = fmt::format("memory (only {:.0f} % headroom on the fullest device type)", 100 * h);
  else if (u.stream_fraction[1] > 0.25) limit = "tensor-parallel communication on the intra-node fabric";
  else if (u.stream_fraction[ep] > 0.25) limit = "expert-parallel all-to-alls (token dispatch and combine)";
  else if (sim.summary.bubble_fraction > 0.2)
    limit = c.plan.pipeline_runs > 1 ? fmt::format("the pipeline bubble (too few micro-batches per replica, in {} "
                                                   "pipeline runs that each fill and drain)", c.plan.pipeline_runs)
                                     : "the pipeline bubble (too few micro-batches per replica)";
  else if (sim.summary.exposed_comm > sim.trace.makespan / 5) limit = "exposed communication";
  else limit = "compute on " + s.cluster.pools[g.devices[busiest].pool].name;
  lines.push_back("limited by: " + limit);
  if (const auto idle = unused(c.estimate); !idle.empty()) lines.push_back("leaves unused: " + idle);
  return lines;
}

}  // namespace

std::string plan_text(const Scenario& s, const planner::Result& r, const Simulation& best, planner::Objective o,
                      double seconds) {
  std::string out;
  out += fmt::format("scenario   {}  ({})\n", s.name, s.file);
  std::string cluster;
  for (const auto& p : s.cluster.pools)
    cluster += fmt::format("{}{} × {}", cluster.empty() ? "" : " + ", p.devices(), p.name);
  out += fmt::format("cluster    {}\n", cluster);
  (void)seconds;  // wall time stays out of the output: same input, same bytes
  out += fmt::format("searched   {} plans estimated, {} simulated{}; ranked by {}\n\n", r.evaluated, r.simulated,
                     r.unverified == 0 ? std::string()
                                       : fmt::format(", {} too large to simulate (their estimate ranks them)", r.unverified),
                     (o == planner::Objective::Time ? "step time" : "cost per token") +
                         (r.rank_percentile > 0
                              ? fmt::format(" at p{} of {} sampled steps ([variability]; {} plans sampled{})",
                                            r.rank_percentile, s.variability ? s.variability->steps : 0, r.sampled,
                                            r.unsampled ? fmt::format(", {} beyond the sampling budget at their nominal step",
                                                                      r.unsampled)
                                                        : std::string())
                              : std::string()));
  const bool ranked = r.rank_percentile > 0;
  const std::string pcol = ranked ? fmt::format(" {:>10}", fmt::format("p{}", r.rank_percentile)) : std::string();
  out += fmt::format(" #  {:>10}{} {:>12} {:>6} {:>9} {:>9}  {}\n", "step", pcol, "tokens/s", "MFU", "headroom", "$/Mtok",
                     "plan");
  bool any_cross = false;
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    const auto& c = r.top[i];
    const double ratio = c.estimate.step_time.v / c.step_s();
    const bool cross = planner::spans_vendors(s.cluster, c.plan);
    any_cross = any_cross || cross;
    const std::string pval =
        ranked ? fmt::format(" {:>10}", c.ranked_step_s > 0 ? format_duration(Duration{c.ranked_step_s}) : "-")
               : std::string();
    out += fmt::format("{:>2}  {:>10}{} {:>12.4g} {:>5.1f}% {:>8.1f}% {:>9.3g}  {} [{}{}]\n", i + 1,
                       format_duration(Duration{c.step_s()}), pval, c.estimate.tokens_per_s * ratio, 100 * c.estimate.mfu * ratio,
                       100 * headroom(c.estimate), c.estimate.usd_per_million_tokens / ratio, plan_summary(s, c.plan), c.family,
                       cross ? ", CROSS-VENDOR" : "");
  }
  if (any_cross)
    out += "    CROSS-VENDOR (--any-vendor): one pipeline or gradient sync across vendors; NCCL and RCCL do not\n"
           "    form one communicator, so running it needs a transport no standard stack has\n";
  out += fmt::format("\nbaselines (simulated)                          step    $/Mtok   best is\n");
  const auto& best_c = r.top.front();
  for (const auto& bl : r.baselines) {
    if (!bl.best) {
      out += fmt::format("  {:<40} {:>10}\n", bl.name, "no plan (none fits, or vendors may not mix)");
      continue;
    }
    const double ratio = bl.best->score(o) / best_c.score(o);
    out += fmt::format("  {:<40} {:>10} {:>9.3g}   {:.2f}× {}\n", bl.name, format_duration(Duration{bl.best->step_s()}),
                       bl.best->score(planner::Objective::Cost), ratio,
                       o == planner::Objective::Time ? "faster" : "cheaper per token");
  }
  out += "\nwhy the winner\n";
  for (const auto& line : explain(s, r.top.front(), best)) out += "  " + line + "\n";
  out += "\n" + simulate_text(s, r.top.front().plan, best);
  return out;
}

namespace {

nlohmann::ordered_json baselines_json(const Scenario& s, const planner::Result& r) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& bl : r.baselines) {
    nlohmann::ordered_json x{{"name", bl.name}};
    if (bl.best && !r.top.empty()) {
      const double b = r.top.front().step_s();
      x["step_time_s"] = bl.best->step_s();
      x["usd_per_million_tokens"] = bl.best->score(planner::Objective::Cost);
      x["speedup"] = bl.best->step_s() / b;
      x["cost_ratio"] = bl.best->score(planner::Objective::Cost) / r.top.front().score(planner::Objective::Cost);
      x["plan"] = plan_summary(s, bl.best->plan);
    } else {
      x["step_time_s"] = nullptr;
      x["speedup"] = nullptr;
    }
    all.push_back(x);
  }
  return all;
}

}  // namespace

std::string plan_json(const Scenario& s, const planner::Result& r, const Simulation& best, planner::Objective o,
                      double seconds) {
  nlohmann::ordered_json j;
  j["objective"] = o == planner::Objective::Time ? "time" : "cost";
  j["evaluated"] = r.evaluated;
  j["simulated"] = r.simulated;
  j["unverified"] = r.unverified;
  if (r.rank_percentile > 0) {
    j["rank_by"] = fmt::format("p{}", r.rank_percentile);
    j["sampled"] = r.sampled;
    j["unsampled"] = r.unsampled;
  }
  (void)seconds;  // wall time stays out of the output: same input, same bytes
  j["fits"] = best.simulated.fits;
  j["best"] = nlohmann::ordered_json::parse(simulate_json(s, r.top.front().plan, best));
  j["best"]["family"] = r.top.front().family;
  j["best"]["cross_vendor"] = planner::spans_vendors(s.cluster, r.top.front().plan);
  j["why"] = explain(s, r.top.front(), best);
  j["top"] = nlohmann::ordered_json::array();
  for (const auto& c : r.top) {
    const double ratio = c.estimate.step_time.v / c.step_s();
    j["top"].push_back({{"plan", plan_summary(s, c.plan)}, {"family", c.family},
                        {"cross_vendor", planner::spans_vendors(s.cluster, c.plan)}, {"step_time_s", c.step_s()},
                        {"estimate_step_time_s", c.estimate.step_time.v},
                        {"tokens_per_s", c.estimate.tokens_per_s * ratio}, {"mfu", c.estimate.mfu * ratio},
                        {"memory_headroom", headroom(c.estimate)},
                        {"usd_per_million_tokens", c.estimate.usd_per_million_tokens / ratio},
                        {"devices", c.estimate.devices}});
    if (r.rank_percentile > 0)
      j["top"].back()["ranked_step_time_s"] = c.ranked_step_s > 0 ? nlohmann::ordered_json(c.ranked_step_s) : nullptr;
  }
  j["baselines"] = baselines_json(s, r);
  return j.dump(2) + "\n";
}

std::string plan_json_none_fits(const Scenario& s, const planner::Result& r, planner::Objective o) {
  nlohmann::ordered_json j;
  j["objective"] = o == planner::Objective::Time ? "time" : "cost";
  j["evaluated"] = r.evaluated;
  j["simulated"] = r.simulated;
  j["unverified"] = r.unverified;
  if (r.rank_percentile > 0) {
    j["rank_by"] = fmt::format("p{}", r.rank_percentile);
    j["sampled"] = r.sampled;
    j["unsampled"] = r.unsampled;
  }
  j["fits"] = false;
  j["best"] = nullptr;
  j["why"] = nlohmann::ordered_json::array();
  j["top"] = nlohmann::ordered_json::array();
  j["baselines"] = baselines_json(s, r);
  return j.dump(2) + "\n";
}

std::string no_plan_hint(const Scenario& s) {
  const std::string usual = "more devices, devices with more memory, a shorter seq_len or a smaller global_batch";
  if (s.framework.pipeline_runs <= 1) return usual;
  return fmt::format("pipeline_runs = {} allows only plans whose every replica group's micro-batches it divides "
                     "(interleaved: into runs of a multiple of the pipeline depth); a smaller pipeline_runs, or {}",
                     s.framework.pipeline_runs, usual);
}

}  // namespace hetsim::report
