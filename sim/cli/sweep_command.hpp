#pragma once
// `hetsim sweep FILE [--jobs N] [--out results.csv|results.jsonl] [--resume] [--json]
// [--plot FILE.svg …]`: every point of the scenario's [sweep] (docs/scenario-format.md#sweep),
// validated first, then run on N threads; one row per point, written in point order as each is
// ready, so that an interrupted sweep leaves a valid file that --resume completes. Under
// mpirun, rank 0 hands the points out to the ranks (sim/sweep/distributed.hpp).

#include <CLI/CLI.hpp>

#include <string>

namespace hetsim::cli {

struct SweepArgs {
  std::string scenario;
  int jobs = 1;
  std::string out;
  bool resume = false;
  bool json = false;
  std::string plot;
  std::string plot_y = "step_s";
  std::string plot_x, plot_by;
  bool heatmap = false;
  long point = -1;  ///< hidden: run this one point and print its row as JSON (a SimGrid child)
};

/// Registers the `sweep` subcommand on `app`, filling `args` when it is parsed.
CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args);

/// Runs the sweep; the process's exit status (0 done, 2 bad input, 130 interrupted, …).
int run_sweep(const SweepArgs& args);

}  // namespace hetsim::cli
