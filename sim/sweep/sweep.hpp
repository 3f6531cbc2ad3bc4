#pragma once
// Running a sweep (docs/scenario-format.md#sweep): every point of a SweepDocument validated
// first, then run through sim/api on N threads, each point's figures one Row, encoded on the
// thread that ran it (sim/sweep/rows.hpp: Encoding, Finished) and delivered in point order
// whatever order the threads finish in. No printing, no files: the CLI writes the rows.

#include <cstddef>
#include <functional>
#include <map>
#include <stop_token>
#include <string>
#include <vector>

#include "models/base/result.hpp"
#include "sim/io/sweep_reader.hpp"
#include "sim/sweep/row.hpp"
#include "sim/sweep/rows.hpp"

namespace hetsim::sweep {

/// Runs point `i` of `doc` (its command, engine, objective) in this thread.
/// Requires: i < doc.spec().points. SimGrid runs one simulation per process: a sweep with
/// `engine = "simgrid"` needs `RunOptions::runner` to run each point elsewhere (the CLI runs
/// each in a child process); here such a point is an Environment error after its first.
[[nodiscard]] Row run_point(const io::SweepDocument& doc, std::size_t i);

/// The outcome of checking every point before any runs.
struct Validation {
  Diagnostics errors;            ///< of the first `max_reported` invalid points, in point order
  std::vector<std::size_t> error_points;  ///< the point each of `errors` is about
  std::size_t invalid = 0;       ///< points that are not valid scenarios
  std::vector<std::string> pools;  ///< the pool names of point 0 (the rows' pool columns)
  bool variability = false;        ///< point 0 has [variability] (the rows' percentile columns)
};

/// The points one of several processes checks: those with i % of == index (under mpirun, each
/// rank its own).
struct Share {
  std::size_t index = 0, of = 1;
};

/// Reads every point's scenario of `share` (and, for estimate and simulate, its [parallel] plan)
/// on `jobs` threads. Deterministic: the same errors whatever `jobs`. pools and variability are
/// point 0's, so only share 0 has them.
[[nodiscard]] Validation validate(const io::SweepDocument& doc, int jobs, std::size_t max_reported = 20,
                                  Share share = {});

/// The validation of every point from those of the shares (any order): what validate() of all
/// the points gives, its errors those of the first `max_reported` invalid points of all shares.
[[nodiscard]] Validation merge(std::vector<Validation> shares, std::size_t max_reported = 20);

struct RunOptions {
  int jobs = 1;
  std::size_t first = 0;  ///< points before it are done already (--resume): not run
  /// What each row is delivered as (encoding.layout.spec must be the document's spec).
  Encoding encoding;
  /// Called for each row in point order, on the thread that called run().
  std::function<void(const Finished&)> on_row;
  /// Runs one point instead of run_point (the CLI's child process for SimGrid); may be empty.
  std::function<Row(std::size_t)> runner;
  std::stop_token stop;  ///< asked, no new point starts; rows already run are still delivered in order
  /// Under mpirun, rank 0 (run_coordinator): when it returns true the job is being ended (mpirun's
  /// SIGTERM after another rank died), so rank 0 takes the rows that have come, delivers them
  /// (in order, or to on_waiting) and returns without waiting for any rank; may be empty.
  std::function<bool()> abandon;
  /// Called, on the thread that called run(), once for each row that finished before an earlier
  /// point's: it waits for its turn, and a crash meanwhile would lose it (the CLI keeps such
  /// rows in FILE.pending); may be empty.
  std::function<void(const Finished&)> on_waiting;
  /// Called, on the thread that called run(), after each burst of calls to on_row and
  /// on_waiting (the rows in order that were there, the new rows that wait): the CLI flushes its
  /// files here, once a burst rather than once a row; may be empty.
  std::function<void()> on_burst;
  /// Rows of points ≥ first finished by an earlier run (FILE.pending): delivered in their turn,
  /// not run again.
  std::map<std::size_t, Finished> finished;
  /// Under mpirun (run_coordinator), with a results file: what the other ranks keep each finished
  /// row in before they send it (the CLI: FILE.pending; each rank adds ".rankR"); empty: nothing.
  std::string journal;
};

/// Runs points [first, points) on `jobs` threads (at most jobs·16 rows wait for an earlier one).
/// Returns how many rows were delivered (fewer than asked only when stopped).
std::size_t run(const io::SweepDocument& doc, const RunOptions& opts);

}  // namespace hetsim::sweep
