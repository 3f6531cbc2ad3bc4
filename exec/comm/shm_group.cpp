#include "exec/comm/shm_group.hpp"

#include <algorithm>
#include <cstring>

namespace hetsim::exec {

ShmGroup::ShmGroup(int members) : n_(members), bar_(members), in_(static_cast<std::size_t>(members), nullptr) {}

void ShmGroup::barrier() { bar_.arrive_and_wait(); }

void ShmGroup::leave(int rank) {
  in_[static_cast<std::size_t>(rank)] = nullptr;
  bar_.arrive_and_drop();
}

void ShmGroup::all_reduce(int rank, float* buf, std::size_t count) {
  if (n_ == 1) return;
  in_[static_cast<std::size_t>(rank)] = buf;
  if (rank == 0) sum_.assign(count, 0.0f);
  bar_.arrive_and_wait();
  // Each member sums its slice of the vector (ranks in order: the same bits every time).
  const std::size_t per = (count + static_cast<std::size_t>(n_) - 1) / static_cast<std::size_t>(n_);
  const std::size_t lo = std::min(count, per * static_cast<std::size_t>(rank));
  const std::size_t hi = std::min(count, lo + per);
  for (std::size_t i = lo; i < hi; ++i) {
    float s = 0;
    for (int r = 0; r < n_; ++r)
      if (in_[static_cast<std::size_t>(r)] != nullptr) s += in_[static_cast<std::size_t>(r)][i];
    sum_[i] = s;
  }
  bar_.arrive_and_wait();
  std::memcpy(buf, sum_.data(), count * sizeof(float));
  bar_.arrive_and_wait();  // nobody reuses sum_ before all have copied
}

void ShmGroup::all_gather(int rank, const float* in, float* out, std::size_t count) {
  in_[static_cast<std::size_t>(rank)] = in;
  bar_.arrive_and_wait();
  for (int r = 0; r < n_; ++r)
    if (in_[static_cast<std::size_t>(r)] != nullptr)
      std::memcpy(out + static_cast<std::size_t>(r) * count, in_[static_cast<std::size_t>(r)], count * sizeof(float));
  bar_.arrive_and_wait();
}

void ShmGroup::reduce_scatter(int rank, const float* in, float* out, std::size_t count) {
  in_[static_cast<std::size_t>(rank)] = in;
  bar_.arrive_and_wait();
  const std::size_t off = static_cast<std::size_t>(rank) * count;
  for (std::size_t i = 0; i < count; ++i) {
    float s = 0;
    for (int r = 0; r < n_; ++r)
      if (in_[static_cast<std::size_t>(r)] != nullptr) s += in_[static_cast<std::size_t>(r)][off + i];
    out[i] = s;
  }
  bar_.arrive_and_wait();
}

}  // namespace hetsim::exec
