#include "exec/comm/shm_group.hpp"

#include "exec/backend.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <cstring>

namespace hetsim::exec {

ShmGroup::ShmGroup(int members) : n_(members), bar_(members), in_(static_cast<std::size_t>(members), nullptr) {}

void ShmGroup::barrier() { bar_.arrive_and_wait(); }

// out[i − lo] (or out[i] when out is the shared sum) = Σ_r in_r[offset + i] for i in [lo, hi):
// members added in rank order, one vectorisable pass per member.
void ShmGroup::sum_slice(float* out, std::size_t offset, std::size_t lo, std::size_t hi) {
  bool first = true;
  for (int r = 0; r < n_; ++r) {
    const float* in = in_[static_cast<std::size_t>(r)];
    if (in == nullptr) continue;
    in += offset;
    if (first) {
      for (std::size_t i = lo; i < hi; ++i) out[i] = in[i];
      first = false;
    } else {
      for (std::size_t i = lo; i < hi; ++i) out[i] += in[i];
    }
  }
  if (first)
    for (std::size_t i = lo; i < hi; ++i) out[i] = 0.0f;
}

void ShmGroup::leave(int rank) {
  in_[static_cast<std::size_t>(rank)] = nullptr;
  bar_.arrive_and_drop();
}

std::int64_t ShmGroup::all_reduce(int rank, float* buf, std::size_t count) {
  if (n_ == 1) return host_clock_ns();
  in_[static_cast<std::size_t>(rank)] = buf;
  {
    // Every member makes room (a member may have left; the buffer only grows).
    const std::lock_guard<std::mutex> lock(sum_mutex_);
    if (sum_.size() < count) sum_.resize(count);
  }
  bar_.arrive_and_wait();
  const std::int64_t began = host_clock_ns();
  // Each member sums its slice of the vector (ranks in order: the same bits every time).
  const std::size_t per = (count + static_cast<std::size_t>(n_) - 1) / static_cast<std::size_t>(n_);
  const std::size_t lo = std::min(count, per * static_cast<std::size_t>(rank));
  const std::size_t hi = std::min(count, lo + per);
  sum_slice(sum_.data(), 0, lo, hi);
  bar_.arrive_and_wait();
  std::memcpy(buf, sum_.data(), count * sizeof(float));
  bar_.arrive_and_wait();  // nobody reuses sum_ before all have copied
  return began;
}

std::int64_t ShmGroup::all_gather(int rank, const float* in, float* out, std::size_t count) {
  in_[static_cast<std::size_t>(rank)] = in;
  bar_.arrive_and_wait();
  const std::int64_t began = host_clock_ns();
  for (int r = 0; r < n_; ++r)
    if (in_[static_cast<std::size_t>(r)] != nullptr)
      std::memcpy(out + static_cast<std::size_t>(r) * count, in_[static_cast<std::size_t>(r)], count * sizeof(float));
  bar_.arrive_and_wait();
  return began;
}

std::int64_t ShmGroup::reduce_scatter(int rank, const float* in, float* out, std::size_t count) {
  in_[static_cast<std::size_t>(rank)] = in;
  bar_.arrive_and_wait();
  const std::int64_t began = host_clock_ns();
  sum_slice(out, static_cast<std::size_t>(rank) * count, 0, count);
  bar_.arrive_and_wait();
  return began;
}

}  // namespace hetsim::exec
