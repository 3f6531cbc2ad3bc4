#include "sim/plan/plan.hpp"

namespace hetsim::plan {

int Plan::replicas() const {
  int n = 0;
  for (const auto& g : groups) n += g.replicas;
  return n;
}

int Plan::sequences_per_step() const {
  int n = 0;
  for (const auto& g : groups) n += g.replicas * g.micro_batches * micro_batch;
  return n;
}

int Plan::devices() const {
  int n = 0;
  for (const auto& g : groups)
    for (const auto& s : g.stages) n += g.replicas * s.tp;
  return n;
}

}  // namespace hetsim::plan
