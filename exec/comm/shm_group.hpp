#pragma once
// Collectives among threads of one process over shared memory: the cpu backend's communicator,
// and (staged through host buffers) the fallback for device memory without a vendor library.
// Every member calls the same collective with its rank; the call returns when the result is in
// place for everyone. Thread-safe by construction (barrier phases); deterministic sums (ranks
// added in order).

#include <atomic>
#include <barrier>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "exec/backend.hpp"

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
  /// `in` holds n·count floats; member p's `out` slice `rank` receives this member's slice p.
  std::int64_t all_to_all(int rank, const float* in, float* out, std::size_t count);
  /// Buffered: returns once the message is queued for `to`.
  std::int64_t send(int from, int to, int tag, const float* buf, std::size_t count);
  /// Waits for the next message from `from` with `tag`; false when `from` left without sending it.
  bool recv(int to, int from, int tag, float* buf, std::size_t count);
  /// Waits until every member arrives.
  void barrier();
  /// A failing member leaves for good: the others no longer wait for it (their results are then
  /// meaningless, and departed() says so).
  void leave(int rank);
  [[nodiscard]] bool departed() const { return departed_.load() > 0; }

 private:
  void sum_slice(float* out, std::size_t offset, std::size_t lo, std::size_t hi);
  int n_;
  std::barrier<> bar_;
  std::vector<const float*> in_;
  std::vector<float> sum_;
  std::mutex sum_mutex_;
  std::atomic<int> departed_{0};
  std::mutex mail_mutex_;
  std::condition_variable mail_cv_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<float>>> mail_;  ///< (from, to, tag) → messages
  std::vector<bool> gone_;
};

/// A member's communicator over a ShmGroup. With `staged` set, buffers are that device's memory
/// and travel through host buffers (to_host, the shared-memory collective, from_host).
[[nodiscard]] std::unique_ptr<Communicator> shm_communicator(std::shared_ptr<ShmGroup> group, int rank,
                                                             Device* staged = nullptr);

}  // namespace hetsim::exec
