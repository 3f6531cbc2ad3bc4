#pragma once
// What the hardware is: devices, links, nodes and clusters, as plain value types.
// Figures come from the catalogue (models/catalog/*.toml, loaded by sim/io) or a scenario.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/base/units.hpp"

namespace hetsim::hw {

/// Number formats a device can compute in; GEMM peaks differ per format.
enum class Dtype { Fp32, Tf32, Bf16, Fp16, Fp8 };
inline constexpr std::array kAllDtypes{Dtype::Fp32, Dtype::Tf32, Dtype::Bf16, Dtype::Fp16,
                                       Dtype::Fp8};
[[nodiscard]] std::string_view dtype_name(Dtype d);
/// Bytes per element: 4, 4, 2, 2, 1.
[[nodiscard]] double dtype_bytes(Dtype d);

/// A point-to-point or fabric link, per device and per direction.
/// A collective measured over a group of `ranks` devices inside one node of a fabric (nccl-tests'
/// time and bus bandwidth at the sizes training sends): time = call + f·size/busbw, with f = 2(n−1)/n
/// for an all-reduce, (n−1)/n for an all-gather or reduce-scatter. Replaces the ring formula for
/// that collective and group size (docs/cost-models.md#algorithms).
struct GroupPoint {
  enum class Kind : std::uint8_t { AllReduce, AllGather, ReduceScatter };
  static constexpr std::array kAllKinds{Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter};
  int ranks = 0;
  Kind kind = Kind::AllReduce;
  Duration call;      ///< fixed cost of one call, fitted
  BytesPerSec busbw;  ///< bus bandwidth, fitted
  std::string source;
};

/// The catalogue's name of a group point's collective: "all_reduce", "all_gather", "reduce_scatter".
[[nodiscard]] std::string_view group_kind_name(GroupPoint::Kind k);

struct LinkSpec {
  std::string name;       ///< catalogue id, e.g. "nvlink4"
  std::string display;    ///< e.g. "NVLink 4 + NVSwitch"
  bool scale_up = false;  ///< true for intra-node fabrics, false for NICs
  BytesPerSec bandwidth;  ///< per device (fabric) or per port (NIC), one direction
  Duration latency;       ///< alpha: per-hop latency of one collective step
  Duration call_latency;  ///< fixed cost of one collective call (NCCL's base latency)
  double efficiency = 1;  ///< achieved collective bus bandwidth / bandwidth (measured)
  /// Full-mesh fabrics (xGMI, Gaudi's on-die RoCE): one direct link to each peer, this rate per
  /// direction; a device reaches `bandwidth` only when it talks to enough peers at once. 0: a
  /// switched fabric (NVSwitch), where one peer can take the whole `bandwidth`.
  BytesPerSec per_peer{0};
  /// All-to-all traffic (many peers at once, one NIC per rank) as a share of `bandwidth`, where
  /// measured apart from the rings `efficiency` describes; 0: the same as `efficiency`.
  double all_to_all_efficiency = 0;
  /// A communication library's cost per peer of an all-to-all whose sends and receives to all
  /// peers are in flight together (NCCL's grouped send/recv): the call then pays `latency` once
  /// and this per peer; 0: every peer a step of its own, `latency` each.
  Duration peer_latency{0};
  /// Collectives measured over groups smaller than a node (scale-up links only); a group size
  /// and collective without one take the ring formula.
  std::vector<GroupPoint> groups;
  std::string source;

