#pragma once
// Collectives among threads of one process over shared memory: the cpu backend's communicator.
// Every member calls the same collective with its rank; the call returns when the result is in
// place for everyone. Thread-safe by construction (barrier phases); deterministic sums (ranks
// added in order).

#include <barrier>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace hetsim::exec {

class ShmGroup {
 public:
  explicit ShmGroup(int members);
  [[nodiscard]] int size() const { return n_; }

  // Each collective returns when it started for real: the steady-clock time (ns) at which the
  // last member arrived, so a measured duration excludes waiting for slower members.

  /// Every member's `buf` (count floats) becomes the elementwise sum over members.
  std::int64_t all_reduce(int rank, float* buf, std::size_t count);
  /// `out` (n·count floats) receives every member's `in` (count floats), in rank order.
  std::int64_t all_gather(int rank, const float* in, float* out, std::size_t count);
  /// `in` holds n·count floats; `out` (count floats) receives slice `rank` summed over members.
  std::int64_t reduce_scatter(int rank, const float* in, float* out, std::size_t count);
  /// Waits until every member arrives.
  void barrier();
  /// A failing member leaves for good: the others no longer wait for it (their results are then
  /// meaningless, and the run reports the failure).
  void leave(int rank);

 private:
  void sum_slice(float* out, std::size_t offset, std::size_t lo, std::size_t hi);
  int n_;
  std::barrier<> bar_;
  std::vector<const float*> in_;
  std::vector<float> sum_;
  std::mutex sum_mutex_;
};

}  // namespace hetsim::exec
