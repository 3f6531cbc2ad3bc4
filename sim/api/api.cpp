#include "sim/api/api.hpp"

#include <fmt/format.h>

#include <chrono>

#include "sim/io/catalog_reader.hpp"
#include "sim/io/plan_json.hpp"
#include "sim/io/scenario_writer.hpp"
#include "sim/report/buy_report.hpp"
#include "sim/schedule/schedule.hpp"
#ifdef HETSIM_HAVE_SIMGRID
#include "sim/engine/summary.hpp"
#include "sim/simgrid/simgrid_module.hpp"
#endif

namespace hetsim::api {
// Each parsed once, on first use (a function-local static's initialisation is thread-safe).
Result<hw::Catalog> catalog() {
  static const Result<hw::Catalog> parsed = io::builtin_catalog();
  return parsed;
}

Result<hw::Catalog> figures_catalog() {
  static const Result<hw::Catalog> parsed = io::builtin_catalog(false);
  return parsed;
}

Result<Scenario> load(const std::filesystem::path& file, const io::ReadOptions& opts) {
  auto cat = figures_catalog();
  if (!cat) return cat.errors();
  return io::read_scenario(file, *cat, opts);
}

Result<Scenario> load_text(std::string_view text, const std::string& name, const io::ReadOptions& opts) {
  auto cat = figures_catalog();
  if (!cat) return cat.errors();
  return io::parse_scenario(text, name, *cat, opts);
}

Result<plan::Plan> plan_to_run(const Scenario& s, const std::filesystem::path& plan_file, std::string_view command) {
  if (!plan_file.empty()) return io::read_plan_json(plan_file, s);
  if (s.plan) return *s.plan;
  return about(s.file, "parallel", fmt::format("`hetsim {}` needs a fixed plan", command),
               "add a [parallel] table (tp, pp, dp, micro_batch, …; see docs/scenario-format.md) or give "
               "--plan PLAN.json");
}

analytic::Estimate estimate(const Scenario& s, const plan::Plan& p) { return analytic::estimate(s, p); }

std::optional<engine::StepDistribution> sample_estimate(const Scenario& s, const plan::Plan& p,
                                                        const analytic::Estimate& e) {
  if (!s.variability) return std::nullopt;
  std::vector<engine::ClosedFormGroup> groups;
  for (const auto& g : e.groups) {
    engine::ClosedFormGroup cg;
    cg.replicas = g.replicas / std::max(1, p.cp);  // a sequence's cp replicas draw as one unit
    cg.micro_batches = g.micro_batches;
    cg.virtual_stages = p.schedule == cost::Schedule::Interleaved ? p.virtual_stages : 1;
    cg.pipeline_runs = p.pipeline_runs;
    groups.push_back(std::move(cg));
  }
  for (const auto& st : e.stages) {
    const auto& mb = st.per_micro_batch;
    groups[static_cast<std::size_t>(st.group)].stages.push_back(
        {st.tp * std::max(1, p.cp), mb.total(), mb.get("forward") + mb.get("backward") + mb.get("recompute"), st.optimizer});
  }
  return engine::sample_closed_form(groups, e.step_time.v, *s.variability);
}

Result<Simulated> simulate(const Scenario& s, const plan::Plan& p, const SimulateOptions& opts) {
  // Refuse a step too large to hold in memory, before trying.
  if (const double n = schedule::estimated_tasks(s, p); n > kMaxSimulatedTasks)
    return about(s.file, "",
                 fmt::format("the simulated step would have about {:.3g} tasks, more than the {:.3g} this "
                             "command simulates",
                             n, kMaxSimulatedTasks),
                 "fewer micro-batches per replica (a larger micro_batch), or `hetsim estimate` for the "
                 "closed-form answer");
  if (s.variability && opts.engine == Engine::SimGrid)
    return about(s.file, "variability", "the simgrid engine does not sample stragglers or jitter",
                 "`--engine native` (the default) samples stragglers and jitter; remove [variability] to "
                 "simulate the nominal step with SimGrid");
  if (const double n = schedule::estimated_tasks(s, p) * (s.variability ? s.variability->steps : 0);
      n > kMaxSampledTasks)
    return about(s.file, "variability.steps",
                 fmt::format("{} sampled steps would run about {:.3g} tasks, more than the {:.3g} this command "
                             "takes on",
                             s.variability->steps, n, kMaxSampledTasks),
                 "fewer steps (a sweep over variability.seed spreads them over points and cores)");
  auto run = report::run_simulation(s, p, engine::RunControl{opts.stop, opts.progress});
  if (!run) return run.errors();
  Simulated out{std::move(*run), std::nullopt};
  if (s.variability) {
    const report::Simulation& sim = out.sim;
    auto d = engine::sample_steps(sim.graph, *s.variability, sim.trace.makespan,
                                  engine::RunControl{opts.stop, opts.progress});
    if (!d) return d.errors();
    out.sim.variability = std::move(*d);
  }
  if (opts.engine == Engine::Native) return out;
  if (opts.stop.stop_requested()) return engine::stopped_error();
#ifdef HETSIM_HAVE_SIMGRID
  report::Simulation& sim = out.sim;
  // SimGrid runs the unfolded graph: refuse what would take hours, say when it takes a while.
  const double unfolded = sim.graph.unfolded_size();
  if (unfolded > kMaxSimgridActivities)
    return about(s.file, "",
                 fmt::format("the simgrid engine would run about {:.3g} activities, more than the {:.3g} it "
                             "takes on (SimGrid manages 50–300 k per second)",
                             unfolded, kMaxSimgridActivities),
                 "`--engine native`, or fewer micro-batches per replica");
  if (unfolded > 1e6 && opts.note)
    opts.note(fmt::format("simgrid: about {:.3g} activities, a few seconds to a few minutes...", unfolded));
  auto module = engine::load_simgrid_module();
  if (!module) return module.errors();
  SimgridReport rep;
  rep.native_step_s = static_cast<double>(sim.trace.makespan) * 1e-9;
  const auto t0 = std::chrono::steady_clock::now();
  auto sg = (*module)->run(sim.graph, s.cluster);
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!sg) return sg.errors();
  if (opts.stop.stop_requested()) return engine::stopped_error();
  sim.trace = std::move(sg->trace);
  sim.summary = engine::summarize(sim.graph, sim.trace);
  report::apply_simulation(sim);
  rep.activities = sg->activities;
  rep.flows = sg->flows;
  rep.flow_delay_s = sg->flow_delay_s;
  for (const auto& k : sg->contended) rep.contended.push_back({k.link, k.overloaded_s, k.peak_demand});
  out.simgrid = std::move(rep);
  return out;
#else
  return about(s.file, "", "this hetsim was built without SimGrid",
               "install libsimgrid-dev (./install-deps.sh) and configure with -DHETSIM_WITH_SIMGRID=ON",
               ErrorKind::Environment);
#endif
}