  /// Bandwidth a collective actually sees: bandwidth × efficiency.
  [[nodiscard]] BytesPerSec effective() const { return bandwidth * efficiency; }
};

/// Cost-model efficiency parameters of a device, per op class (docs/cost-models.md#compute).
/// Every figure is a measured microbenchmark or a derivation from one (catalogue sources).
struct Efficiency {
  // GEMM. With `sms` > 0 the time of a GEMM is that of its waves of output tiles
  // (tile and wave quantisation, split-K when tiles are fewer than SMs); with sms = 0 (devices
  // whose tiling is not modelled, calibrated cpu cores) the half-dimension curve is used.
  double gemm = 0.8;          ///< main-loop GEMM throughput / peak (best shape, MAMF-style)
  /// The same for fp8 GEMMs, of the fp8 peak (fp8 tensor cores reach a smaller fraction of
  /// their doubled peak on most devices); 0: `gemm`.
  double gemm_fp8 = 0;
  /// The same for fp8 GEMMs that promote their partial sums to fp32 as they go (cuBLASLt
  /// without fast accumulation: Transformer Engine's split accumulator, torchao's default),
  /// which training frameworks run for the backward's input and weight gradients; 0: `gemm_fp8`.
  double gemm_fp8_precise = 0;
  double gemm_half_dim = 64;  ///< sms = 0 only: min(M,N,K) at which GEMM efficiency halves
  int sms = 0;                ///< SMs / CUs that run GEMM tiles in parallel
  int tile_m = 128;           ///< output tile of the GEMM library's main kernels, rows
  int tile_n = 256;           ///< … and columns
  Duration tile_overhead{1e-6};  ///< per tile: pipeline fill and the epilogue left unhidden
  // Fused (flash) attention (docs/cost-models.md#compute): of the 16-bit peak,
  //   attention · s/(s + attention_half_seq) · head(d) · (causal ? 1 : attention_noncausal),
  // head(d) = min(1, [d/(d + h½)] / [128/(128 + h½)]), h½ = attention_head_half; the forward
  // and backward passes split it so that fwd + bwd (1 + 2.5 FLOP units) take 3.5/that, with
  // backward at attention_bwd × the forward's throughput.
  double attention = 0.5;          ///< causal fwd+bwd throughput / peak, long sequences, d = 128
  double attention_half_seq = 0;   ///< sequence length at which it halves (0: flat)
  double attention_head_half = 0;  ///< head dim at which it halves (0: flat in d)
  double attention_bwd = 1;        ///< backward / forward throughput per counted FLOP
  /// The backward's throughput at head dim ≥ 256 / at d ≤ 192, linear in d between (cuDNN on
  /// Hopper: 0.68–0.75; register pressure of the dQ, dK, dV accumulators); 1: no loss.
  double attention_bwd_wide = 1;
  double attention_noncausal = 1;  ///< non-causal / causal throughput at the same length
  /// FlashAttention-2's kernels (what PyTorch's scaled_dot_product_attention runs as its flash
  /// backend) / the fused attention above, at the same shape: 1 where the figure above is
  /// FlashAttention-2's (A100, V100, …), below 1 where it is a newer vendor kernel (cuDNN,
  /// FlashAttention-3 on Hopper).
  double attention_fa2 = 1;
  // Memory-bound kernels (norms, elementwise, loss, optimizer).
  double memory = 0.85;            ///< achieved streaming bandwidth / peak bandwidth
  /// The same for the kernels of one op class where it differs (a calibrated cpu core runs a
  /// norm or a softmax arithmetic-bound); 0: `memory`.
  double norm_memory = 0;       ///< norms (forward and backward)
  double loss_memory = 0;       ///< the cross-entropy
  double optimizer_memory = 0;  ///< the optimizer step
  /// PyTorch eager kernels that take TensorIterator's non-vectorized paths: dtype-converting
  /// copies other than fp32→16-bit (autocast's gradient casts back to fp32) and elementwise
  /// ops on strided or broadcast operands (eager RoPE on transposed heads, GQA's repeated K and
  /// V); 0: `memory`.
  double unvectorized_memory = 0;
  /// Unfused attention's s×s tensors (the batched score and context products, the softmax
  /// between them, workload::Op::score_traffic), streamed well under `memory` where measured;
  /// 0: `memory`.
  double score_memory = 0;
  /// The hierarchical expert dispatch's (DeepEP's normal kernels') own rate on the node's
  /// fabric at their default SM budget, per rank, over every token copy a rank receives (its own
  /// included), as DeepEP's tests count it; the fabric step takes the slower of this and the
  /// fabric's. 0: the fabric's alone.
  BytesPerSec dispatch_bandwidth{0};
  Duration launch_overhead{4e-6};  ///< device-side cost per kernel (launch gap)
  /// Host (framework) time to issue one kernel; a layer takes at least its kernels × this.
  /// 0: the host never limits.
  Duration host_overhead{0};
  /// The main-loop fraction of the peak of GEMMs in `dt`.
  [[nodiscard]] double main_loop(Dtype dt) const { return dt == Dtype::Fp8 && gemm_fp8 > 0 ? gemm_fp8 : gemm; }
  /// … of the backward's GEMMs (input and weight gradients), precise accumulation in fp8.
  [[nodiscard]] double backward_main_loop(Dtype dt) const {
    return dt == Dtype::Fp8 && gemm_fp8_precise > 0 ? gemm_fp8_precise : main_loop(dt);
  }
  /// Fraction of compute throughput lost while a collective runs beside it (the SMs its
  /// kernels occupy, and their memory traffic).
  double overlap_slowdown = 0;
};
/// The typical node a device ships in.
struct NodeShape {
  int devices = 8;
  std::string fabric;  ///< LinkSpec name of the intra-node fabric
  int nics = 8;
  std::string nic;  ///< LinkSpec name of one NIC port
};

/// One GEMM timed on the device (`hetsim-exec calibrate`): C[m×n] = A[m×k]·B[k×n] in `dtype`,
/// one call, launch included. The cost model follows these times (cost::measured_gemm_factor).
struct MeasuredGemm {
  double m = 0, n = 0, k = 0;
  Dtype dtype = Dtype::Fp32;
  Duration time{0};
};

/// One accelerator model.
struct DeviceSpec {
  std::string name;     ///< catalogue id, e.g. "h100-sxm5"
  std::string display;  ///< e.g. "NVIDIA H100 SXM5 80GB"
  std::string vendor;
  std::map<Dtype, FlopRate> peak;  ///< dense peak per format; absent = unsupported
  Bytes memory;
  BytesPerSec memory_bandwidth;
  Watts tdp;
  double price_usd_per_hour = 0;  ///< indicative rental price per device-hour
  double purchase_usd = 0;        ///< indicative purchase price per device
  double mtbf_hours = 0;          ///< mean time between interruptions, per device
  NodeShape node;
  Efficiency efficiency;
  /// GEMMs timed on this device (a calibrated profile); empty: the efficiency model alone.
  std::vector<MeasuredGemm> measured_gemms;
  std::map<std::string, std::string> sources;  ///< figure group -> where it comes from
  /// Read from the built-in catalogue (whose sources a reader may have skipped), not from a
  /// file of the user's that may reuse its name with other figures.
  bool builtin = false;

