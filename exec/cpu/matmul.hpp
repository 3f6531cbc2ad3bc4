#pragma once
// The cpu backend's dense fp32 matrix products (Eigen's GEMM), in a translation unit of their own:
// under the sanitizer presets it is compiled optimised and uninstrumented (exec/CMakeLists.txt).
// Instrumented at -O1, Eigen's GEMM kernel ran 15× slower than in the ci build and was 86 % of the
// sanitizer suite's time in real replays and calibrations; it is a library's inner loop, and every
// caller of it (the buffers it reads and writes, their sizes) stays instrumented.

namespace hetsim::exec::cpu {

/// C = alpha · op(A) · op(B), or C += … with `accumulate`. Row-major and dense: C is m × n; A is
/// m × k (k × m when `trans_a`, op(A) its transpose), B is k × n (n × k when `trans_b`).
void matmul(const float* a, bool trans_a, const float* b, bool trans_b, float* c, int m, int n, int k, float alpha,
            bool accumulate);

}  // namespace hetsim::exec::cpu
