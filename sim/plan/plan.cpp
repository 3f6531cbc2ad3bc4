#include "sim/plan/plan.hpp"

#include <algorithm>
#include <limits>

namespace hetsim::plan {

int Plan::replicas() const {
  int n = 0;
  for (const auto& g : groups) n += g.replicas;
  return n;
}

int Plan::sequences_per_step() const {
  // A plan file may ask for more than an int (or a 64-bit integer) holds: the validator says so.
  double n = 0;
  for (const auto& g : groups) n += static_cast<double>(g.replicas) * g.micro_batches * micro_batch;
  return static_cast<int>(std::min(n / std::max(1, cp), static_cast<double>(std::numeric_limits<int>::max())));
}

int Plan::devices() const {
  long long n = 0;  // a plan file may ask for more than an int holds: the validator says so
  for (const auto& g : groups)
    for (const auto& s : g.stages) n += static_cast<long long>(g.replicas) * s.tp;
  return static_cast<int>(std::min<long long>(n, std::numeric_limits<int>::max()));
}

bool Plan::folds_experts() const {
  for (const auto& g : groups)
    for (const auto& s : g.stages)
      if (expert_tp_of(s.tp) < s.tp) return true;
  return false;
}

void copy_framework(const Plan& from, Plan& to) {
  to.sequence_parallel = from.sequence_parallel;
  to.grad_sync = from.grad_sync;
  to.overlap_grad_reduce = from.overlap_grad_reduce;
  to.overlap_tp_comm = from.overlap_tp_comm;
  to.overlap_tp_backward = from.overlap_tp_backward;
  to.overlap_ep_comm = from.overlap_ep_comm;
  to.ep_dispatch = from.ep_dispatch;
  to.fp8_dispatch = from.fp8_dispatch;
  to.cp_comm = from.cp_comm;
  to.pipeline_runs = from.pipeline_runs;
  to.recompute_modules = from.recompute_modules;
}

}  // namespace hetsim::plan