  /// Peak for `d`, if the device supports it.
  [[nodiscard]] std::optional<FlopRate> peak_for(Dtype d) const;
};

/// A homogeneous group of nodes in a cluster.
struct PoolSpec {
  std::string name;  ///< how plans refer to the pool; defaults to the device name
  DeviceSpec device;
  int nodes = 1;
  int devices_per_node = 8;
  LinkSpec fabric;  ///< intra-node
  LinkSpec nic;     ///< one NIC port
  int nics_per_node = 8;

  [[nodiscard]] int devices() const { return nodes * devices_per_node; }
  /// Scale-out bandwidth per device: nics · nic bandwidth / devices_per_node, per direction.
  [[nodiscard]] BytesPerSec nic_bandwidth_per_device() const;
};

enum class Topology { FatTree, RailOptimized, Torus };
[[nodiscard]] std::string_view topology_name(Topology t);

/// The network between nodes (and between pools).
struct NetworkSpec {
  Topology topology = Topology::FatTree;
  double oversubscription = 1.0;  ///< ≥ 1: the fabric's bisection is divided by this
};

/// A whole cluster: pools of nodes on one network.
struct ClusterSpec {
  std::vector<PoolSpec> pools;
  NetworkSpec network;
  [[nodiscard]] int devices() const;
};

/// Places blocks of devices in their pools, in the order asked (a plan's simulated devices:
/// group, then stage): a block starts on a multiple of its tp, and at the next node when it would
/// not fit in the rest of this one and the pool has room there. The SimGrid engine's placement
/// and the cost model's data-parallel rings of several replica groups both follow it.
class BlockPlacer {
 public:
  explicit BlockPlacer(const ClusterSpec& c) : c_(c), used_(c.pools.size(), 0) {}
  /// The device (within `pool`) where the next block of `count` devices, in units of `tp`,
  /// starts. The block may end beyond the pool's devices: the caller checks.
  int place(int pool, int tp, int count);

 private:
  const ClusterSpec& c_;
  std::vector<int> used_;
};

}  // namespace hetsim::hw