Result<buy::Result> buy(const Scenario& s, const buy::Options& opts) {
  if (!s.purchase)
    return about(s.file, "purchase", "`hetsim buy` needs a [purchase] table",
                 "add [purchase] with [[purchase.candidate]] entries (docs/scenario-format.md#purchase)");
  if (s.training.tokens <= 0)
    return about(s.file, "training.tokens", "`hetsim buy` compares times to train: the scenario gives no tokens",
                 "add training.tokens = <tokens to train on>, e.g. 2e12");
  if (const double n = buy::composition_count(*s.purchase); n > static_cast<double>(opts.max_compositions))
    return about(s.file, "purchase.candidate",
                 fmt::format("{:.3g} compositions of the candidates, more than the {} the search takes on", n,
                             opts.max_compositions),
                 "a larger node_step or a smaller max_nodes");
  return buy::search(s, opts);
}

namespace {

// The first key whose value the planned times depend on and that differs between a and b ("" when none does).
std::string times_differ(const Scenario& a, const Scenario& b) {
  const auto& ma = a.model;
  const auto& mb = b.model;
  if (ma.name != mb.name || ma.layers != mb.layers || ma.hidden != mb.hidden || ma.heads != mb.heads ||
      ma.kv_heads != mb.kv_heads || ma.ffn_hidden != mb.ffn_hidden || ma.vocab != mb.vocab)
    return "model";
  const auto& ta = a.training;
  const auto& tb = b.training;
  if (ta.global_batch != tb.global_batch) return "training.global_batch";
  if (ta.seq_len != tb.seq_len) return "training.seq_len";
  if (ta.precision != tb.precision) return "training.precision";
  if (ta.tokens != tb.tokens) return "training.tokens";
  if (a.reliability.mtbf_hours != b.reliability.mtbf_hours) return "reliability.mtbf_hours";
  if (a.cluster.network.oversubscription != b.cluster.network.oversubscription)
    return "cluster.network.oversubscription";
  auto same_pool = [](const hw::PoolSpec& x, const hw::PoolSpec& y) {
    return x.device.name == y.device.name && x.nodes == y.nodes && x.devices_per_node == y.devices_per_node &&
           x.nic.bandwidth.v == y.nic.bandwidth.v && x.nics_per_node == y.nics_per_node;
  };
  if (a.cluster.pools.size() != b.cluster.pools.size()) return "cluster.pool";
  for (std::size_t i = 0; i < a.cluster.pools.size(); ++i)
    if (!same_pool(a.cluster.pools[i], b.cluster.pools[i])) return fmt::format("cluster.pool[{}]", i);
  if (!a.purchase || !b.purchase || a.purchase->candidates.size() != b.purchase->candidates.size())
    return "purchase.candidate";
  for (std::size_t k = 0; k < a.purchase->candidates.size(); ++k) {
    const auto& x = a.purchase->candidates[k];
    const auto& y = b.purchase->candidates[k];
    if (!same_pool(x.pool, y.pool) || x.max_nodes != y.max_nodes || x.node_step != y.node_step)
      return fmt::format("purchase.candidate[{}]", k);
  }
  return "";
}

}  // namespace

