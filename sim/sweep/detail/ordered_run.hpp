#pragma once
// What sweep::run (threads of one process) and run_coordinator (rank 0 of an mpirun) share:
// points handed out in order, to this process's threads and to other ranks (claim); rows taken
// back in any order, encoded where they ran, and delivered in point order on the caller's thread.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "sim/io/sweep_reader.hpp"
#include "sim/sweep/rows.hpp"
#include "sim/sweep/sweep.hpp"

namespace hetsim::sweep::detail {

class OrderedRun {
 public:
  /// Points [opts.first, points) of `doc`, minus opts.finished (delivered in their turn). This
  /// process's threads take no point more than `window` rows, plus three times the points out on
  /// other ranks, ahead of the next row to deliver (so at most that many rows wait in memory).
  /// `doc` and `opts` outlive the run.
  OrderedRun(const io::SweepDocument& doc, const RunOptions& opts, std::size_t window);
  ~OrderedRun();  ///< waits for this process's threads (they stop once nothing is left or stopped)
  OrderedRun(const OrderedRun&) = delete;
  OrderedRun& operator=(const OrderedRun&) = delete;

  /// Starts opts.jobs threads (at least one), each running a point at a time (opts.runner, else
  /// run_point) and encoding its row (opts.encoding).
  void start();
  /// Up to `count` points for another rank, in order: fewer when fewer are left, none once stopped.
  [[nodiscard]] std::vector<std::size_t> claim(std::size_t count);
  /// The rows of `points` points claimed for another rank (rows of points out of range are dropped).
  void take(std::vector<Finished> rows, std::size_t points);
  /// Points not yet handed out.
  [[nodiscard]] std::size_t left() const;
  /// On the caller's thread: delivers (opts.on_row) the rows whose turn has come, then hands each
  /// row that came in since and waits for an earlier point's to opts.on_waiting. False once
  /// nothing is left: the next row is not there, and no point is running here or on another rank,
  /// none is left to hand out (or the run was stopped).
  bool deliver();
  /// Waits until a row comes in, at most `d`.
  void wait(std::chrono::microseconds d);
  /// Rows delivered so far.
  [[nodiscard]] std::size_t delivered() const { return delivered_; }

 private:
  void work();
  void skip_finished();  // under mu_
  [[nodiscard]] bool stopped() const { return opts_.stop.stop_requested(); }

  const io::SweepDocument& doc_;
  const RunOptions& opts_;
  const std::size_t n_, window_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::size_t, Finished> done_;  // rows not yet delivered
  std::vector<std::size_t> fresh_;        // rows come in since deliver() last looked
  std::size_t next_, written_;            // the next point to hand out, the next row to deliver
  std::size_t running_ = 0, remote_ = 0;  // points running here, out on other ranks
  std::size_t changes_ = 0, seen_ = 0;    // rows come in (wait() returns on a change)
  std::size_t delivered_ = 0;
  std::vector<std::jthread> threads_;
};

}  // namespace hetsim::sweep::detail
