#include "exec/hip/hip_backend.hpp"

#include <hip/hip_runtime.h>
// The vendor libraries where ROCm has them (not Debian's, which lacks both): CMake finds them and
// defines these; the rocBLAS and RCCL calls mirror the cuda backend's cuBLAS and NCCL ones.
#ifdef HETSIM_HAVE_ROCBLAS
#if __has_include(<rocblas/rocblas.h>)
#include <rocblas/rocblas.h>
#else
#include <rocblas.h>
#endif
#endif
#ifdef HETSIM_HAVE_RCCL
#if __has_include(<rccl/rccl.h>)
#include <rccl/rccl.h>
#else
#include <rccl.h>
#endif
#endif

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#define HETSIM_GPU_NS hip_impl
#include "exec/gpu/kernels.cuh"

namespace hetsim::exec::hip_impl::rt {
using Stream = hipStream_t;
using Event = hipEvent_t;
using Error = hipError_t;
constexpr Error kOk = hipSuccess;
inline const char* error_string(Error e) { return hipGetErrorString(e); }
inline void set_device(int i) { (void)hipSetDevice(i); }
inline Error malloc_(void** p, std::size_t b) { return hipMalloc(p, b); }
inline void free_(void* p) { (void)hipFree(p); }
inline Error memset_(void* p, int v, std::size_t b, Stream s) { return hipMemsetAsync(p, v, b, s); }
inline Error copy_async(void* dst, const void* src, std::size_t b, Stream s) {
  return hipMemcpyAsync(dst, src, b, hipMemcpyDefault, s);
}
inline void stream_create(Stream* s) { (void)hipStreamCreateWithFlags(s, hipStreamNonBlocking); }
inline void stream_destroy(Stream s) { (void)hipStreamDestroy(s); }
inline Error stream_synchronize(Stream s) { return hipStreamSynchronize(s); }
inline Error last_error() { return hipGetLastError(); }
inline void event_create(Event* e) { (void)hipEventCreate(e); }
inline void event_destroy(Event e) { (void)hipEventDestroy(e); }
inline Error event_record(Event e, Stream s) { return hipEventRecord(e, s); }
inline void event_synchronize(Event e) { (void)hipEventSynchronize(e); }
inline Error event_elapsed_ms(float* ms, Event a, Event b) { return hipEventElapsedTime(ms, a, b); }
inline void mem_info(std::size_t* f, std::size_t* t) { (void)hipMemGetInfo(f, t); }
}  // namespace hetsim::exec::hip_impl::rt

namespace hetsim::exec::hip_impl {
struct GemmCall;

#ifdef HETSIM_HAVE_ROCBLAS
// rocBLAS in every format, fp32 accumulation.
class Blas {
 public:
  Blas(int device, rt::Stream s) {
    rt::set_device(device);
    rocblas_create_handle(&h_);
    rocblas_set_stream(h_, s);
  }
  ~Blas() { rocblas_destroy_handle(h_); }
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  const char* run(const GemmCall& g);

 private:
  rocblas_handle h_{};
};
#else
// The GEMM without a vendor BLAS: exec/gpu's tiled kernel, batched over blockIdx.z.
class Blas {
 public:
  Blas(int /*device*/, rt::Stream s) : s_(s) {}
  const char* run(const GemmCall& g);

 private:
  rt::Stream s_;
};
#endif

}  // namespace hetsim::exec::hip_impl

#include "exec/gpu/gpu_device.inc"

