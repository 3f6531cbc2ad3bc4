#pragma once
// The executor's view of hardware: a device that computes on real buffers and times itself, and
// a communicator among devices. Vendor code (Eigen threads, CUDA + cuBLAS + NCCL, HIP) stays
// behind these interfaces (docs/executor.md).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/base/result.hpp"

namespace hetsim::exec {

/// Nanoseconds on the host's steady clock: the clock every backend's timestamps and the
/// collectives report, so their times can be subtracted from one another.
[[nodiscard]] inline std::int64_t host_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Element format of GEMM and attention operands (accumulation is always fp32).
enum class Format { Fp32, Bf16, Fp16 };
[[nodiscard]] constexpr std::size_t format_bytes(Format f) { return f == Format::Fp32 ? 4 : 2; }
[[nodiscard]] constexpr std::string_view format_name(Format f) {
  return f == Format::Fp32 ? "fp32" : f == Format::Bf16 ? "bf16" : "fp16";
}

/// Softmax attention over `heads` independent heads (micro-batch × heads per rank), each with
/// Q and K of [seq × head_dim], V and O of [seq × value_dim()], stored head after head: all the
/// heads' Q, then their K, then their V (the gradients alike).
struct AttentionShape {
  int heads = 1, seq = 1, head_dim = 1;
  bool causal = true;  ///< causal: row i attends to keys 0..i only (the masked half is skipped)
  /// V's and O's width a head where it differs from Q's and K's (multi-head latent attention:
  /// 128 against 192); 0: head_dim.
  int v_dim = 0;
  [[nodiscard]] int value_dim() const { return v_dim > 0 ? v_dim : head_dim; }
};

/// One compute device. Not thread-safe: one thread drives one device. Kernels may run
/// asynchronously (GPU streams); record() marks a point in the device's own order, resolve()
/// waits for the device and turns the marks into host-clock times.
class Device {
 public:
  virtual ~Device() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  /// Reserves `bytes` of device memory (fails when the device would exceed its capacity). The
  /// bytes count towards live_bytes/peak_bytes: the planned memory.
  [[nodiscard]] virtual Result<void*> allocate(std::size_t bytes) = 0;
  /// Gives back a block. Requires: `p` from allocate(`bytes`), with the same `bytes`, not yet
  /// released (backends keep freed blocks by size for the next allocation of that size).
  virtual void release(void* p, std::size_t bytes) = 0;
  /// Scratch buffer `slot` (0–3) of at least `bytes`, owned by the device and not counted in its
  /// memory (the planned sizes are what allocate() counts). Grows as needed (a call may
  /// invalidate earlier pointers of the same slot); nullptr when the memory cannot be had.
  [[nodiscard]] virtual void* workspace(int slot, std::size_t bytes) = 0;

  /// C[m×n] = A[m×k]·B[k×n], row-major, operands in `f`, fp32 accumulation.
  virtual void gemm(int m, int n, int k, Format f, const void* a, const void* b, void* c) = 0;
  /// Forward: O = softmax(Q·Kᵀ/√d (causal mask)) · V, `qkv` holding Q, then K, then V, `o` the
  /// output. Backward (FlashAttention-2): recomputes the probabilities, reads dO from `o`, writes
  /// dQ, dK, dV to `grads` (laid out like qkv): five GEMMs and the softmax gradient per block.
  virtual void attention(const AttentionShape& s, Format f, const void* qkv, void* o, void* grads, bool backward) = 0;
  /// Layer norm over `rows` rows of `cols` (fp32 statistics): y = (x − mean)/σ. Backward makes
  /// the two passes of the gradient (statistics, then dx).
  virtual void norm(int rows, int cols, Format f, const void* x, void* y, bool backward) = 0;
  /// A memory-bound elementwise pass: dst[i] = src[i]·a + b over `count` elements, with the
  /// widest loads the device has (16 bytes a thread on a GPU, SIMD on the host).
  virtual void elementwise(std::size_t count, Format f, const void* src, void* dst) = 0;
  /// The same pass one element at a time (a GPU thread loads one 2- or 4-byte element; the
  /// host loop is not vectorized): how PyTorch runs the kernels whose layout or dtype change
  /// rules out vector loads (workload::Op::unvectorized: layout copies, casts, eager RoPE).
  virtual void elementwise_unvectorized(std::size_t count, Format f, const void* src, void* dst) = 0;
  /// Adam update of `count` fp32 parameters: `state` holds params, grads, first and second
  /// moments (4·count floats).
  virtual void adam(std::size_t count, float* state) = 0;

