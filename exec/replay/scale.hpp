#pragma once
// Scaling a plan down to fit the devices at hand (`hetsim-exec run --fit`): fewer data-parallel
// replicas when there are too few devices, fewer layers per stage when a device has too little
// memory, for plans of one replica group or several. The shapes of every kernel (hidden size, heads, tensor-parallel degree, micro-batch,
// sequence length) stay as planned, so per-layer timings remain those of the real plan; what
// changed is said, step by step, in `notes`.

#include <cstdint>
#include <optional>
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
/// bytes on each (0: no limit), by the schedule's own memory timeline. Several replica groups
/// keep their proportions: each loses replicas in the same share (at least one, or ep, each),
/// then the largest ones until the plan fits; every group's stages lose layers in the same
/// share, and a group left with more layers than another gives up the extra from its largest
/// stages, so that every group still holds the whole (shortened) model. Fails, saying why, when
/// even one replica of each group with one layer (one chunk) per stage does not fit.
[[nodiscard]] Result<Scaled> scale_to_fit(const Scenario& s, const plan::Plan& p, int devices, std::size_t capacity);
/// The same with a capacity per pool of the scenario (index as in ClusterSpec::pools; 0: no
/// limit): every device fits its own pool's.
[[nodiscard]] Result<Scaled> scale_to_fit(const Scenario& s, const plan::Plan& p, int devices,
                                          const std::vector<std::size_t>& capacity);

/// A device whose simulated peak is above its pool's capacity.
struct OverCapacity {
  std::string device;  ///< the folded device's label
  std::size_t pool = 0;
  std::int64_t needs = 0;  ///< bytes at its peak
  std::size_t has = 0;     ///< its pool's capacity, bytes
};
/// The first device of (s, p) whose peak on the native engine is above its pool's capacity
/// (`capacity` per pool of the scenario, 0: no limit); nothing when all fit; the engine's errors
/// when the plan cannot be run.
[[nodiscard]] Result<std::optional<OverCapacity>> over_capacity(const Scenario& s, const plan::Plan& p,
                                                                const std::vector<std::size_t>& capacity);

/// Why a plan with context parallelism (cp > 1) is not replayed; nothing when cp = 1
/// (docs/executor.md, Limits): said by the replay and before `--fit` cuts anything.
[[nodiscard]] std::optional<Diagnostic> context_parallel_refusal(const plan::Plan& p);

}  // namespace hetsim::exec