namespace hetsim::exec::hip_impl {

#ifdef HETSIM_HAVE_ROCBLAS
const char* Blas::run(const GemmCall& g) {
  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap.
  auto type = [](Format f) {
    return f == Format::Fp32 ? rocblas_datatype_f32_r : f == Format::Bf16 ? rocblas_datatype_bf16_r : rocblas_datatype_f16_r;
  };
  const rocblas_operation oa = g.ta ? rocblas_operation_transpose : rocblas_operation_none;
  const rocblas_operation ob = g.tb ? rocblas_operation_transpose : rocblas_operation_none;
  const rocblas_datatype in = type(g.in), out = g.c_fp32 ? rocblas_datatype_f32_r : in;
  const rocblas_status st = rocblas_gemm_strided_batched_ex(
      h_, ob, oa, g.n, g.m, g.k, &g.alpha, g.b, in, g.ldb, g.sb, g.a, in, g.lda, g.sa, &g.beta, g.c, out, g.ldc, g.sc, g.c,
      out, g.ldc, g.sc, g.batch, rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0);
  return st == rocblas_status_success ? nullptr : "rocblas_gemm_strided_batched_ex failed";
}
#else
const char* Blas::run(const GemmCall& g) {
  const dim3 grid(static_cast<unsigned>((g.n + 15) / 16), static_cast<unsigned>((g.m + 15) / 16),
                  static_cast<unsigned>(g.batch));
  const dim3 block(16, 16);
  with_format(g.in, [&](auto t) {
    using T = decltype(t);
    const auto* a = static_cast<const T*>(g.a);
    const auto* b = static_cast<const T*>(g.b);
    if (g.c_fp32)
      gpu::gemm_tiled_kernel<T, float><<<grid, block, 0, s_>>>(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a, g.lda, g.sa, b, g.ldb,
                                                               g.sb, g.beta, static_cast<float*>(g.c), g.ldc, g.sc);
    else
      gpu::gemm_tiled_kernel<T, T><<<grid, block, 0, s_>>>(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a, g.lda, g.sa, b, g.ldb,
                                                           g.sb, g.beta, static_cast<T*>(g.c), g.ldc, g.sc);
  });
  const hipError_t e = hipGetLastError();
  return e == hipSuccess ? nullptr : hipGetErrorString(e);
}
#endif

}  // namespace hetsim::exec::hip_impl

#ifdef HETSIM_HAVE_RCCL
#include "exec/gpu/nccl_comm.inc"
#endif

namespace hetsim::exec::hip_impl {

namespace {

class HipBackend final : public Backend {
 public:
  HipBackend(int n, int devices) : n_(n), devices_(std::max(n, devices)) {}
  std::string name() const override { return "hip"; }
  // More devices than GPUs share them round-robin (each its own stream): two pipeline stages on
  // one GPU, say.
  int device_count() const override { return devices_; }
  std::string describe() const override {
    return "hip: " + std::to_string(devices_) + " device(s) on " + std::to_string(n_) + " GPU(s)";
  }
  std::unique_ptr<Device> open(int index) override { return std::make_unique<GpuDevice>("hip", index % n_); }
  Result<std::unique_ptr<Device>> open_as(int index, const DeviceSetup& setup) override {
    return open_gpu_as(*this, "hip", index % n_, setup);
  }
  std::string model(int index) const override {
    hipDeviceProp_t p{};
    return hipGetDeviceProperties(&p, index % n_) == hipSuccess ? std::string(p.name) : name();
  }
#ifdef HETSIM_HAVE_RCCL
  Result<Communicators> communicators(const std::vector<Device*>& members) override {
    return nccl_possible(members) ? nccl_communicators(members) : Backend::communicators(members);
  }
  Result<std::unique_ptr<Communicator>> communicator(Device* device, ProcessGroup& group) override {
    return nccl_communicator(device, group);
  }
  std::string transport(const std::vector<Device*>& members) const override {
    return nccl_possible(members) ? nccl_version().replace(0, 4, "RCCL")
                                  : Backend::transport(members) + " (RCCL needs distinct GPUs)";
  }
#endif
  // Without RCCL: the default collectives, staged through host memory.

 private:
  int n_, devices_;
};

}  // namespace
}  // namespace hetsim::exec::hip_impl

namespace hetsim::exec {

Result<std::unique_ptr<Backend>> make_hip_backend(int devices) {
  int n = 0;
  if (auto e = hipGetDeviceCount(&n); e != hipSuccess)
    return Diagnostic{{}, "", std::string("no HIP device: hipGetDeviceCount: ") + hipGetErrorString(e),
                      "run on a machine with an AMD GPU, or use --backend cpu"};
  if (n == 0) return Diagnostic{{}, "", "no HIP device on this machine", "use --backend cpu"};
  return std::unique_ptr<Backend>(std::make_unique<hip_impl::HipBackend>(n, devices));
}

}  // namespace hetsim::exec
