#include "exec/cpu/matmul.hpp"

#include <Eigen/Core>

namespace hetsim::exec::cpu {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<RowMatrix>;
using ConstMap = Eigen::Map<const RowMatrix>;

template <class A, class B>
void product(const A& a, const B& b, float* c, int m, int n, float alpha, bool accumulate) {
  Map out(c, m, n);
  if (accumulate) out.noalias() += alpha * (a * b);
  else out.noalias() = alpha * (a * b);
}

}  // namespace

void matmul_kernel(const float* a, bool trans_a, const float* b, bool trans_b, float* c, int m, int n, int k,
                   float alpha, bool accumulate) {
  const ConstMap A(a, trans_a ? k : m, trans_a ? m : k), B(b, trans_b ? n : k, trans_b ? k : n);
  if (!trans_a && !trans_b) product(A, B, c, m, n, alpha, accumulate);
  else if (!trans_a) product(A, B.transpose(), c, m, n, alpha, accumulate);
  else if (!trans_b) product(A.transpose(), B, c, m, n, alpha, accumulate);
  else product(A.transpose(), B.transpose(), c, m, n, alpha, accumulate);
}

}  // namespace hetsim::exec::cpu