  /// Copies `bytes` between buffers of devices of this backend (peer copies between GPUs).
  virtual void copy(const void* src, void* dst, std::size_t bytes) = 0;
  /// Between the device's memory and host memory (synchronous).
  virtual void to_host(const void* src, void* host, std::size_t bytes) = 0;
  virtual void from_host(const void* host, void* dst, std::size_t bytes) = 0;
  /// True when the device's buffers are host memory (shared-memory collectives work in place).
  [[nodiscard]] virtual bool host_memory() const = 0;

  /// Marks this point of the device's work; returns the mark's index since the last resolve().
  virtual int record() = 0;
  /// Waits until the device has done all its work; the host-clock ns of every mark since the
  /// last resolve(), in order.
  [[nodiscard]] virtual std::vector<std::int64_t> resolve() = 0;

  [[nodiscard]] virtual std::size_t live_bytes() const = 0;
  [[nodiscard]] virtual std::size_t peak_bytes() const = 0;
  /// Bytes allocate() can hand out in all (0: no limit).
  [[nodiscard]] virtual std::size_t capacity() const = 0;
  /// The first error the device met (a failed kernel launch, library call or transfer; no
  /// memory for an op's scratch), empty when none. Once set, its results and times are void: the
  /// replay fails the task that saw it (checked after every resolve()).
  [[nodiscard]] virtual std::string failure() const { return {}; }
};

/// Collectives and point-to-point among the members of one group; one object per member, used
/// by the thread that drives the member's device. Buffers are the member's device memory; sizes
/// count fp32 values (a 16-bit payload travels as half as many). Each call returns the host-clock
/// time at which it really started where the backend knows it (the last member's arrival), else
/// the time it was issued; or the failure (a member left, the transport failed).
class Communicator {
 public:
  virtual ~Communicator() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// Every member's `buf` becomes the elementwise sum over members.
  virtual Result<std::int64_t> all_reduce(float* buf, std::size_t count) = 0;
  /// `out` (size·count) receives every member's `in` (count), in rank order.
  virtual Result<std::int64_t> all_gather(const float* in, float* out, std::size_t count) = 0;
  /// `in` holds size·count; `out` (count) receives slice `rank` summed over members.
  virtual Result<std::int64_t> reduce_scatter(const float* in, float* out, std::size_t count) = 0;
  /// `in` holds size·count; slice p goes to member p, whose `out` slice `rank` receives it.
  virtual Result<std::int64_t> all_to_all(const float* in, float* out, std::size_t count) = 0;
  /// Buffered: returns once the message is on its way (the buffer may be reused at once).
  /// Messages between two members match by `tag`, in order.
  virtual Result<std::int64_t> send(const float* buf, std::size_t count, int peer, int tag = 0) = 0;
  /// Waits for the next message from `peer` with `tag`; a shorter message fills the front of `buf`.
  virtual Result<std::int64_t> recv(float* buf, std::size_t count, int peer, int tag = 0) = 0;
  /// Empty when every member arrived.
  virtual Diagnostics barrier() = 0;
  /// This member fails for good: the others stop waiting for it (their calls then fail).
  virtual void leave() = 0;
};

using Communicators = std::vector<std::unique_ptr<Communicator>>;

/// The processes of a multi-process run (mpirun, one process per device): what the replay and
/// the vendor libraries need to coordinate across processes. exec/mpi implements it over MPI.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// Copies `bytes` of `root`'s `data` to every member's.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  /// `root` receives every member's values (any number each) in rank order; the others get {}.
  [[nodiscard]] virtual std::vector<std::vector<std::int64_t>> gather(const std::vector<std::int64_t>& mine,
                                                                      int root) = 0;
  /// Collective over the whole group: the members that pass `member` form a new group, ordered
  /// by `key`; the others get nullptr.
  [[nodiscard]] virtual std::unique_ptr<ProcessGroup> split(bool member, int key) = 0;
  /// This process's member of host-level collectives and messages over the group, on `dev`'s
  /// buffers (staged through host memory where they are device memory).
  [[nodiscard]] virtual std::unique_ptr<Communicator> communicator(Device* dev) = 0;
  virtual void barrier() = 0;
  /// Whether two threads of this process may use communicators of this group and of the groups
  /// split from it at once, each thread its own (MPI: the library gave MPI_THREAD_MULTIPLE). The
  /// replay's overlapped all-to-alls need it: they run on a second thread beside the device's.
  [[nodiscard]] virtual bool concurrent() const { return false; }
  /// Ends every process of the run with `code` (a failure the other processes cannot learn of).
  [[noreturn]] virtual void abort(int code) = 0;
};

