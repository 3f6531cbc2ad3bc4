// hetsim: the command-line front end. Thin: parses arguments, calls sim/'s public functions,
// prints, and decides the exit status (0 ok, 1 environment, 2 bad input — a missing or unreadable
// scenario file included, since it is the user's argument — 3 plan does not fit).

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>
#include <cstdio>
#include <iostream>

#include "sim/analytic/estimate.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/plan_json.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/plan/planner.hpp"
#include "sim/report/plan_report.hpp"
#include "sim/report/estimate_report.hpp"
#include "sim/report/simulation_report.hpp"
#include "sim/schedule/schedule.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitEnvironment = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitDoesNotFit = 3;

void print_diagnostics(const hetsim::Diagnostics& d) {
  for (const auto& x : d) std::cerr << hetsim::to_string(x) << "\n";
}

// Prints to stdout, or writes `output` atomically when given.
int emit(const std::string& text, const std::string& output) {
  if (output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  auto errs = hetsim::io::write_file_atomic(output, text);
  if (!errs.empty()) {
    print_diagnostics(errs);
    return kExitEnvironment;
  }
  return kExitOk;
}

int run_catalog(bool json, const std::string& output) {
  auto cat = hetsim::io::builtin_catalog();
  if (!cat) {
    print_diagnostics(cat.errors());
    return kExitEnvironment;
  }
  return emit(json ? hetsim::report::catalog_json(*cat) : hetsim::report::catalog_text(*cat), output);
}

struct Common {
  std::string command;
  std::string scenario, plan_file, output, save_plan;
  bool json = false;
};

// Reads a scenario against the built-in catalogue; prints diagnostics and returns the exit
// status on failure.
int load_scenario(const std::string& file, hetsim::Scenario& sc) {
  auto cat = hetsim::io::builtin_catalog();
  if (!cat) {
    print_diagnostics(cat.errors());
    return kExitEnvironment;
  }
  auto r = hetsim::io::read_scenario(file, *cat);
  if (!r) {
    print_diagnostics(r.errors());
    std::cerr << fmt::format("hetsim: {} error(s) in {}; nothing computed\n", r.errors().size(), file);
    return kExitBadInput;
  }
  sc = std::move(*r);
  return kExitOk;
}

// Loads the scenario and the plan to evaluate: --plan if given, else the scenario's [parallel].
int load(const Common& c, hetsim::Scenario& sc, hetsim::plan::Plan& plan) {
  if (int rc = load_scenario(c.scenario, sc)) return rc;
  if (!c.plan_file.empty()) {
    auto p = hetsim::io::read_plan_json(c.plan_file, sc);
    if (!p) {
      print_diagnostics(p.errors());
      return kExitBadInput;
    }
    plan = std::move(*p);
  } else if (sc.plan) {
    plan = *sc.plan;
  } else {
    std::cerr << fmt::format(
        "{}: error: `hetsim {}` needs a fixed plan\n  hint: add a [parallel] table (tp, pp, dp, "
        "micro_batch, …; see docs/scenario-format.md) or give --plan PLAN.json\n",
        c.scenario, c.command);
    return kExitBadInput;
  }
  return kExitOk;
}

// Reports a plan that does not fit (exit 3, no output file) or writes the output.
int finish(const Common& c, const hetsim::Scenario& sc, const hetsim::plan::Plan& plan,
           const hetsim::analytic::Estimate& est, const std::string& text) {
  if (!est.fits) {
    // Show why, but write no output file: a plan that does not fit is not an answer.
    std::fwrite(text.data(), 1, text.size(), c.json ? stderr : stdout);
    for (const auto& d : est.device_types)
      if (!d.fits)
        std::cerr << fmt::format("{}: error: plan does not fit in memory on pool '{}' ({}): needs {} of {} ({})\n",
                                 c.scenario, d.pool, d.device, hetsim::format_bytes(d.peak_memory),
                                 hetsim::format_bytes(d.capacity), d.worst_stage);
    std::cerr << "  hint: more pipeline or tensor parallelism, recompute = \"selective\" or \"full\", "
                 "a higher zero stage, or a smaller micro_batch\n";
    return kExitDoesNotFit;
  }
  if (!c.save_plan.empty()) {
    auto errs = hetsim::io::write_file_atomic(c.save_plan, hetsim::io::plan_to_json(sc, plan));
    if (!errs.empty()) {
      print_diagnostics(errs);
      return kExitEnvironment;
    }
  }
  return emit(text, c.output);
}

int run_estimate(const Common& c) {
  hetsim::Scenario sc;
  hetsim::plan::Plan plan;
  if (int rc = load(c, sc, plan)) return rc;
  const auto est = hetsim::analytic::estimate(sc, plan);
  const std::string text = c.json ? hetsim::report::estimate_json(sc, plan, est)
                                  : hetsim::report::estimate_text(sc, plan, est);
  return finish(c, sc, plan, est, text);
}

int run_simulate(const Common& c, const std::string& trace_file) {
  hetsim::Scenario sc;
  hetsim::plan::Plan plan;
  if (int rc = load(c, sc, plan)) return rc;
  // Refuse a step too large to hold in memory, before trying (about 100 bytes per task).
  constexpr double kMaxTasks = 20e6;
  if (const double n = hetsim::schedule::estimated_tasks(sc, plan); n > kMaxTasks) {
    std::cerr << fmt::format(
        "{}: error: the simulated step would have about {:.3g} tasks, more than the {:.3g} this "
        "command simulates\n  hint: fewer micro-batches per replica (a larger micro_batch), or "
        "`hetsim estimate` for the closed-form answer\n",
        c.scenario, n, kMaxTasks);
    return kExitBadInput;
  }
  auto run = hetsim::report::run_simulation(sc, plan);
  if (!run) {
    print_diagnostics(run.errors());
    return kExitEnvironment;
  }
  const hetsim::report::Simulation& sim = *run;
  const std::string text = c.json ? hetsim::report::simulate_json(sc, plan, sim)
                                  : hetsim::report::simulate_text(sc, plan, sim);
  // The trace is written last, only when everything else was: a failed run leaves no files.
  if (int rc = finish(c, sc, plan, sim.simulated, text); rc != kExitOk) return rc;
  if (!trace_file.empty()) {
    auto errs = hetsim::io::write_file_atomic(trace_file, hetsim::report::chrome_trace(sc, sim.graph, sim.trace));
    if (!errs.empty()) {
      print_diagnostics(errs);
      return kExitEnvironment;
    }
  }
  return kExitOk;
}

int run_plan(const Common& c, int top, int verify, const std::string& objective, bool same_vendor) {
  hetsim::Scenario sc;
  if (int rc = load_scenario(c.scenario, sc)) return rc;
  hetsim::planner::Options opts;
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
  const auto result = hetsim::planner::search(sc, opts);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (bar) std::fprintf(stderr, "\r%60s\rsearched in %.2f s\n", "", seconds);
  if (result.top.empty()) {
    std::cerr << fmt::format(
        "{}: error: no plan fits this cluster's memory ({} plans tried)\n  hint: more devices, devices with more "
        "memory, a shorter seq_len or a smaller global_batch\n",
        c.scenario, result.evaluated);
    return kExitDoesNotFit;
  }
  auto best = hetsim::report::run_simulation(sc, result.top.front().plan);
  if (!best) {
    print_diagnostics(best.errors());
    return kExitEnvironment;
  }
  const std::string text = c.json ? hetsim::report::plan_json(sc, result, *best, opts.objective, seconds)
                                  : hetsim::report::plan_text(sc, result, *best, opts.objective, seconds);
  return finish(c, sc, result.top.front().plan, best->simulated, text);
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

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "exec") return forward_to_exec(argc, argv);
  CLI::App app{"hetsim: predicts how a large-model training job runs on a heterogeneous cluster.\n"
               "Scenario format: docs/scenario-format.md. `hetsim exec …` runs hetsim-exec (real execution). "
               "Exit status: 0 ok, 1 environment error, "
               "2 bad input, 3 plan does not fit in memory."};
  app.set_version_flag("--version", std::string("hetsim ") + HETSIM_VERSION);
  app.require_subcommand(1);

  bool cat_json = false;
  std::string cat_out;
  auto* cat = app.add_subcommand("catalog", "List the built-in devices and links");
  cat->add_flag("--json", cat_json, "Print JSON (every figure with its source) instead of a table");
  cat->add_option("-o,--output", cat_out, "Write to this file (atomically) instead of stdout");

  Common est_opts;
  est_opts.command = "estimate";
  auto* est = app.add_subcommand("estimate",
                                 "Analytical estimate of a plan: step time and its breakdown, "
                                 "throughput, MFU, memory per device, time and cost to train");
  est->add_option("scenario", est_opts.scenario, "Scenario TOML file")->required();
  est->add_option("--plan", est_opts.plan_file, "Plan JSON to use instead of the scenario's [parallel]");
  est->add_flag("--json", est_opts.json, "Print one JSON object (docs/formats.md) instead of a table");
  est->add_option("-o,--output", est_opts.output, "Write to this file (atomically) instead of stdout");
  est->add_option("--save-plan", est_opts.save_plan, "Also write the plan as JSON (docs/formats.md#plan-json)");

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
  sim->add_option("-o,--output", sim_opts.output, "Write to this file (atomically) instead of stdout");
  sim->add_option("--trace", trace_file, "Write a Chrome/Perfetto trace JSON of the step to this file");
  sim->add_option("--save-plan", sim_opts.save_plan, "Also write the plan as JSON (docs/formats.md#plan-json)");

  Common plan_opts;
  plan_opts.command = "plan";
  int top = 5, verify = 10;
  std::string objective = "time";
  auto* pln = app.add_subcommand("plan",
                                 "Search the best plan for the scenario's cluster (uneven layer and batch "
                                 "splits across device types), verify it by simulation, and compare it "
                                 "with the plans a homogeneous framework would use");
  pln->add_option("scenario", plan_opts.scenario, "Scenario TOML file ([parallel] is ignored)")->required();
  pln->add_option("--top", top, "How many plans to list")->check(CLI::Range(1, 100))->default_val(5);
  pln->add_option("--verify", verify, "How many of the best estimates to re-rank by simulation")
      ->check(CLI::Range(1, 1000))
      ->default_val(10);
  pln->add_option("--objective", objective, "Rank by step time or by cost per token")
      ->check(CLI::IsMember({"time", "cost"}))
      ->default_val("time");
  bool same_vendor = false;
  pln->add_flag("--same-vendor", same_vendor,
                "Never pipeline or synchronise gradients between devices of different vendors (no common "
                "communicator such as NCCL/RCCL)");
  pln->add_option("--out", plan_opts.save_plan, "Write the best plan as JSON (input of simulate --plan)");
  pln->add_flag("--json", plan_opts.json, "Print one JSON object (docs/formats.md#plan-search-json)");
  pln->add_option("-o,--output", plan_opts.output, "Write to this file (atomically) instead of stdout");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  if (*cat) return run_catalog(cat_json, cat_out);
  if (*est) return run_estimate(est_opts);
  if (*sim) return run_simulate(sim_opts, trace_file);
  if (*pln) return run_plan(plan_opts, top, verify, objective, same_vendor);
  return kExitBadInput;
}
