#include "models/cost/compute.hpp"

#include <algorithm>

#include "models/base/assert.hpp"

namespace hetsim::cost {

double gemm_efficiency(const hw::DeviceSpec& dev, double m, double n, double k) {
  const double d = std::min({m, n, k});
  const double half = dev.efficiency.gemm_half_dim;
  return dev.efficiency.gemm * d / (d + half);
}

namespace {
FlopRate peak_or_die(const hw::DeviceSpec& dev, hw::Dtype dtype) {
  auto p = dev.peak_for(dtype);
  HETSIM_ASSERT(p.has_value(), "device lacks the requested number format");
  return *p;
}
}  // namespace

Duration op_time(const hw::DeviceSpec& dev, hw::Dtype dtype, const workload::Op& op, Pass pass) {
  const bool fwd = pass == Pass::Forward;
  const Flops flops = fwd ? op.fwd_flops : op.bwd_flops;
  const Bytes bytes = fwd ? op.fwd_bytes : op.bwd_bytes;
  const int kernels = fwd ? op.fwd_kernels : op.bwd_kernels;

  double eff = 1.0;
  hw::Dtype fmt = dtype;
  using workload::OpKind;
  switch (op.kind) {
    case OpKind::Gemm:
      eff = gemm_efficiency(dev, op.m, op.n, op.k);
      if (op.keep_16bit && fmt == hw::Dtype::Fp8) fmt = hw::Dtype::Bf16;
      break;
    case OpKind::Attention:
      eff = dev.efficiency.attention;
      if (fmt == hw::Dtype::Fp8) fmt = hw::Dtype::Bf16;
      break;
    default:
      // Vector work runs on the non-tensor units; it is memory-bound in practice.
      fmt = hw::Dtype::Fp32;
      eff = 1.0;
      break;
  }
  FlopRate peak;
  if (op.kind == OpKind::Gemm || op.kind == OpKind::Attention) {
    peak = peak_or_die(dev, fmt);
  } else {
    // Devices without a published fp32 vector rate (TPUs): use the 16-bit peak / 16 as a
    // conservative vector rate; these ops are memory-bound anyway.
    auto p = dev.peak_for(hw::Dtype::Fp32);
    peak = p ? *p : FlopRate{peak_or_die(dev, hw::Dtype::Bf16).v / 16};
  }
  const Duration compute = flops / (peak * eff);
  const Duration memory = bytes / (dev.memory_bandwidth * dev.efficiency.memory);
  return max(compute, memory) + dev.efficiency.launch_overhead * kernels;
}

Duration ops_time(const hw::DeviceSpec& dev, hw::Dtype dtype, const std::vector<workload::Op>& ops,
                  Pass pass) {
  Duration t{0};
  for (const auto& op : ops) t += op_time(dev, dtype, op, pass);
  return t;
}

Duration optimizer_time(const hw::DeviceSpec& dev, double params, double bytes_per_param) {
  const Bytes b{params * bytes_per_param};
  return b / (dev.memory_bandwidth * dev.efficiency.memory) + dev.efficiency.launch_overhead;
}

}  // namespace hetsim::cost
