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
inline void memset_(void* p, int v, std::size_t b) { cudaMemset(p, v, b); }
inline void copy_async(void* dst, const void* src, std::size_t b, Stream s) {
  cudaMemcpyAsync(dst, src, b, cudaMemcpyDefault, s);
}
inline void stream_create(Stream* s) { cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
inline void stream_destroy(Stream s) { cudaStreamDestroy(s); }
inline void stream_synchronize(Stream s) { cudaStreamSynchronize(s); }
inline void event_create(Event* e) { cudaEventCreate(e); }
inline void event_destroy(Event e) { cudaEventDestroy(e); }
inline void event_record(Event e, Stream s) { cudaEventRecord(e, s); }
inline void event_synchronize(Event e) { cudaEventSynchronize(e); }
inline void event_elapsed_ms(float* ms, Event a, Event b) { cudaEventElapsedTime(ms, a, b); }
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
  void run(const GemmCall& g);

 private:
  cublasHandle_t h_{};
};

}  // namespace hetsim::exec::cuda_impl

#include "exec/gpu/gpu_device.inc"

namespace hetsim::exec::cuda_impl {

void Blas::run(const GemmCall& g) {
  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap.
  const cublasOperation_t oa = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cudaDataType_t in = cuda_type(g.in), out = g.c_fp32 ? CUDA_R_32F : in;
  cublasGemmStridedBatchedEx(h_, ob, oa, g.n, g.m, g.k, &g.alpha, g.b, in, g.ldb, g.sb, g.a, in, g.lda, g.sa, &g.beta,
                             g.c, out, g.ldc, g.sc, g.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

namespace {

// NCCL among distinct GPUs of this process: one communicator per member, made together by
// ncclCommInitAll. A member that leaves aborts the whole group, so the others' pending
// operations fail instead of waiting for it forever.
struct NcclGroup {
  std::vector<ncclComm_t> comms;
  std::atomic<bool> aborted{false};
  ~NcclGroup() {
    if (!aborted)
      for (auto c : comms) ncclCommDestroy(c);
  }
  void abort() {
    if (!aborted.exchange(true))
      for (auto c : comms) ncclCommAbort(c);
  }
};

// `slot`: this member's communicator in the group (its rank when one process drives every member,
// 0 when each process holds its own).
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<NcclGroup> g, int rank, int size, std::size_t slot, GpuDevice* dev)
      : g_(std::move(g)), rank_(rank), size_(size), slot_(slot), dev_(dev) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Result<std::int64_t> all_reduce(float* buf, std::size_t count) override {
    return call("all-reduce", [&](ncclComm_t c, cudaStream_t s) {
      return ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, c, s);
    });
  }
  Result<std::int64_t> all_gather(const float* in, float* out, std::size_t count) override {
    return call("all-gather", [&](ncclComm_t c, cudaStream_t s) { return ncclAllGather(in, out, count, ncclFloat, c, s); });
  }
  Result<std::int64_t> reduce_scatter(const float* in, float* out, std::size_t count) override {
    return call("reduce-scatter", [&](ncclComm_t c, cudaStream_t s) {
      return ncclReduceScatter(in, out, count, ncclFloat, ncclSum, c, s);
    });
  }
  Result<std::int64_t> all_to_all(const float* in, float* out, std::size_t count) override {
    return call("all-to-all", [&](ncclComm_t c, cudaStream_t s) {
      ncclGroupStart();
      for (int p = 0; p < size(); ++p) {
        ncclSend(in + std::size_t(p) * count, count, ncclFloat, p, c, s);
        ncclRecv(out + std::size_t(p) * count, count, ncclFloat, p, c, s);
      }
      return ncclGroupEnd();
    });
  }
  // NCCL matches point-to-point messages in order; tags are not needed there.
  Result<std::int64_t> send(const float* buf, std::size_t count, int peer, int /*tag*/) override {
    return call("send", [&](ncclComm_t c, cudaStream_t s) { return ncclSend(buf, count, ncclFloat, peer, c, s); });
  }
  Result<std::int64_t> recv(float* buf, std::size_t count, int peer, int /*tag*/) override {
    return call("recv", [&](ncclComm_t c, cudaStream_t s) { return ncclRecv(buf, count, ncclFloat, peer, c, s); });
  }
  Diagnostics barrier() override {
    auto* one = static_cast<float*>(dev_->workspace(2, sizeof(float)));
    auto r = all_reduce(one, 1);
    if (!r) return r.errors();
    if (auto e = cudaStreamSynchronize(dev_->stream()); e != cudaSuccess)
      return {Diagnostic{{}, "", std::string("barrier: ") + cudaGetErrorString(e), ""}};
    return {};
  }
  void leave() override { g_->abort(); }

 private:
  template <class F>
  Result<std::int64_t> call(const char* what, F&& f) {
    if (g_->aborted) return Diagnostic{{}, "", std::string(what) + ": a member of the group failed (NCCL aborted)", ""};
    cudaSetDevice(dev_->index());
    const std::int64_t t = host_clock_ns();
    if (auto rc = f(g_->comms[slot_], dev_->stream()); rc != ncclSuccess)
      return Diagnostic{{}, "", std::string(what) + ": NCCL " + ncclGetErrorString(rc), ""};
    return t;
  }
  std::shared_ptr<NcclGroup> g_;
  int rank_, size_;
  std::size_t slot_;
  GpuDevice* dev_;
};

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

