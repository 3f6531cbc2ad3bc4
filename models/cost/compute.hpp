#pragma once
// Compute cost of ops on a device: a roofline with a shape-dependent GEMM efficiency and a
// launch overhead per kernel. Formulas and sources: docs/cost-models.md#compute.

#include <vector>

#include "models/hw/device.hpp"
#include "models/workload/layer_ops.hpp"

namespace hetsim::cost {

enum class Pass { Forward, Backward };

/// Fraction of peak a GEMM with this shape reaches on `dev`:
///   gemm · d/(d + gemm_half_dim), d = min(m, n, k).
/// Small or skinny GEMMs cannot fill the device's tiles and waves, so they run far below peak.
[[nodiscard]] double gemm_efficiency(const hw::DeviceSpec& dev, double m, double n, double k);

/// Time of one op (all its kernels) in one pass, on one device, in format `dtype`:
///   max(flops / (peak · efficiency), bytes / (memory_bandwidth · memory)) + kernels · launch.
/// Attention uses the `attention` efficiency and the 16-bit peak (fused kernels run in bf16 even
/// in fp8 training). Requires: dev.peak_for(dtype) (checked by the scenario loader).
[[nodiscard]] Duration op_time(const hw::DeviceSpec& dev, hw::Dtype dtype,
                               const workload::Op& op, Pass pass);

/// Sum of op_time over a list of ops.
[[nodiscard]] Duration ops_time(const hw::DeviceSpec& dev, hw::Dtype dtype,
                                const std::vector<workload::Op>& ops, Pass pass);

/// Time of the optimizer step over `params` local parameters: a memory-bound sweep over
/// `bytes_per_param` bytes per parameter (Adam mixed precision: 30; see docs).
[[nodiscard]] Duration optimizer_time(const hw::DeviceSpec& dev, double params,
                                      double bytes_per_param);

}  // namespace hetsim::cost
