#pragma once
// Scaling a plan down to fit the devices at hand (`hetsim-exec run --fit`): fewer data-parallel
// replicas when there are too few devices, fewer layers per stage when a device has too little
// memory. The shapes of every kernel (hidden size, heads, tensor-parallel degree, micro-batch,
// sequence length) stay as planned, so per-layer timings remain those of the real plan; what
// changed is said, step by step, in `notes`.

#include <string>
#include <vector>

#include "models/base/result.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::exec {

struct Scaled {
  Scenario scenario;  ///< model layers and global batch as scaled
  plan::Plan plan;
  std::vector<std::string> notes;  ///< empty when nothing had to change
};

/// The largest version of (s, p) that needs at most `devices` devices and at most `capacity`
/// bytes on each (0: no limit), by the schedule's own memory timeline. Fails, saying why, when
/// even one replica of one layer per stage does not fit, or the plan has several replica groups.
[[nodiscard]] Result<Scaled> scale_to_fit(const Scenario& s, const plan::Plan& p, int devices, std::size_t capacity);

}  // namespace hetsim::exec
