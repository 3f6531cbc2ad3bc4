#include "models/cost/compute.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/base/assert.hpp"

namespace hetsim::cost {
namespace {

FlopRate peak_or_die(const hw::DeviceSpec& dev, hw::Dtype dtype) {
  auto p = dev.peak_for(dtype);
  HETSIM_ASSERT(p.has_value(), "device lacks the requested number format");
  return *p;
}

BytesPerSec stream_bandwidth(const hw::DeviceSpec& dev) {
  return dev.memory_bandwidth * dev.efficiency.memory;
}

// The streaming bandwidth of one op: its class's own calibrated fraction where there is one,
// PyTorch's non-vectorized kernel paths at theirs.
BytesPerSec class_bandwidth(const hw::DeviceSpec& dev, const workload::Op& op) {
  const hw::Efficiency& e = dev.efficiency;
  double f = 0;
  if (op.kind == workload::OpKind::Norm) f = e.norm_memory;
  if (op.kind == workload::OpKind::Loss) f = e.loss_memory;
  if (op.unvectorized && e.unvectorized_memory > 0) f = e.unvectorized_memory;
  if (op.score_traffic && e.score_memory > 0) f = e.score_memory;
  return dev.memory_bandwidth * (f > 0 ? f : e.memory);
}

// One kernel: its compute (or memory) time, whichever binds, plus its launch gap.
void kernel(OpTime& t, const hw::DeviceSpec& dev, Duration compute, Bytes bytes, BytesPerSec bw,
            int kernels = 1, double repeat = 1) {
  const Duration memory = bytes / bw;
  const Duration launch = dev.efficiency.launch_overhead * kernels;
  t.compute += compute * repeat;
  t.memory += memory * repeat;
  t.launch += launch * repeat;
  t.total += (max(compute, memory) + launch) * repeat;
}

}  // namespace

Duration gemm_compute_time(const hw::DeviceSpec& dev, FlopRate peak, double m, double n, double k,
                           double batch, double main_loop) {
  const hw::Efficiency& e = dev.efficiency;
  const double g = main_loop > 0 ? main_loop : e.gemm;
  m = std::max(1.0, std::ceil(m));
  n = std::max(1.0, std::ceil(n));
  k = std::max(1.0, std::ceil(k));
  batch = std::max(1.0, std::ceil(batch));
  const double flops = 2 * m * n * k * batch;
  if (e.sms <= 0) {
    const double d = std::min({m, n, k});
    return Duration{flops / (peak.v * g * d / (d + e.gemm_half_dim))};
  }
  const double sms = e.sms;
  const double rate_sm = peak.v * g / sms;  // main-loop FLOP/s of one SM
  const double tiles = std::ceil(m / e.tile_m) * std::ceil(n / e.tile_n) * batch;
  const double bw = stream_bandwidth(dev).v;
  double best = std::numeric_limits<double>::infinity();
  // Split-K only pays when the tiles leave SMs idle; each slice keeps at least 128 of k.
  for (int split = 1; split <= 16; split *= 2) {
    if (split > 1 && (tiles * split / 2 >= sms || k / split < 128)) break;
    const double slice = std::ceil(k / split);
    const double waves = std::ceil(tiles * split / sms);
    double t = waves * (2.0 * e.tile_m * e.tile_n * slice / rate_sm + e.tile_overhead.v);
    if (split > 1) t += 2.0 * split * m * n * batch * 4 / bw;  // fp32 partials written, read back
    best = std::min(best, t);
  }
  return Duration{best};
}

Duration gemm_model_time(const hw::DeviceSpec& dev, hw::Dtype dtype, double m, double n, double k) {
  const FlopRate peak = peak_or_die(dev, dtype);
  const Duration compute = gemm_compute_time(dev, peak, m, n, k, 1, dev.efficiency.main_loop(dtype));
  const Duration memory = Bytes{(m * k + k * n + m * n) * hw::dtype_bytes(dtype)} / stream_bandwidth(dev);
  return max(compute, memory) + dev.efficiency.launch_overhead;
}

double measured_gemm_factor(const hw::DeviceSpec& dev, hw::Dtype dtype, double m, double n, double k) {
  if (dev.measured_gemms.empty()) return 1;
  constexpr double kPrior = 1.0 / 16;  // the model's own weight: four octaves away
  double sum_w = 0, sum_wr = 0;
  for (const hw::MeasuredGemm& g : dev.measured_gemms) {
    if (g.dtype != dtype) continue;
    const double r = std::log(g.time / gemm_model_time(dev, dtype, g.m, g.n, g.k));
    const double dm = std::log2(m / g.m), dn = std::log2(n / g.n), dk = std::log2(k / g.k);
    const double d2 = dm * dm + dn * dn + dk * dk;
    if (d2 < 1e-12) return std::exp(r);  // a measured shape: its own time
    sum_w += 1 / d2;
    sum_wr += r / d2;
  }
  return sum_w > 0 ? std::exp(sum_wr / (sum_w + kPrior)) : 1.0;
}

double gemm_efficiency(const hw::DeviceSpec& dev, FlopRate peak, double m, double n, double k,
                       double batch) {
  const double flops = 2 * m * n * k * batch;
  return flops / (gemm_compute_time(dev, peak, m, n, k, batch).v * peak.v);
}

double attention_efficiency(const hw::DeviceSpec& dev, double seq, double head_dim, bool causal) {
  const hw::Efficiency& e = dev.efficiency;
  const double half = e.attention_half_seq;
  // An op without a sequence length (seq = 0) is priced at the long-sequence figure.
  double eta = e.attention * (half > 0 && seq > 0 ? seq / (seq + half) : 1.0);
  // Head dimension: kernels run fewer FLOPs per byte of Q/K/V tile at small d; above 128 the
  // published kernels do not get faster (register pressure), so the factor stops at 1.
  const double hh = e.attention_head_half;
  if (hh > 0 && head_dim > 0) eta *= std::min(1.0, (head_dim / (head_dim + hh)) / (128.0 / (128.0 + hh)));
  if (!causal) eta *= e.attention_noncausal;
  return eta;
}

double attention_pass_efficiency(const hw::DeviceSpec& dev, Pass pass, double seq, double head_dim, bool causal) {
  const double eta = attention_efficiency(dev, seq, head_dim, causal);
  const double rho = dev.efficiency.attention_bwd > 0 ? dev.efficiency.attention_bwd : 1.0;
  const double fwd = eta * (1 + 2.5 / rho) / 3.5;
  if (pass == Pass::Forward) return fwd;
  // Wide heads: the backward's dQ, dK, dV accumulators crowd the registers above d = 192
  // (attention_bwd_wide at d ≥ 256, linear between; docs/cost-models.md, "Attention").
  const double wide = std::clamp((head_dim - 192.0) / 64.0, 0.0, 1.0);
  return rho * fwd * (1 - wide * (1 - dev.efficiency.attention_bwd_wide));
}

double attention_kernel_share(const hw::DeviceSpec& dev, workload::AttentionKernel kernel, Pass pass) {
  using workload::AttentionKernel;
  switch (kernel) {
    case AttentionKernel::Auto:  // resolved before pricing; the device's own kernels if not
    case AttentionKernel::Vendor:
      return 1.0;
    case AttentionKernel::Fa2:
      return dev.efficiency.attention_fa2;
    case AttentionKernel::Triton:
      return dev.efficiency.attention_fa2 / (pass == Pass::Forward ? kTritonFaForward : kTritonFaBackward);
  }
  return 1.0;
}

OpTime op_time_parts(const hw::DeviceSpec& dev, hw::Dtype dtype, const workload::Op& op, Pass pass) {
  const bool fwd = pass == Pass::Forward;
  using workload::OpKind;
  OpTime t;
  switch (op.kind) {
    case OpKind::Gemm: {
      const hw::Dtype fmt = op.keep_16bit && dtype == hw::Dtype::Fp8 ? hw::Dtype::Bf16 : dtype;
      const FlopRate peak = peak_or_die(dev, fmt);
      const double batch = op.batched ? op.count : 1;
      const double repeat = op.batched ? 1 : op.count;
      const double ge = op.operand_bytes;
      const double m = op.m, n = op.n, k = op.k;
      // (Unfused attention's batched s×s products stream at their own measured rate.)
      const BytesPerSec bw = op.score_traffic ? class_bandwidth(dev, op) : stream_bandwidth(dev);
      // One GEMM kernel of shape (a, b, c), scaled by what the measured GEMMs say of it. The
      // backward's run with fp8's precise accumulation where the device distinguishes it.
      auto gemm = [&](double a, double b, double c, Bytes bytes) {
        const double main = fwd ? dev.efficiency.main_loop(fmt) : dev.efficiency.backward_main_loop(fmt);
        const Duration compute = gemm_compute_time(dev, peak, a, b, c, batch, main);
        // Unfused attention's score products bound by their own measured streaming rate already
        // run as measured: the timed GEMMs' factor (against the triad's rate) would slow them
        // twice. Bound by compute, they take it as any GEMM.
        const bool own_rate = op.score_traffic && dev.efficiency.score_memory > 0 && bytes / bw >= compute;
        const double f = own_rate ? 1.0 : measured_gemm_factor(dev, fmt, a, b, c);
        kernel(t, dev, compute, bytes, bw, 1, repeat * f);
      };
      if (fwd) {
        gemm(m, n, k, Bytes{(m * k + k * n + m * n) * ge * batch});
        return t;
      }
      // dA[m×k] = dC[m×n]·Bᵀ; dB[k×n] = Aᵀ[k×m]·dC[m×n], accumulated into the weight gradient
      // (fp32 main grads are read and written: wgrad_out_bytes per element).
      const double wout = op.wgrad_out_bytes > 0 ? op.wgrad_out_bytes : ge;
      gemm(m, k, n, Bytes{(m * n + n * k + m * k) * ge * batch});
      gemm(k, n, m, Bytes{((k * m + m * n) * ge + k * n * wout) * batch});
      return t;
    }
    case OpKind::Attention: {
      const hw::Dtype fmt = dtype == hw::Dtype::Fp8 ? hw::Dtype::Bf16 : dtype;
      const FlopRate peak = peak_or_die(dev, fmt);
      const Flops flops = fwd ? op.fwd_flops : op.bwd_flops;
      const Bytes bytes = fwd ? op.fwd_bytes : op.bwd_bytes;
      const int kernels = fwd ? op.fwd_kernels : op.bwd_kernels;
      const double eta = attention_pass_efficiency(dev, pass, op.seq, op.head_dim, op.causal) *
                         attention_kernel_share(dev, op.attention_kernel, pass);
      kernel(t, dev, flops / (peak * eta), bytes, stream_bandwidth(dev), kernels);
      return t;
    }
    default: {
      // Vector work runs on the non-tensor units; it is memory-bound in practice. Devices
      // without a published fp32 vector rate (TPUs): the 16-bit peak / 16, conservatively.
      auto p = dev.peak_for(hw::Dtype::Fp32);
      const FlopRate peak = p ? *p : FlopRate{peak_or_die(dev, hw::Dtype::Bf16).v / 16};
      const Flops flops = fwd ? op.fwd_flops : op.bwd_flops;
      const Bytes bytes = fwd ? op.fwd_bytes : op.bwd_bytes;
      const int kernels = fwd ? op.fwd_kernels : op.bwd_kernels;
      kernel(t, dev, flops / peak, bytes, class_bandwidth(dev, op), kernels);
      return t;
    }
  }
  return t;
}

Duration op_time(const hw::DeviceSpec& dev, hw::Dtype dtype, const workload::Op& op, Pass pass) {
  return op_time_parts(dev, dtype, op, pass).total;
}

Duration ops_time(const hw::DeviceSpec& dev, hw::Dtype dtype, const std::vector<workload::Op>& ops,
                  Pass pass) {
  Duration t{0};
  for (const auto& op : ops) t += op_time(dev, dtype, op, pass);
  return t;
}

int kernels(const std::vector<workload::Op>& ops, Pass pass) {
  int n = 0;
  for (const auto& op : ops) n += pass == Pass::Forward ? op.fwd_kernels : op.bwd_kernels;
  return n;
}

Duration pass_time(const hw::DeviceSpec& dev, hw::Dtype dtype, const std::vector<workload::Op>& ops,
                   Pass pass) {
  return max(ops_time(dev, dtype, ops, pass), dev.efficiency.host_overhead * kernels(ops, pass));
}

Duration stream_time(const hw::DeviceSpec& dev, Bytes bytes, int kernels) {
  return bytes / stream_bandwidth(dev) + dev.efficiency.launch_overhead * kernels;
}

Duration optimizer_time(const hw::DeviceSpec& dev, double params, double bytes_per_param) {
  const double f = dev.efficiency.optimizer_memory > 0 ? dev.efficiency.optimizer_memory : dev.efficiency.memory;
  return Bytes{params * bytes_per_param} / (dev.memory_bandwidth * f) + dev.efficiency.launch_overhead;
}

}  // namespace hetsim::cost