Result<buy::Repriced> reprice(const Scenario& searched, const Scenario& changed, const buy::Result& r) {
  if (!changed.purchase)
    return about(changed.file, "purchase", "re-pricing a purchase search needs a [purchase] table", "");
  if (const std::string key = times_differ(searched, changed); !key.empty())
    return about(changed.file, key,
                 fmt::format("`{}` differs from the scenario searched: re-pricing keeps the planned times", key),
                 "run the search again (`hetsim buy`)");
  return buy::reprice(changed, r);
}

Result<std::vector<io::OutputFile>> buy_files(const Scenario& s, std::string_view source_text, const buy::Result& r,
                                              const std::filesystem::path& dir) {
  if (!s.purchase) return about(s.file, "purchase", "no [purchase] to write the points of", "", ErrorKind::Internal);
  std::vector<io::OutputFile> files;
  for (std::size_t i = 0; i < r.front.size(); ++i) {
    const buy::Point& p = r.front[i];
    const std::string stem = fmt::format("point-{}", i + 1);
    const std::filesystem::path toml_path = dir / (stem + ".toml");
    const std::filesystem::path plan_path = dir / (stem + ".plan.json");
    const std::string header = fmt::format(
        "# Written by `hetsim buy` from {}: front point {} of {}{}: buy {}.\n"
        "# Run it: hetsim simulate {} (its [parallel] is the point's plan; {} holds the same plan)\n\n",
        s.file, i + 1, r.front.size(), i == r.recommended ? " (the recommended one)" : "", report::what_is_bought(s, p),
        toml_path.string(), plan_path.string());
    auto text = io::bought_scenario_toml(source_text, s.file, *s.purchase, p.nodes, dir, header,
                                         fmt::format("{} point {}", s.name, i + 1), &p.scenario, &p.best.plan);
    if (!text) return text.errors();
    std::string plan_text = io::plan_to_json(p.scenario, p.best.plan);
    // Read back as `hetsim simulate` (with and without --plan) will: the scenario's own
    // [parallel] and the plan file are the same plan.
    auto back = load_text(*text, toml_path.string());
    if (!back) return with_kind(back.errors(), ErrorKind::Internal);
    auto plan_back = io::parse_plan_json(plan_text, plan_path.string(), *back);
    if (!plan_back) return with_kind(plan_back.errors(), ErrorKind::Internal);
    if (!back->plan || io::plan_to_json(*back, *back->plan) != io::plan_to_json(*back, *plan_back))
      return about(toml_path.string(), "parallel", "the written [parallel] does not read back as the point's plan", "",
                   ErrorKind::Internal);
    files.push_back({toml_path, std::move(*text)});
    files.push_back({plan_path, std::move(plan_text)});
  }
  files.push_back({dir / "front.csv", report::buy_csv(s, r)});
  return files;
}

Result<Planned> plan(const Scenario& s, planner::Options opts) {
  if (s.cluster.pools.empty())
    return about(s.file, "cluster.pool", "the cluster has no pools to plan for",
                 s.purchase ? "`hetsim buy` plans the purchase; `hetsim plan` needs owned pools" : "add a [[cluster.pool]]");
  Planned out;
  // Devices without the training's number format hold no stage: say so, and refuse when no pool
  // is left.
  int usable = 0;
  const std::string prec(hw::dtype_name(s.training.precision));
  for (const auto& pool : s.cluster.pools) {
    if (pool.device.peak_for(s.training.precision)) {
      ++usable;
      continue;
    }
    out.notes.push_back(fmt::format("pool '{}' ({}) has no {} support and is left out of the search{}", pool.name,
                                    pool.device.name, prec,
                                    pool.device.peak_for(hw::Dtype::Fp16) ? " (precision = \"fp16\" would use it)" : ""));
  }
  if (usable == 0)
    return about(s.file, "training.precision", fmt::format("no pool of this cluster supports {}", prec),
                 "use a precision its devices support (`hetsim catalog` lists each device's formats)");
  if (opts.rank_percentile < 0) opts.rank_percentile = s.variability ? s.variability->rank_by : 0;
  if (opts.rank_percentile > 0 && !s.variability)
    return about(s.file, "variability",
                 fmt::format("ranking by p{} needs sampled steps, and this scenario samples none", opts.rank_percentile),
                 "add [variability] (slow_fraction, slow_factor, jitter, steps; docs/scenario-format.md#variability)");
  out.result = planner::search(s, opts);
  return out;
}

}  // namespace hetsim::api