/// How a device is opened where it differs from the backend's own (Backend::open_as): a plan's
/// pools as devices of unequal speed, cores and memory on one machine.
struct DeviceSetup {
  double speed = 1.0;       ///< of the device's own pace, 0 < speed ≤ 1 (a device at 0.5 takes twice as long)
  int cores = 0;            ///< cpu cores that split each kernel; 0: the backend's own
  std::size_t memory = 0;   ///< bytes allocate() may hand out; 0: the backend's own (GPUs: their memory)
};

/// Creates the devices of a backend, and communicators among them. "cpu" is always available.
class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual int device_count() const = 0;
  [[nodiscard]] virtual std::unique_ptr<Device> open(int index) = 0;
  /// Opens device `index` as `setup` says: at `speed` of its own pace (a device at 0.5 takes
  /// twice as long for every kernel; cpu: the kernel, then an idle as long again), on `cores`
  /// cores (cpu), with `memory` bytes to allocate (at most what the device has). So pools of one
  /// machine can stand for devices of unequal speed, size and memory. The default opens the
  /// device as open() does, capping nothing, and refuses any other setup (key "speed", "cores"
  /// or "memory"); GPU backends take a memory cap.
  [[nodiscard]] virtual Result<std::unique_ptr<Device>> open_as(int index, const DeviceSetup& setup);
  /// Whether open_as() takes speeds other than 1, and cores other than 0 (the same answer in
  /// every process).
  [[nodiscard]] virtual bool slows() const { return false; }
  [[nodiscard]] virtual bool sets_cores() const { return false; }
  /// What device `index` is: a GPU's product name ("NVIDIA H100 80GB HBM3"), else the backend's
  /// name. `run --pool-devices POOL=MODEL` maps a pool to the devices whose names contain MODEL.
  [[nodiscard]] virtual std::string model(int index) const {
    (void)index;
    return name();
  }
  /// What the devices are, for reports ("cuda: 2 devices on 1 GPU").
  [[nodiscard]] virtual std::string describe() const { return name() + ": " + std::to_string(device_count()) + " devices"; }
  /// One communicator per member (in member order) for a group of devices this backend opened.
  /// The default: shared-memory collectives, in place on host memory, staged through host
  /// buffers for device memory (exec/comm). Vendor backends override it (NCCL).
  [[nodiscard]] virtual Result<Communicators> communicators(const std::vector<Device*>& members);
  /// Multi-process runs: this process's member (`device`, one per process) of collectives over
  /// `group`. The default: the group's host-level collectives (MPI); cuda uses NCCL, its unique
  /// id broadcast over the group.
  [[nodiscard]] virtual Result<std::unique_ptr<Communicator>> communicator(Device* device, ProcessGroup& group);
  /// How the backend's collectives work, for reports ("shared memory", "NCCL 2.28").
  [[nodiscard]] virtual std::string transport(const std::vector<Device*>& members) const;
};

}  // namespace hetsim::exec
