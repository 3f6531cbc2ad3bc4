#pragma once
// Host staging for communicators whose transport reads host memory (shared memory, MPI): a
// device's buffers are copied into host buffers before the transport and back after it; host
// buffers pass through untouched.

#include <cstddef>
#include <vector>

#include "exec/backend.hpp"

namespace hetsim::exec {

class HostStage {
 public:
  /// `device`: whose buffers are staged; nullptr when they are host memory already.
  explicit HostStage(Device* device) : dev_(device) {}
  [[nodiscard]] bool active() const { return dev_ != nullptr; }

  /// Host buffer `slot` (0–1) of at least `count` values.
  float* host(int slot, std::size_t count) {
    auto& v = slots_[static_cast<std::size_t>(slot)];
    if (v.size() < count) v.resize(count);
    return v.data();
  }
  /// What the transport reads for `buf`: itself, or its host copy in `slot`.
  float* in(const float* buf, std::size_t count, int slot) {
    if (dev_ == nullptr) return const_cast<float*>(buf);  // the transport only writes where it was told to
    float* h = host(slot, count);
    dev_->to_host(buf, h, count * sizeof(float));
    return h;
  }
  /// Where the transport writes what is meant for `buf`.
  float* out_buffer(float* buf, std::size_t count, int slot) { return dev_ == nullptr ? buf : host(slot, count); }
  /// Runs a transport `op(host_in, host_out)` that reads `in_count` values of `in` and writes
  /// `out_count` values meant for `out`, staging both sides where needed; returns op's result.
  template <class Op>
  auto through(const float* in_buf, std::size_t in_count, float* out_buf, std::size_t out_count, Op&& op) {
    float* ho = out_buffer(out_buf, out_count, 1);
    auto r = op(in(in_buf, in_count, 0), ho);
    out(ho, out_buf, out_count);
    return r;
  }
  /// Copies a staged result `h` back into `buf` (nothing when not staged).
  void out(const float* h, float* buf, std::size_t count) {
    if (dev_ != nullptr) dev_->from_host(h, buf, count * sizeof(float));
  }

 private:
  Device* dev_;
  std::vector<float> slots_[2];
};

}  // namespace hetsim::exec
