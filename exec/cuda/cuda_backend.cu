#include "exec/cuda/cuda_backend.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <vector>

namespace hetsim::exec {
namespace {

// Every CUDA call goes through here: an error becomes a message naming the call.
std::string check(cudaError_t rc, const char* what) {
  return rc == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorString(rc);
}

__global__ void stream_kernel(const float* src, float* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i] * 0.999f + 1e-3f;
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int index) : index_(index) {
    cudaSetDevice(index_);
    cudaStreamCreate(&stream_);
    cublasCreate(&blas_);
    cublasSetStream(blas_, stream_);
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    capacity_ = total_b;
  }
  ~CudaDevice() override {
    cudaSetDevice(index_);
    for (auto& w : work_)
      if (w.first) cudaFree(w.first);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda" + std::to_string(index_); }

  Result<void*> allocate(std::size_t bytes) override {
    cudaSetDevice(index_);
    void* p = nullptr;
    if (auto e = check(cudaMalloc(&p, bytes), "cudaMalloc"); !e.empty())
      return Diagnostic{{}, "", name() + ": out of memory allocating " + std::to_string(bytes) + " bytes (" + e + ")",
                        "a smaller plan, or more devices"};
    live_ += bytes;
    if (live_ > peak_) peak_ = live_;
    return p;
  }
  void release(void* p, std::size_t bytes) override {
    cudaSetDevice(index_);
    cudaFree(p);
    live_ -= bytes;
  }

  void gemm(int m, int n, int k, const float* a, const float* b, float* c) override {
    // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ.
    const float one = 1.0f, zero = 0.0f;
    cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n);
    cudaStreamSynchronize(stream_);
  }
  void stream(const float* src, float* dst, std::size_t count) override {
    stream_kernel<<<1024, 256, 0, stream_>>>(src, dst, count);
    cudaStreamSynchronize(stream_);
  }
  void copy(const float* src, float* dst, std::size_t count) override {
    cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDefault, stream_);
    cudaStreamSynchronize(stream_);
  }
  float* workspace(int slot, std::size_t floats) override {
    auto& w = work_[slot];
    if (w.second < floats) {
      cudaSetDevice(index_);
      if (w.first) cudaFree(w.first);
      w = {nullptr, 0};
      if (cudaMalloc(&w.first, floats * sizeof(float)) != cudaSuccess) return nullptr;  // the caller fails the task
      cudaMemset(w.first, 0, floats * sizeof(float));
      w.second = floats;
    }
    return w.first;
  }
  bool host_memory() const override { return false; }
  std::int64_t now_ns() const override { return host_clock_ns(); }
  std::size_t live_bytes() const override { return live_; }
  std::size_t peak_bytes() const override { return peak_; }

 private:
  int index_;
  cudaStream_t stream_{};
  cublasHandle_t blas_{};
  std::size_t capacity_ = 0, live_ = 0, peak_ = 0;
  std::pair<float*, std::size_t> work_[3] = {{nullptr, 0}, {nullptr, 0}, {nullptr, 0}};
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int n) : n_(n) {}
  std::string name() const override { return "cuda"; }
  int device_count() const override { return n_; }
  std::unique_ptr<Device> open(int index) override { return std::make_unique<CudaDevice>(index % n_); }

 private:
  int n_;
};

}  // namespace

Result<std::unique_ptr<Backend>> make_cuda_backend() {
  int n = 0;
  if (auto e = check(cudaGetDeviceCount(&n), "cudaGetDeviceCount"); !e.empty())
    return Diagnostic{{}, "", "no CUDA device: " + e, "run on a machine with an NVIDIA GPU, or use --backend cpu"};
  if (n == 0) return Diagnostic{{}, "", "no CUDA device on this machine", "use --backend cpu"};
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(n));
}

}  // namespace hetsim::exec
