// hetsim: the command-line front end. Thin: parses arguments, calls sim/'s public functions,
// prints, and turns the kind of what went wrong into the exit status (0 ok, 1 environment, 2 bad
// input — a missing or unreadable scenario file included, since it is the user's argument — 3 plan
// does not fit, 4 internal). Under --json stdout holds one JSON document whatever happens.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <charconv>
#include <cerrno>
#include <csignal>
#include <stop_token>
#include <thread>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>
#include <cstdio>
#include <iostream>

#include "sim/analytic/estimate.hpp"
#include "sim/api/api.hpp"
#include "sim/cli/diagnostics.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/plan_json.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/io/variability_reader.hpp"
#include "sim/plan/planner.hpp"
#include "sim/io/input_file.hpp"
#include "sim/report/buy_report.hpp"
#include "sim/report/plan_report.hpp"
#include "sim/io/error_json.hpp"
#include "sim/report/estimate_report.hpp"
#include "sim/report/op_report.hpp"
#include "sim/report/simulation_report.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simgrid/flows.hpp"
#include "sim/simgrid/platform.hpp"
#include <nlohmann/json.hpp>

namespace {

// -o, --save-plan, --trace, --out: refused before any work when they cannot be written.
const CLI::Validator kOutputPath(
    [](const std::string& v) { return hetsim::io::output_path_problem(v); }, "FILE");
// A folder to write into: an existing one, or a new one whose parent exists.
const CLI::Validator kOutputDir(
    [](const std::string& v) -> std::string {
      if (v.empty()) return "an empty folder name";
      std::error_code ec;
      const std::filesystem::path p(v);
      if (std::filesystem::exists(p, ec)) return std::filesystem::is_directory(p, ec) ? "" : "'" + v + "' is not a folder";
      const auto parent = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
      return std::filesystem::is_directory(parent, ec) ? "" : "the folder '" + parent.string() + "' does not exist";
    },
    "DIR");

constexpr int kExitOk = 0;
constexpr int kExitEnvironment = 1;
constexpr int kExitBadInput = 2;

struct Common {
  std::string command;
  std::string scenario, plan_file, output, save_plan;
  bool json = false;
  bool ops = false;  // estimate --ops
};

// Ends a command that has no report: the diagnostics on stderr and, with --json, the error
// document on stdout (stdout is always one JSON document); the exit status follows from their
// kind.
int fail(const Common& c, const hetsim::Diagnostics& d) {
  for (const auto& x : d) std::cerr << hetsim::to_string(x) << "\n";
  if (c.json) std::cout << hetsim::io::error_json(d) << std::flush;
  return hetsim::exit_status(hetsim::worst_kind(d));
}

using hetsim::cli::about;

// Prints to stdout, or writes `output` atomically when given.
int emit(const Common& c, const std::string& text) {
  if (c.output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  if (auto errs = hetsim::io::write_files_atomic({{c.output, text}}); !errs.empty()) return fail(c, errs);
  return kExitOk;
}

int run_catalog(const Common& c) {
  auto cat = hetsim::api::catalog();
  if (!cat) return fail(c, cat.errors());
  return emit(c, c.json ? hetsim::report::catalog_json(*cat) : hetsim::report::catalog_text(*cat));
}

// Reads a scenario against the built-in catalogue; on failure reports and returns the exit
// status.
int load_scenario(const Common& c, hetsim::Scenario& sc) {
  // `plan` searches its own plans: the scenario's [parallel] is not read (docs/planner.md).
  auto r = hetsim::api::load(c.scenario, {.plan = c.command != "plan" && c.command != "buy"});
  if (!r) {
    const int rc = fail(c, r.errors());
    std::cerr << fmt::format("hetsim: {} error(s) in {}; nothing computed\n", r.errors().size(), c.scenario);
    return rc;
  }
  sc = std::move(*r);
  return kExitOk;
}

// Loads the scenario and the plan to evaluate: --plan if given, else the scenario's [parallel].
int load(const Common& c, hetsim::Scenario& sc, hetsim::plan::Plan& plan) {
  if (int rc = load_scenario(c, sc)) return rc;
  auto p = hetsim::api::plan_to_run(sc, c.plan_file, c.command);
  if (!p) return fail(c, p.errors());
  plan = std::move(*p);
  return kExitOk;
}

// A plan that does not fit: its report on stdout (the JSON, with "fits": false, under --json),
// why on stderr, no output file (a plan that does not fit is not an answer); exit 3.
int does_not_fit(const Common& c, const hetsim::analytic::Estimate& est, const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  for (const auto& d : est.device_types)
    if (!d.fits)
      std::cerr << hetsim::to_string(about(c.scenario, "", fmt::format("plan does not fit in memory on pool '{}' ({}): needs {} of {} ({})",
                                                                      d.pool, d.device, hetsim::format_bytes(d.peak_memory),
                                                                      hetsim::format_bytes(d.capacity), d.worst_stage),
                                           "", hetsim::ErrorKind::DoesNotFit))
                << "\n";
  std::cerr << "  hint: more pipeline or tensor parallelism, recompute = \"selective\" (with more recompute_modules) or "
               "\"full\", a higher zero stage, or a smaller micro_batch; [memory] says what the framework keeps "
               "(gradient_bytes, optimizer_bytes)\n";
  return hetsim::exit_status(hetsim::ErrorKind::DoesNotFit);
}

// Reports a plan that does not fit or writes the outputs: -o (or stdout), --save-plan and
// `extra` (the trace) land together or not at all.
int finish(const Common& c, const hetsim::Scenario& sc, const hetsim::plan::Plan& plan,
           const hetsim::analytic::Estimate& est, const std::string& text,
           std::vector<hetsim::io::OutputFile> extra = {}) {
  if (!est.fits) return does_not_fit(c, est, text);
  std::vector<hetsim::io::OutputFile> files = std::move(extra);
  if (!c.save_plan.empty()) files.push_back({c.save_plan, hetsim::io::plan_to_json(sc, plan)});
  if (!c.output.empty()) files.push_back({c.output, text});
  if (auto errs = hetsim::io::write_files_atomic(files); !errs.empty()) return fail(c, errs);
  if (c.output.empty()) std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

int run_estimate(const Common& c) {
  hetsim::Scenario sc;
  hetsim::plan::Plan plan;
  if (int rc = load(c, sc, plan)) return rc;
  const auto est = hetsim::analytic::estimate(sc, plan);
  // With [variability], the closed form over sampled steps (docs/scenario-format.md#variability).
  const auto sampled = hetsim::api::sample_estimate(sc, plan, est);
  constexpr auto kClosedForm = hetsim::report::SampledBy::ClosedForm;
  std::string text;
  if (c.json) {
    auto j = hetsim::report::estimate_object(sc, plan, est);
    if (c.ops) j["ops"] = hetsim::report::ops_json(hetsim::analytic::op_breakdown(sc, plan));
    if (sampled) j["variability"] = hetsim::report::variability_json(sc, *sampled, kClosedForm);
    text = j.dump(2) + "\n";
  } else {
    text = hetsim::report::estimate_text(sc, plan, est);
    if (c.ops) text += hetsim::report::ops_text(hetsim::analytic::op_breakdown(sc, plan));
    if (sampled) text += hetsim::report::variability_text(sc, *sampled, kClosedForm);
  }
  return finish(c, sc, plan, est, text);
}

int run_simulate(const Common& c, const std::string& trace_file, const std::string& engine) {
  hetsim::Scenario sc;
  hetsim::plan::Plan plan;
  if (int rc = load(c, sc, plan)) return rc;
  hetsim::api::SimulateOptions opts;
  opts.engine = engine == "simgrid" ? hetsim::api::Engine::SimGrid : hetsim::api::Engine::Native;
  opts.note = [](const std::string& n) { std::cerr << n << "\n"; };
  auto run = hetsim::api::simulate(sc, plan, opts);
  if (!run) return fail(c, run.errors());
  const hetsim::report::Simulation& sim = run->sim;
  const hetsim::report::SimgridReport* sg = run->simgrid ? &*run->simgrid : nullptr;
  const std::string text = c.json ? hetsim::report::simulate_json(sc, plan, sim, sg)
                                  : hetsim::report::simulate_text(sc, plan, sim, sg);
  // The trace lands with the other outputs or none of them does.
  std::vector<hetsim::io::OutputFile> extra;
  if (!trace_file.empty() && sim.simulated.fits)
    extra.push_back({trace_file, hetsim::report::chrome_trace(sc, sim.graph, sim.trace)});
  return finish(c, sc, plan, sim.simulated, text, std::move(extra));
}

int run_plan(const Common& c, int top, int verify, const std::string& objective, bool same_vendor,
             const std::string& rank_by) {
  hetsim::Scenario sc;
  if (int rc = load_scenario(c, sc)) return rc;
  hetsim::planner::Options opts;
  if (!rank_by.empty()) opts.rank_percentile = hetsim::io::parse_rank_by(rank_by);
  opts.objective = objective == "cost" ? hetsim::planner::Objective::Cost : hetsim::planner::Objective::Time;
  opts.top = top;
  opts.same_vendor = same_vendor;
  opts.verify = std::max(verify, top);
  const bool bar = isatty(fileno(stderr)) != 0;
  if (bar)
    opts.progress = [](double f) {
      std::fprintf(stderr, "\rsearching plans [%-30s] %3.0f %%", std::string(static_cast<std::size_t>(f * 30), '#').c_str(),
                   100 * f);
      std::fflush(stderr);
    };
  const auto t0 = std::chrono::steady_clock::now();
  auto planned = hetsim::api::plan(sc, opts);
  if (!planned) return fail(c, planned.errors());
  for (const auto& n : planned->notes) std::cerr << c.scenario << ": note: " << n << "\n";
  const hetsim::planner::Result& result = planned->result;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (bar) std::fprintf(stderr, "\r%60s\rsearched in %.2f s\n", "", seconds);
  if (result.top.empty()) {
    // The search's report says so (under --json: "fits": false); no output file.
    if (c.json) std::cout << hetsim::report::plan_json_none_fits(sc, result, opts.objective) << std::flush;
    std::cerr << hetsim::to_string(about(c.scenario, "", fmt::format("no plan fits this cluster's memory ({} plans tried)", result.evaluated),
                                         hetsim::report::no_plan_hint(sc), hetsim::ErrorKind::DoesNotFit))
              << "\n";
    return hetsim::exit_status(hetsim::ErrorKind::DoesNotFit);
  }
  // The winner's report is a simulation of its step: refused, as `simulate` refuses it, when
  // that step is too large to simulate.
  if (const double n = hetsim::schedule::estimated_tasks(sc, result.top.front().plan); n > hetsim::api::kMaxSimulatedTasks)
    return fail(c, {about(c.scenario, "training.global_batch",
                          fmt::format("the best plan's step would have about {:.3g} tasks, more than the {:.3g} "
                                      "this command simulates for its report",
                                      n, hetsim::api::kMaxSimulatedTasks),
                          "a smaller global_batch for the search (the plan scales with it), or `hetsim estimate` "
                          "with a [parallel] plan")});
  // With [variability], the winner's report shows its sampled steps too.
  auto best = hetsim::api::simulate(sc, result.top.front().plan);
  if (!best) return fail(c, best.errors());
  const std::string text = c.json ? hetsim::report::plan_json(sc, result, best->sim, opts.objective, seconds)
                                  : hetsim::report::plan_text(sc, result, best->sim, opts.objective, seconds);
  return finish(c, sc, result.top.front().plan, best->sim.simulated, text);
}

// Ctrl-C during `buy`: the first one stops the search, which reports (and writes) the front
// found so far and exits 130; a second one ends the process as usual.
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_interrupt(int) {
  g_interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

struct BuyArgs {
  int verify = 3;
  bool any_vendor = false;
  bool exhaustive = false;
  std::size_t top = 0;
  std::string csv, out_dir;
};

// The files of --csv and --out DIR, and -o's report, written together (all or none); stale
// point files of an earlier, longer front in DIR are removed after.
int write_buy_outputs(const Common& c, const BuyArgs& a, const hetsim::Scenario& sc, const hetsim::buy::Result& r,
                      const std::string& text) {
  std::vector<hetsim::io::OutputFile> files;
  if (!a.csv.empty()) files.push_back({a.csv, hetsim::report::buy_csv(sc, r)});
  bool created = false;
  if (!a.out_dir.empty()) {
    auto source = hetsim::io::read_input_file(c.scenario, "scenario file");
    if (!source) return fail(c, source.errors());
    auto out = hetsim::api::buy_files(sc, *source, r, a.out_dir);
    if (!out) return fail(c, out.errors());
    std::error_code ec;
    if (!std::filesystem::exists(a.out_dir, ec)) {
      created = std::filesystem::create_directory(a.out_dir, ec);
      if (ec)
        return fail(c, {about(a.out_dir, "--out", "cannot create the folder: " + ec.message(), "",
                              hetsim::ErrorKind::Environment)});
    }
    for (auto& f : *out) files.push_back(std::move(f));
  }
  if (!c.output.empty()) files.push_back({c.output, text});
  if (auto errs = hetsim::io::write_files_atomic(files); !errs.empty()) {
    std::error_code ec;
    if (created) std::filesystem::remove(a.out_dir, ec);
    return fail(c, errs);
  }
  if (!a.out_dir.empty()) {
    // point-N.toml / point-N.plan.json with N beyond this front: an earlier run's.
    std::error_code ec;
    std::vector<std::filesystem::path> stale;
    for (const auto& e : std::filesystem::directory_iterator(a.out_dir, ec)) {
      const std::string f = e.path().filename().string();
      if (f.rfind("point-", 0) != 0) continue;
      std::size_t n = 0;
      const char* end = f.data() + f.size();
      const auto [rest, bad] = std::from_chars(f.data() + 6, end, n);
      const std::string_view ext(rest, static_cast<std::size_t>(end - rest));
      if (bad == std::errc() && (ext == ".toml" || ext == ".plan.json") && n > r.front.size()) stale.push_back(e.path());
    }
    for (const auto& p : stale) std::filesystem::remove(p, ec);
  }
  if (c.output.empty()) std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

int run_buy(const Common& c, const BuyArgs& a) {
  hetsim::Scenario sc;
  if (int rc = load_scenario(c, sc)) return rc;
  std::stop_source stop;
  std::signal(SIGINT, on_interrupt);
  // A watcher turns the signal into a stop request (request_stop is not for signal handlers).
  std::jthread watcher([&stop](std::stop_token done) {
    while (!done.stop_requested() && !stop.stop_requested()) {
      if (g_interrupted) {
        stop.request_stop();
        std::fputs("\ninterrupted: finishing the compositions being planned, then the front so far\n", stderr);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  hetsim::buy::Options opts;
  opts.stop = stop.get_token();
  opts.verify = a.verify;
  opts.same_vendor = !a.any_vendor;
  opts.exhaustive = a.exhaustive;
  const bool bar = isatty(fileno(stderr)) != 0;
  // Both callbacks run on this thread, during api::buy below: the bar shows the front found so
  // far as it grows.
  std::string sofar;
  if (bar) {
    opts.progress = [&sofar](double f) {
      std::fprintf(stderr, "\rsearching compositions [%-30s] %3.0f %%%s",
                   std::string(static_cast<std::size_t>(f * 30), '#').c_str(), 100 * f, sofar.c_str());
      std::fflush(stderr);
    };
    opts.on_front = [&sofar](const std::vector<hetsim::buy::Point>& front) {
      sofar = fmt::format("  front so far: {} point{}, fastest {} ", front.size(), front.size() == 1 ? "" : "s",
                           hetsim::format_duration(hetsim::Duration{front.front().trained_in_s}));
    };
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto r = hetsim::api::buy(sc, opts);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (bar) std::fprintf(stderr, "\r%110s\r", "");
  if (!r) return fail(c, r.errors());
  const std::string text =
      c.json ? hetsim::report::buy_json(sc, *r, seconds) : hetsim::report::buy_text(sc, *r, seconds, a.top);
  if (r->front.empty()) {
    // The report says what was searched; no output file (nothing to buy is not an answer).
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::cerr << hetsim::to_string(about(c.scenario, "purchase",
                                         fmt::format("no composition of the candidates has a plan that fits within "
                                                     "the limits ({} compositions, {} planned)",
                                                     r->compositions, r->planned),
                                         r->smallest_fit ? "the smallest composition that would fit is in the report "
                                                           "(\"smallest that would fit\"); raise the limit it names"
                                         : sc.framework.pipeline_runs > 1
                                             ? "a larger budget or power limit, more max_nodes, devices with more memory; " +
                                                   hetsim::report::no_plan_hint(sc)
                                             : "a larger budget or power limit, more max_nodes, or devices with more memory",
                                         hetsim::ErrorKind::DoesNotFit))
              << "\n";
    return hetsim::exit_status(hetsim::ErrorKind::DoesNotFit);
  }
  const int rc = write_buy_outputs(c, a, sc, *r, text);
  return rc == kExitOk && r->stopped ? 128 + SIGINT : rc;
}

}  // namespace

// `hetsim exec …` runs `hetsim-exec …` from the same directory (git-style).
int forward_to_exec(int argc, char** argv) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto exe = (ec ? std::filesystem::path(argv[0]) : self).parent_path() / "hetsim-exec";
  std::vector<char*> args{const_cast<char*>(exe.c_str())};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(exe.c_str(), args.data());
  std::cerr << fmt::format("hetsim: error: cannot run {}: {}\n", exe.string(), std::strerror(errno));
  return kExitEnvironment;
}

// The platform file: every host and link, and the routes of the pairs the plan's step uses.
int run_platform(const Common& c) {
  hetsim::Scenario sc;
  hetsim::plan::Plan plan;
  if (int rc = load(c, sc, plan); rc != kExitOk) return rc;
  const auto pf = hetsim::platform::build(sc.cluster);
  if (auto d = hetsim::report::beyond_the_clock(sc, hetsim::analytic::estimate(sc, plan).step_time.v))
    return fail(c, hetsim::Diagnostics{*d});
  const auto g = hetsim::schedule::build_schedule(sc, plan);
  auto d = hetsim::platform::decompose(g, sc.cluster, pf);
  if (!d) return fail(c, d.errors());
  std::vector<std::pair<int, int>> pairs;
  for (const auto& w : d->work)
    for (const auto& f : w.flows) pairs.emplace_back(f.src, f.dst);
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  if (pairs.empty() && pf.hosts.size() > 1) pairs.emplace_back(0, 1);  // one route, so the file is usable
  return emit(c, hetsim::platform::to_xml(pf, pairs));
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "exec") return forward_to_exec(argc, argv);
  CLI::App app{"hetsim: predicts how a large-model training job runs on a heterogeneous cluster.\n"
               "Scenario format: docs/scenario-format.md. `hetsim exec …` runs hetsim-exec (real execution). "
               "Exit status: 0 ok, 1 environment error, "
               "2 bad input, 3 plan does not fit in memory, 4 internal error (a bug). With --json, stdout is one "
               "JSON document in every outcome: the report, or {\"error\": …} (docs/formats.md)."};
  app.set_version_flag("--version", std::string("hetsim ") + HETSIM_VERSION);
  app.require_subcommand(1);

  Common cat_opts;
  cat_opts.command = "catalog";
  auto* cat = app.add_subcommand("catalog", "List the built-in devices and links");
  cat->add_flag("--json", cat_opts.json, "Print JSON (every figure with its source) instead of a table");
  cat->add_option("-o,--output", cat_opts.output, "Write to this file (atomically) instead of stdout")->check(kOutputPath);

  Common est_opts;
  est_opts.command = "estimate";
  auto* est = app.add_subcommand("estimate",
                                 "Analytical estimate of a plan: step time and its breakdown, "
                                 "throughput, MFU, memory per device, time and cost to train");
  est->add_option("scenario", est_opts.scenario, "Scenario TOML file")->required();
  est->add_option("--plan", est_opts.plan_file, "Plan JSON to use instead of the scenario's [parallel]");
  est->add_flag("--json", est_opts.json, "Print one JSON object (docs/formats.md) instead of a table");
  est->add_option("-o,--output", est_opts.output, "Write to this file (atomically) instead of stdout")->check(kOutputPath);
  est->add_option("--save-plan", est_opts.save_plan, "Also write the plan as JSON (docs/formats.md#plan-json)")->check(kOutputPath);
  est->add_flag("--ops", est_opts.ops,
                "Also show every op of one micro-batch per distinct stage: forward and backward time, "
                "achieved TFLOP/s, bytes and what binds it (JSON: an \"ops\" array)");

  Common sim_opts;
  sim_opts.command = "simulate";
  std::string trace_file;
  auto* sim = app.add_subcommand("simulate",
                                 "Discrete-event simulation of one training step of a plan: the "
                                 "estimate's figures measured from a timeline, pipeline bubble, "
                                 "exposed communication, utilisation, memory over time");
  sim->add_option("scenario", sim_opts.scenario, "Scenario TOML file")->required();
  sim->add_option("--plan", sim_opts.plan_file, "Plan JSON to use instead of the scenario's [parallel]");
  sim->add_flag("--json", sim_opts.json, "Print one JSON object (docs/formats.md) instead of a table");
  sim->add_option("-o,--output", sim_opts.output, "Write to this file (atomically) instead of stdout")->check(kOutputPath);
  sim->add_option("--trace", trace_file, "Write a Chrome/Perfetto trace JSON of the step to this file")->check(kOutputPath);
  sim->add_option("--save-plan", sim_opts.save_plan, "Also write the plan as JSON (docs/formats.md#plan-json)")->check(kOutputPath);
  std::string engine = "native";
  sim->add_option("--engine", engine,
                  "native (fast, each collective priced alone) or simgrid (SimGrid's flow model: links shared by "
                  "concurrent flows slow them down; names the contended links)")
      ->check(CLI::IsMember({"native", "simgrid"}))
      ->default_val("native");

  Common plat_opts;
  plat_opts.command = "platform";
  auto* plat = app.add_subcommand("platform",
                                  "Write the scenario's cluster as a SimGrid platform file (hosts, links, routes) "
                                  "for other SimGrid tools: the platform `simulate --engine simgrid` runs on");
  plat->add_option("scenario", plat_opts.scenario, "Scenario TOML file")->required();
  plat->add_option("--plan", plat_opts.plan_file, "Plan JSON: routes of the pairs its step uses");
  plat->add_option("-o,--output", plat_opts.output, "Write to this file (atomically) instead of stdout")->check(kOutputPath);

  Common plan_opts;
  plan_opts.command = "plan";
  int top = 5, verify = 10;
  std::string objective = "time";
  auto* pln = app.add_subcommand("plan",
                                 "Search the best plan for the scenario's cluster (uneven layer and batch "
                                 "splits across device types), verify it by simulation, and compare it "
                                 "with the plans a homogeneous framework would use");
  pln->add_option("scenario", plan_opts.scenario, "Scenario TOML file (of [parallel], only the framework keys count: "
                   "sequence_parallel, grad_sync, the overlaps, ep_dispatch, fp8_dispatch, cp_comm, pipeline_runs, "
                   "recompute_modules)")->required();
  pln->add_option("--top", top, "How many plans to list")->check(CLI::Range(1, 100))->default_val(5);
  pln->add_option("--verify", verify, "How many of the best estimates to re-rank by simulation")
      ->check(CLI::Range(1, 1000))
      ->default_val(10);
  std::string rank_by;
  pln->add_option("--rank-by", rank_by,
                  "With [variability]: rank by a percentile of the sampled steps (p50, p90, p99, …) or "
                  "by the nominal step; default: [variability] rank_by, else nominal")
      ->check([](const std::string& v) {
        return hetsim::io::parse_rank_by(v) < 0 ? std::string("expected nominal or p1 … p100") : std::string();
      });
  pln->add_option("--objective", objective, "Rank by step time or by cost per token")
      ->check(CLI::IsMember({"time", "cost"}))
      ->default_val("time");
  bool any_vendor = false, same_vendor_compat = false;
  pln->add_flag("--any-vendor", any_vendor,
                "Also plan pipelines and gradient syncs across vendors (labelled CROSS-VENDOR: NCCL and RCCL do "
                "not form one communicator); by default each plan keeps to one vendor's devices");
  // The default since vendor islands became it; still accepted so that older scripts run.
  // (Not `excludes`: CLI11 would print the hidden flag's empty name in --any-vendor's help.)
  pln->add_flag("--same-vendor", same_vendor_compat)->group("");
  pln->add_option("--out,--save-plan", plan_opts.save_plan,
                  "Write the best plan as JSON (input of simulate --plan; --save-plan as estimate and simulate name it)")
      ->check(kOutputPath);
  pln->add_flag("--json", plan_opts.json, "Print one JSON object (docs/formats.md#plan-search-json)");
  pln->add_option("-o,--output", plan_opts.output, "Write to this file (atomically) instead of stdout")->check(kOutputPath);

  Common buy_opts;
  buy_opts.command = "buy";
  BuyArgs buy_args;
  auto* buy = app.add_subcommand("buy",
                                 "Purchase planning: which [purchase] candidates to add to the owned pools; for each "
                                 "composition within the budget and power limit the best plan, and the Pareto front "
                                 "of total cost against the effective time to train (goodput included)");
  buy->add_option("scenario", buy_opts.scenario, "Scenario TOML file with a [purchase] table (of [parallel], only the "
                   "framework keys count, as for plan)")
      ->required();
  buy->add_option("--verify", buy_args.verify, "Plans re-ranked by simulation per composition")
      ->check(CLI::Range(1, 100))
      ->default_val(3);
  buy->add_flag("--any-vendor", buy_args.any_vendor,
                "Allow plans that pipeline or synchronise gradients across vendors (no common communicator such as "
                "NCCL/RCCL exists today; off by default)");
  buy->add_flag("--exhaustive", buy_args.exhaustive, "Plan every composition instead of pruning by bounds (slow; a check)");
  buy->add_flag("--json", buy_opts.json, "Print one JSON object (docs/formats.md#buy-json)");
  buy->add_option("-o,--output", buy_opts.output, "Write to this file (atomically) instead of stdout")->check(kOutputPath);
  buy->add_option("--top", buy_args.top,
                  "Rows of the front in the text table (the recommended point always; 0 = all; --json, --csv and "
                  "--out carry every point)")
      ->check(CLI::Range(0, 1000))
      ->default_val(0);
  buy->add_option("--csv", buy_args.csv, "Also write the front as CSV (docs/formats.md#buy-csv)")->check(kOutputPath);
  buy->add_option("--out", buy_args.out_dir,
                  "Write each front point's scenario and plan into this folder: point-N.toml + point-N.plan.json "
                  "(hetsim simulate point-N.toml --plan point-N.plan.json), and front.csv")
      ->check(kOutputDir);

  hetsim::cli::SweepArgs sweep_args;
  auto* swp = hetsim::cli::add_sweep_command(app, sweep_args);

  try {
    app.parse(argc, argv);
    if (any_vendor && same_vendor_compat) throw CLI::ExcludesError("--same-vendor", "--any-vendor");
  } catch (const CLI::ParseError& e) {
    return hetsim::cli::parse_failed(app, e, argc, argv);
  }
  if (*cat) return run_catalog(cat_opts);
  if (*est) return run_estimate(est_opts);
  if (*sim) return run_simulate(sim_opts, trace_file, engine);
  if (*plat) return run_platform(plat_opts);
  if (*pln) return run_plan(plan_opts, top, verify, objective, !any_vendor, rank_by);
  if (*buy) return run_buy(buy_opts, buy_args);
  if (*swp) return hetsim::cli::run_sweep(sweep_args);
  return kExitBadInput;
}
