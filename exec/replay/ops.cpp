#include "exec/replay/ops.hpp"

#include <algorithm>
#include <cstddef>

namespace hetsim::exec {

using workload::OpKind;

namespace {

bool expert_gemm(const workload::Op& op) { return op.kind == OpKind::Gemm && op.name.rfind("expert_", 0) == 0; }

}  // namespace

std::string class_name(int c) {
  if (c == kOptimizerClass) return "optimizer";
  if (c == kExpertGemmClass) return "expert gemm";
  if (c == kAllToAllClass) return "all-to-all";
  return std::string(workload::op_kind_name(static_cast<OpKind>(c)));
}

int op_class(const workload::Op& op) { return expert_gemm(op) ? kExpertGemmClass : static_cast<int>(op.kind); }

std::vector<workload::Op> routed_ops(const std::vector<workload::Op>& ops, const LayerRouting& r, int q, int local) {
  std::vector<workload::Op> out;
  double priced = 0, real = 0;  // expert rows as priced, as routed
  for (int j = 0; j < local; ++j) real += static_cast<double>(r.expert_rows(q * local + j));
  for (const auto& op : ops)
    if (op.name == "expert_up") priced = op.m * op.count;
  for (const auto& op : ops) {
    if (expert_gemm(op)) {
      for (int j = 0; j < local; ++j) {
        const auto rows = r.expert_rows(q * local + j);
        if (rows <= 0) continue;
        workload::Op one = op;
        const double share = static_cast<double>(rows) / std::max(1.0, op.m * op.count);
        one.m = static_cast<double>(rows);
        one.count = 1;
        one.fwd_flops = op.fwd_flops * share;
        one.bwd_flops = op.bwd_flops * share;
        one.fwd_bytes = op.fwd_bytes * share;
        one.bwd_bytes = op.bwd_bytes * share;
        out.push_back(one);
      }
    } else if (op.name.rfind("expert_", 0) == 0 && priced > 0) {
      workload::Op scaled = op;  // the activation between the experts' GEMMs
      const double share = real / priced;
      scaled.elems = op.elems * share;
      scaled.fwd_bytes = op.fwd_bytes * share;
      scaled.bwd_bytes = op.bwd_bytes * share;
      out.push_back(scaled);
    } else {
      out.push_back(op);
    }
  }
  return out;
}

Format format_for(hw::Dtype d) {
  switch (d) {
    case hw::Dtype::Fp32: return Format::Fp32;
    case hw::Dtype::Fp16: return Format::Fp16;
    default: return Format::Bf16;  // bf16, and fp8 (whose GEMMs no backend here runs in 8 bits)
  }
}

void Scratch::fit(std::size_t a, std::size_t b, std::size_t c) {
  if (a > na) { pa = dev->workspace(0, a); na = pa ? a : 0; }
  if (b > nb) { pb = dev->workspace(1, b); nb = pb ? b : 0; }
  if (c > nc) { pc = dev->workspace(2, c); nc = pc ? c : 0; }
  failed = failed || pa == nullptr || pb == nullptr || pc == nullptr;
}

std::size_t as_size(double x) { return std::max<std::size_t>(1, static_cast<std::size_t>(x + 0.5)); }
int as_int(double x) { return static_cast<int>(as_size(x)); }

void run_op(Device& dev, Scratch& sc, const workload::Op& op, bool backward, const OpContext& c) {
  const std::size_t eb = format_bytes(c.format);
  switch (op.kind) {
    case OpKind::Gemm: {
      const int m = as_int(op.m), n = as_int(op.n), k = as_int(op.k);
      // Forward reads m×k and k×n and writes m×n; backward swaps the roles: every buffer must
      // hold the largest of the three matrices.
      const std::size_t most = std::max({std::size_t(m) * n, std::size_t(n) * k, std::size_t(m) * k}) * eb;
      sc.fit(most, most, most);
      if (sc.failed) return;
      for (int i = 0; i < op.count; ++i) {
        if (!backward) {
          dev.gemm(m, n, k, c.format, sc.pa, sc.pb, sc.pc);
        } else {
          dev.gemm(m, k, n, c.format, sc.pa, sc.pb, sc.pc);  // dA = dC·Bᵀ
          dev.gemm(k, n, m, c.format, sc.pa, sc.pb, sc.pc);  // dB = Aᵀ·dC
        }
      }
      return;
    }
    case OpKind::Attention: {
      const auto& a = c.attention;
      // Inputs come from a and b, results go to c (forward: O; backward: dQ, dK, dV from dO in
      // b): no result is read back, so values stay as bounded as the workspaces' fill.
      const std::size_t qk = std::size_t(a.heads) * a.seq * a.head_dim * eb;
      const std::size_t vo = std::size_t(a.heads) * a.seq * a.value_dim() * eb;
      sc.fit(2 * qk + vo, vo, 2 * qk + vo);
      if (sc.failed) return;
      if (backward) dev.attention(a, c.format, sc.pa, sc.pb, sc.pc, true);
      else dev.attention(a, c.format, sc.pa, sc.pc, sc.pb, false);
      return;
    }
    case OpKind::Norm:
    case OpKind::Loss: {
      // The forward pass reads and writes the tensor once: rows × width elements.
      const bool loss = op.kind == OpKind::Loss;
      const Format f = loss ? Format::Fp32 : c.norm_format;  // the loss works on fp32 logits
      const int cols = loss ? c.vocab_rank : c.hidden;
      const std::size_t elems = as_size(op.elems);
      const int rows = as_int(static_cast<double>(elems) / cols);
      const std::size_t bytes = std::size_t(rows) * cols * format_bytes(f);
      sc.fit(bytes, 1, bytes);
      if (sc.failed) return;
      dev.norm(rows, cols, f, sc.pa, sc.pc, backward);
      // The cross-entropy moves more than one normalisation (its casts, max, exp, sum; see
      // head_ops): the rest of the bytes the cost model counts, as an elementwise pass.
      const double rest = (backward ? op.bwd_bytes : op.fwd_bytes).v - 2.0 * static_cast<double>(bytes);
      const std::size_t count = std::min(as_size(std::max(0.0, rest) / 8.0), bytes / 4);
      if (loss && count > 0) {
        for (double left = rest; left > 0; left -= 8.0 * static_cast<double>(count))
          dev.elementwise(count, Format::Fp32, sc.pa, sc.pc);
      }
      return;
    }
    default: {
      // Read one element, write one: the pass moves the op's bytes.
      const double bytes = (backward ? op.bwd_bytes : op.fwd_bytes).v;
      if (bytes <= 0) return;  // a pass this op does not run (backward-only casts, reductions, adds)
      const std::size_t count = as_size(bytes / (2.0 * static_cast<double>(eb)));
      sc.fit(count * eb, 1, count * eb);
      if (sc.failed) return;
      if (op.unvectorized) dev.elementwise_unvectorized(count, c.format, sc.pa, sc.pc);
      else dev.elementwise(count, c.format, sc.pa, sc.pc);
      return;
    }
  }
}

}  // namespace hetsim::exec
