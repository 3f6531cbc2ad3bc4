#pragma once
// How the replay runs the ops a compute task carries (internal to exec/replay): each op as its
// kernel on the device's scratch buffers, in the plan's format, and the op classes its time is
// reported in (the cost model's op kinds, then the optimizer, a MoE layer's expert GEMMs and
// expert parallelism's all-to-alls).

#include <cstddef>
#include <string>
#include <vector>

#include "exec/backend.hpp"
#include "exec/replay/routing.hpp"
#include "models/hw/device.hpp"
#include "models/workload/layer_ops.hpp"

namespace hetsim::exec {

/// Op classes timed inside a task: workload::OpKind's, then these three.
inline constexpr int kClasses = 9;
inline constexpr int kOptimizerClass = 6;
inline constexpr int kExpertGemmClass = 7;
inline constexpr int kAllToAllClass = 8;
/// The class's name in io::TaskParts ("gemm", …, "optimizer", "expert gemm", "all-to-all").
[[nodiscard]] std::string class_name(int c);
/// The class `op`'s time is reported in.
[[nodiscard]] int op_class(const workload::Op& op);

/// A MoE layer's ops as EP rank `q` (holding `local` experts) runs them under routing `r`: each
/// local expert's GEMMs with the rows routed to it (a grouped GEMM of the real per-expert token
/// counts; an expert no token reached runs nothing), its activation over those rows. The rest
/// as priced.
[[nodiscard]] std::vector<workload::Op> routed_ops(const std::vector<workload::Op>& ops, const LayerRouting& r, int q,
                                                   int local);

/// The backend format of the training precision (fp8 runs in bf16).
[[nodiscard]] Format format_for(hw::Dtype d);

/// x rounded to the nearest, at least 1.
[[nodiscard]] std::size_t as_size(double x);
[[nodiscard]] int as_int(double x);

/// The device's three scratch buffers, big enough for the largest operands seen so far.
struct Scratch {
  Device* dev = nullptr;
  void *pa = nullptr, *pb = nullptr, *pc = nullptr;
  std::size_t na = 0, nb = 0, nc = 0;
  bool failed = false;  ///< a workspace could not be had: the task must fail, not compute
  void fit(std::size_t a, std::size_t b, std::size_t c);
  [[nodiscard]] float* fa() const { return static_cast<float*>(pa); }
  [[nodiscard]] float* fb() const { return static_cast<float*>(pb); }
  [[nodiscard]] float* fc() const { return static_cast<float*>(pc); }
};

/// What the ops of a compute task run as (the same op lists the cost model prices).
struct OpContext {
  Format format = Format::Fp32;
  Format norm_format = Format::Fp32;  ///< the norms' tensors: fp32 under autocast, else `format`
  AttentionShape attention;  ///< heads: micro-batch × heads per rank
  int hidden = 1;            ///< norm width
  int vocab_rank = 1;        ///< loss width (the rank's vocabulary shard)
};

/// Runs one op's pass as its kernel: GEMMs as GEMMs of the op's shape (backward: the data- and
/// weight-gradient GEMMs), attention as the blocked softmax attention (FlashAttention-2's five
/// GEMMs backward), norms and the loss as row normalisations, everything else as an elementwise
/// pass over the op's bytes (one element at a time for the ops PyTorch cannot vectorize). Sets
/// sc.failed, running nothing, when a scratch buffer cannot be had.
void run_op(Device& dev, Scratch& sc, const workload::Op& op, bool backward, const OpContext& c);

}  // namespace hetsim::exec
