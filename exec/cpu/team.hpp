#pragma once
// The cores of one cpu device: the device's own thread and `cores − 1` helper threads that split
// each kernel with it (docs/executor.md, "Devices of unequal speed"), so a plan's pools can be cpu
// devices of different core counts on one machine.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hetsim::exec::cpu {

/// A fork-join team of `size()` threads: the caller and its helpers. Between kernels the
/// threads spin for up to 200 µs before they sleep (a sleeping thread wakes 20-50 µs late), so a
/// device of N cores keeps its N cores busy while it works, as a GPU keeps its SMs. Not
/// thread-safe: one caller (the device's thread) at a time.
class Team {
 public:
  /// `members` ≥ 1 threads in all; the helpers start here and wait for work. Throws
  /// std::system_error when a thread cannot be started (the caller reports it).
  explicit Team(int members);
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  [[nodiscard]] int size() const { return static_cast<int>(helpers_.size()) + 1; }
  /// Runs `part(i, parts)` for every i in [0, parts), part 0 on the calling thread, and returns
  /// when all have returned. `parts` ≤ size(); 1 runs on the caller alone.
  void run(int parts, const std::function<void(int, int)>& part);

 private:
  void serve(int index);
  void stop();

  std::vector<std::thread> helpers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int, int)>* job_ = nullptr;  // the round's (under mutex_)
  int parts_ = 0;                                       // the round's (under mutex_)
  std::atomic<int> pending_{0};                         // helpers of the round not yet done
  std::atomic<std::uint64_t> round_{0};                 // rounds started
  bool stop_ = false;                                   // under mutex_
};

/// [begin, end) of part `i` of `parts` over `n` items, in whole multiples of `grain` (the last
/// part takes the rest).
struct Range {
  std::size_t begin, end;
};
[[nodiscard]] inline Range part_of(std::size_t n, int i, int parts, std::size_t grain = 1) {
  const std::size_t units = (n + grain - 1) / grain, per = units / static_cast<std::size_t>(parts),
                    extra = units % static_cast<std::size_t>(parts), k = static_cast<std::size_t>(i);
  const std::size_t b = (k * per + (k < extra ? k : extra)) * grain;
  const std::size_t e = ((k + 1) * per + (k + 1 < extra ? k + 1 : extra)) * grain;
  return {b < n ? b : n, e < n ? e : n};
}

}  // namespace hetsim::exec::cpu
