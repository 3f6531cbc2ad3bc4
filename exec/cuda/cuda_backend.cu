#include "exec/cuda/cuda_backend.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#define HETSIM_GPU_NS cuda_impl
#include "exec/gpu/kernels.cuh"

namespace hetsim::exec::cuda_impl::rt {
using Stream = cudaStream_t;
using Event = cudaEvent_t;
using Error = cudaError_t;
constexpr Error kOk = cudaSuccess;
inline const char* error_string(Error e) { return cudaGetErrorString(e); }
inline void set_device(int i) { cudaSetDevice(i); }
inline Error malloc_(void** p, std::size_t b) { return cudaMalloc(p, b); }
inline void free_(void* p) { cudaFree(p); }
inline Error memset_(void* p, int v, std::size_t b, Stream s) { return cudaMemsetAsync(p, v, b, s); }
inline Error copy_async(void* dst, const void* src, std::size_t b, Stream s) {
  return cudaMemcpyAsync(dst, src, b, cudaMemcpyDefault, s);
}
inline void stream_create(Stream* s) { cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
inline void stream_destroy(Stream s) { cudaStreamDestroy(s); }
inline Error stream_synchronize(Stream s) { return cudaStreamSynchronize(s); }
inline Error last_error() { return cudaGetLastError(); }
inline void event_create(Event* e) { cudaEventCreate(e); }
inline void event_destroy(Event e) { cudaEventDestroy(e); }
inline Error event_record(Event e, Stream s) { return cudaEventRecord(e, s); }
inline void event_synchronize(Event e) { cudaEventSynchronize(e); }
inline Error event_elapsed_ms(float* ms, Event a, Event b) { return cudaEventElapsedTime(ms, a, b); }
inline void mem_info(std::size_t* f, std::size_t* t) { cudaMemGetInfo(f, t); }
}  // namespace hetsim::exec::cuda_impl::rt

namespace hetsim::exec::cuda_impl {
struct GemmCall;
namespace {

cudaDataType_t cuda_type(Format f) {
  return f == Format::Fp32 ? CUDA_R_32F : f == Format::Bf16 ? CUDA_R_16BF : CUDA_R_16F;
}

}  // namespace

// cuBLAS in every format: fp32, bf16 and fp16 operands, fp32 accumulation (no TF32: fp32 stays
// fp32, as the catalogue's fp32 peak assumes).
class Blas {
 public:
  Blas(int device, rt::Stream s) {
    cudaSetDevice(device);
    cublasCreate(&h_);
    cublasSetStream(h_, s);
  }
  ~Blas() { cublasDestroy(h_); }
  const char* run(const GemmCall& g);

 private:
  cublasHandle_t h_{};
};

}  // namespace hetsim::exec::cuda_impl

#include "exec/gpu/gpu_device.inc"

namespace hetsim::exec::cuda_impl {

const char* Blas::run(const GemmCall& g) {
  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap.
  const cublasOperation_t oa = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cudaDataType_t in = cuda_type(g.in), out = g.c_fp32 ? CUDA_R_32F : in;
  const cublasStatus_t st =
      cublasGemmStridedBatchedEx(h_, ob, oa, g.n, g.m, g.k, &g.alpha, g.b, in, g.ldb, g.sb, g.a, in, g.lda, g.sa, &g.beta,
                                 g.c, out, g.ldc, g.sc, g.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS ? nullptr : cublasGetStatusString(st);
}

}  // namespace hetsim::exec::cuda_impl

#include "exec/gpu/nccl_comm.inc"

namespace hetsim::exec::cuda_impl {
namespace {

class CudaBackend final : public Backend {
 public:
  CudaBackend(int n, int devices) : n_(n), devices_(std::max(n, devices)) {
    // Peer access between every pair, where the hardware allows it (pipeline copies).
    for (int a = 0; a < n_; ++a) {
      cudaSetDevice(a);
      for (int b = 0; b < n_; ++b)
        if (int ok = 0; a != b && cudaDeviceCanAccessPeer(&ok, a, b) == cudaSuccess && ok) cudaDeviceEnablePeerAccess(b, 0);
    }
    cudaGetLastError();  // "already enabled" is not an error here
  }
  std::string name() const override { return "cuda"; }
  // More devices than GPUs share them round-robin (each its own stream): two pipeline stages on
  // one GPU, say.
  int device_count() const override { return devices_; }
  std::string describe() const override {
    return "cuda: " + std::to_string(devices_) + " device(s) on " + std::to_string(n_) + " GPU(s)";
  }
  std::unique_ptr<Device> open(int index) override { return std::make_unique<GpuDevice>("cuda", index % n_); }
  Result<std::unique_ptr<Device>> open_as(int index, const DeviceSetup& setup) override {
    return open_gpu_as(*this, "cuda", index % n_, setup);
  }
  std::string model(int index) const override {
    cudaDeviceProp p{};
    return cudaGetDeviceProperties(&p, index % n_) == cudaSuccess ? std::string(p.name) : name();
  }

  Result<Communicators> communicators(const std::vector<Device*>& members) override {
    return nccl_possible(members) ? nccl_communicators(members) : Backend::communicators(members);
  }
  Result<std::unique_ptr<Communicator>> communicator(Device* device, ProcessGroup& group) override {
    return nccl_communicator(device, group);
  }
  std::string transport(const std::vector<Device*>& members) const override {
    return nccl_possible(members) ? nccl_version() : Backend::transport(members) + " (NCCL needs distinct GPUs)";
  }

 private:
  int n_, devices_;
};

}  // namespace
}  // namespace hetsim::exec::cuda_impl

namespace hetsim::exec {

Result<std::unique_ptr<Backend>> make_cuda_backend(int devices) {
  int n = 0;
  if (auto e = cudaGetDeviceCount(&n); e != cudaSuccess) {
    const bool no_driver = e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice;
    return Diagnostic{{}, "",
                      no_driver ? "no CUDA device: no NVIDIA driver or GPU found (" + std::string(cudaGetErrorString(e)) + ")"
                                : std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e),
                      "run on a machine with an NVIDIA GPU, or use --backend cpu"};
  }
  if (n == 0) return Diagnostic{{}, "", "no CUDA device on this machine", "use --backend cpu"};
  return std::unique_ptr<Backend>(std::make_unique<cuda_impl::CudaBackend>(n, devices));
}

}  // namespace hetsim::exec
