#pragma once
// The executor's view of hardware: a device that computes on real buffers and times itself.
// Vendor code (Eigen threads, CUDA, HIP) stays behind these interfaces; collectives among host-
// memory devices are exec/comm/shm_group.hpp (NCCL for cuda comes later, issue #5).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "models/base/result.hpp"

namespace hetsim::exec {

/// Nanoseconds on the host's steady clock: the clock every backend's now_ns() and the
/// shared-memory collectives report, so their times can be subtracted from one another.
[[nodiscard]] inline std::int64_t host_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// One compute device. Not thread-safe: one thread drives one device.
class Device {
 public:
  virtual ~Device() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  /// Reserves `bytes` of device memory (fails when the device would exceed its capacity).
  [[nodiscard]] virtual Result<void*> allocate(std::size_t bytes) = 0;
  virtual void release(void* p, std::size_t bytes) = 0;
  /// C[m×n] = A[m×k]·B[k×n] in fp32 on buffers the device owns (row-major).
  virtual void gemm(int m, int n, int k, const float* a, const float* b, float* c) = 0;
  /// A memory-bound pass: reads `src`, writes `dst`, `count` floats, one multiply-add each.
  virtual void stream(const float* src, float* dst, std::size_t count) = 0;
  /// Copies `count` floats between buffers of devices of this backend.
  virtual void copy(const float* src, float* dst, std::size_t count) = 0;
  /// Scratch buffer `slot` (0–2) of at least `floats` floats, owned by the device and not
  /// counted in its memory (the planned sizes are what allocate() counts). Grows as needed;
  /// a call may invalidate earlier pointers of the same slot.
  [[nodiscard]] virtual float* workspace(int slot, std::size_t floats) = 0;
  /// True when the device's buffers are host memory (the shared-memory collectives need it).
  [[nodiscard]] virtual bool host_memory() const = 0;
  /// Nanoseconds on a clock shared by all devices of the backend.
  [[nodiscard]] virtual std::int64_t now_ns() const = 0;
  [[nodiscard]] virtual std::size_t live_bytes() const = 0;
  [[nodiscard]] virtual std::size_t peak_bytes() const = 0;
};

/// Creates the devices of a backend. "cpu" is always available.
class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual int device_count() const = 0;
  [[nodiscard]] virtual std::unique_ptr<Device> open(int index) = 0;
};

}  // namespace hetsim::exec
