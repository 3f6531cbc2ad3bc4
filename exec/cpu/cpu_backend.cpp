#include "exec/cpu/cpu_backend.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cstring>
#include <vector>
#include <cstdlib>
#include <new>

namespace hetsim::exec {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

class CpuDevice final : public Device {
 public:
  CpuDevice(int index, std::size_t capacity) : index_(index), capacity_(capacity) {}

  std::string name() const override { return "cpu" + std::to_string(index_); }

  Result<void*> allocate(std::size_t bytes) override {
    if (capacity_ > 0 && live_ + bytes > capacity_)
      return Diagnostic{{}, "", name() + ": out of memory allocating " + std::to_string(bytes) + " bytes (" +
                                    std::to_string(live_) + " of " + std::to_string(capacity_) + " in use)",
                        "give the cpu devices more memory or run a smaller plan"};
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) return Diagnostic{{}, "", name() + ": the host has no memory left", ""};
    live_ += bytes;
    if (live_ > peak_) peak_ = live_;
    return p;
  }

  void release(void* p, std::size_t bytes) override {
    std::free(p);
    live_ -= bytes;
  }

  void gemm(int m, int n, int k, const float* a, const float* b, float* c) override {
    Eigen::Map<const RowMatrix> A(a, m, k);
    Eigen::Map<const RowMatrix> B(b, k, n);
    Eigen::Map<RowMatrix> C(c, m, n);
    C.noalias() = A * B;
  }

  void stream(const float* src, float* dst, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) dst[i] = src[i] * 0.999f + 1e-3f;
  }

  void copy(const float* src, float* dst, std::size_t count) override { std::memcpy(dst, src, count * sizeof(float)); }

  float* workspace(int slot, std::size_t floats) override {
    auto& w = work_[static_cast<std::size_t>(slot)];
    if (w.size() < floats) {
      try {
        w.assign(floats, 0.5f);
      } catch (const std::bad_alloc&) {  // the caller fails the task with a message
        w = {};
        return nullptr;
      }
    }
    return w.data();
  }
  bool host_memory() const override { return true; }

  std::int64_t now_ns() const override { return host_clock_ns(); }
  std::size_t live_bytes() const override { return live_; }
  std::size_t peak_bytes() const override { return peak_; }

 private:
  int index_;
  std::size_t capacity_;
  std::size_t live_ = 0, peak_ = 0;
  std::vector<float> work_[3];
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(int devices, std::size_t memory) : devices_(devices), memory_(memory) {
    Eigen::setNbThreads(1);  // one core per device
  }
  std::string name() const override { return "cpu"; }
  int device_count() const override { return devices_; }
  std::unique_ptr<Device> open(int index) override { return std::make_unique<CpuDevice>(index, memory_); }

 private:
  int devices_;
  std::size_t memory_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int devices, std::size_t memory_bytes) {
  return std::make_unique<CpuBackend>(devices, memory_bytes);
}

}  // namespace hetsim::exec
