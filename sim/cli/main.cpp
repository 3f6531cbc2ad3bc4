// hetsim: the command-line front end. Thin: parses arguments, calls sim/'s public functions,
// prints, and decides the exit status (0 ok, 1 environment, 2 bad input — a missing or unreadable
// scenario file included, since it is the user's argument — 3 plan does not fit).

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include "sim/analytic/estimate.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/report/estimate_report.hpp"

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

int run_estimate(const std::string& file, bool json, const std::string& output) {
  auto cat = hetsim::io::builtin_catalog();
  if (!cat) {
    print_diagnostics(cat.errors());
    return kExitEnvironment;
  }
  auto sc = hetsim::io::read_scenario(file, *cat);
  if (!sc) {
    print_diagnostics(sc.errors());
    std::cerr << fmt::format("hetsim: {} error(s) in {}; nothing estimated\n", sc.errors().size(), file);
    return kExitBadInput;
  }
  if (!sc->plan) {
    std::cerr << fmt::format(
        "{}: error: `hetsim estimate` needs a fixed plan\n  hint: add a [parallel] table (tp, pp, dp, "
        "micro_batch, …; see docs/scenario-format.md)\n",
        file);
    return kExitBadInput;
  }
  const auto est = hetsim::analytic::estimate(*sc, *sc->plan);
  const std::string text = json ? hetsim::report::estimate_json(*sc, *sc->plan, est)
                                : hetsim::report::estimate_text(*sc, *sc->plan, est);
  if (!est.fits) {
    // Show why, but write no output file: a plan that does not fit is not an answer.
    std::fwrite(text.data(), 1, text.size(), json ? stderr : stdout);
    for (const auto& d : est.device_types)
      if (!d.fits)
        std::cerr << fmt::format("{}: error: plan does not fit in memory on pool '{}' ({}): needs {} of {} ({})\n",
                                 file, d.pool, d.device, hetsim::format_bytes(d.peak_memory),
                                 hetsim::format_bytes(d.capacity), d.worst_stage);
    std::cerr << "  hint: more pipeline or tensor parallelism, recompute = \"selective\" or \"full\", "
                 "a higher zero stage, or a smaller micro_batch\n";
    return kExitDoesNotFit;
  }
  return emit(text, output);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hetsim: predicts how a large-model training job runs on a heterogeneous cluster.\n"
               "Scenario format: docs/scenario-format.md. Exit status: 0 ok, 1 environment error, "
               "2 bad input, 3 plan does not fit in memory."};
  app.set_version_flag("--version", std::string("hetsim ") + HETSIM_VERSION);
  app.require_subcommand(1);

  bool cat_json = false;
  std::string cat_out;
  auto* cat = app.add_subcommand("catalog", "List the built-in devices and links");
  cat->add_flag("--json", cat_json, "Print JSON (every figure with its source) instead of a table");
  cat->add_option("-o,--output", cat_out, "Write to this file (atomically) instead of stdout");

  bool est_json = false;
  std::string est_file, est_out;
  auto* est = app.add_subcommand("estimate",
                                 "Analytical estimate of a scenario's fixed plan: step time and its "
                                 "breakdown, throughput, MFU, memory per device, time and cost to train");
  est->add_option("scenario", est_file, "Scenario TOML file")->required();
  est->add_flag("--json", est_json, "Print one JSON object (docs/formats.md) instead of a table");
  est->add_option("-o,--output", est_out, "Write to this file (atomically) instead of stdout");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  if (*cat) return run_catalog(cat_json, cat_out);
  if (*est) return run_estimate(est_file, est_json, est_out);
  return kExitBadInput;
}
