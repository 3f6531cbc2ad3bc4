#pragma once
// The cpu backend's dense fp32 matrix products (Eigen's GEMM), in a translation unit of their own:
// under the address and undefined-behaviour sanitizers it is compiled optimised and uninstrumented
// (exec/CMakeLists.txt). Instrumented at -O1, Eigen's GEMM kernel held 86 % of the perf samples
// of the slowest sanitized test, which ran 7.5× faster once it was not; most of the suite's time
// went to it. What this file reads and writes is therefore not checked by ASan; under it, matmul
// touches the first and last element of each operand in its callers' (instrumented) code first.

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define HETSIM_MATMUL_TOUCH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HETSIM_MATMUL_TOUCH 1
#endif
#endif
#ifndef HETSIM_MATMUL_TOUCH
#define HETSIM_MATMUL_TOUCH 0
#endif

namespace hetsim::exec::cpu {

/// C = alpha · op(A) · op(B), or C += … with `accumulate`. Row-major and dense: C is m × n; A is
/// m × k (k × m when `trans_a`, op(A) its transpose), B is k × n (n × k when `trans_b`).
/// Requires: m, n, k ≥ 1; C overlaps neither A nor B.
void matmul_kernel(const float* a, bool trans_a, const float* b, bool trans_b, float* c, int m, int n, int k,
                   float alpha, bool accumulate);

inline void matmul(const float* a, bool trans_a, const float* b, bool trans_b, float* c, int m, int n, int k,
                   float alpha, bool accumulate) {
#if HETSIM_MATMUL_TOUCH
  // The kernel is not instrumented: the operands' ends are read here, where ASan sees them.
  const std::size_t na = std::size_t(m) * k, nb = std::size_t(k) * n, nc = std::size_t(m) * n;
  volatile float touch = a[0] + a[na - 1] + b[0] + b[nb - 1] + c[0] + c[nc - 1];
  (void)touch;
#endif
  matmul_kernel(a, trans_a, b, trans_b, c, m, n, k, alpha, accumulate);
}

}  // namespace hetsim::exec::cpu