  Result<Communicators> communicators(const std::vector<Device*>& members) override {
    if (!nccl_possible(members)) return Backend::communicators(members);
    std::vector<int> gpus;
    for (auto* m : members) gpus.push_back(static_cast<GpuDevice*>(m)->index());
    auto g = std::make_shared<NcclGroup>();
    g->comms.resize(members.size());
    if (auto rc = ncclCommInitAll(g->comms.data(), static_cast<int>(members.size()), gpus.data()); rc != ncclSuccess) {
      g->aborted = true;  // nothing to destroy
      return Diagnostic{{}, "", std::string("NCCL could not make a communicator: ") + ncclGetErrorString(rc),
                        "check NCCL_DEBUG=WARN output; the GPUs must see each other"};
    }
    Communicators out;
    for (std::size_t i = 0; i < members.size(); ++i)
      out.push_back(std::make_unique<NcclCommunicator>(g, static_cast<int>(i), static_cast<int>(members.size()), i,
                                                       static_cast<GpuDevice*>(members[i])));
    return Result<Communicators>(std::move(out));  // nvcc's front end does not move implicitly here
  }
  // One process per GPU (mpirun): NCCL's unique id made by the group's first member and
  // broadcast over the group (MPI), then ncclCommInitRank in every process.
  Result<std::unique_ptr<Communicator>> communicator(Device* device, ProcessGroup& group) override {
    auto* dev = static_cast<GpuDevice*>(device);
    ncclUniqueId id{};
    if (group.rank() == 0) {
      if (auto rc = ncclGetUniqueId(&id); rc != ncclSuccess)
        return Diagnostic{{}, "", std::string("ncclGetUniqueId: ") + ncclGetErrorString(rc), ""};
    }
    group.broadcast(&id, sizeof id, 0);
    auto g = std::make_shared<NcclGroup>();
    g->comms.resize(1);
    cudaSetDevice(dev->index());
    if (auto rc = ncclCommInitRank(&g->comms[0], group.size(), id, group.rank()); rc != ncclSuccess) {
      g->aborted = true;
      return Diagnostic{{}, "", dev->name() + ": ncclCommInitRank: " + ncclGetErrorString(rc),
                        "check NCCL_DEBUG=WARN output; every process needs its own GPU"};
    }
    return std::unique_ptr<Communicator>(std::make_unique<NcclCommunicator>(g, group.rank(), group.size(), 0, dev));
  }
  std::string transport(const std::vector<Device*>& members) const override {
    if (!nccl_possible(members)) return Backend::transport(members) + " (NCCL needs distinct GPUs)";
    int v = 0;
    ncclGetVersion(&v);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  }

 private:
  // NCCL needs every member on its own GPU; two "devices" on one GPU share memory through the
  // host-staged group instead.
  static bool nccl_possible(const std::vector<Device*>& members) {
    std::set<int> gpus;
    for (auto* m : members) gpus.insert(static_cast<GpuDevice*>(m)->index());
    return members.size() > 1 && gpus.size() == members.size();
  }
  int n_, devices_;
};

}  // namespace
}  // namespace hetsim::exec::cuda_impl

namespace hetsim::exec {

Result<std::unique_ptr<Backend>> make_cuda_backend(int devices) {
  int n = 0;
  if (auto e = cudaGetDeviceCount(&n); e != cudaSuccess)
    return Diagnostic{{}, "", std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e),
                      "run on a machine with an NVIDIA GPU, or use --backend cpu"};
  if (n == 0) return Diagnostic{{}, "", "no CUDA device on this machine", "use --backend cpu"};
  return std::unique_ptr<Backend>(std::make_unique<cuda_impl::CudaBackend>(n, devices));
}

}  // namespace hetsim::exec
