#pragma once
// Stragglers and step-to-step variability of device compute ([variability];
// docs/scenario-format.md#variability, docs/simulation.md#variability). Plain data: the reader
// fills it, sim/engine/variability samples it.

#include <cstdint>

namespace hetsim {

/// Each real device's compute (forward, backward, recompute, optimizer tasks) in a sampled
/// step takes  persistent · exp(jitter · z_step)  times its nominal time, where `persistent`
/// is drawn once per seed: slow_factor for a straggler (else 1), times exp(sigma · z_device);
/// z are standard normal draws. All factors are exactly 1 when every spread is 0.
struct VariabilitySpec {
  std::uint64_t seed = 1;     ///< default: [scenario] seed
  int steps = 100;            ///< steps sampled (1 … 100,000)
  double slow_fraction = 0;   ///< each device a straggler with this probability (0 … 1)
  int slow_devices = 0;       ///< or exactly this many stragglers, chosen by the seed
  double slow_factor = 1;     ///< a straggler's compute takes this × longer (≥ 1)
  double sigma = 0;           ///< per-device lognormal spread of speed, fixed for the seed
  double jitter = 0;          ///< per-step, per-device lognormal spread
  /// What `hetsim plan` ranks by: 0 = the nominal step, else this percentile (1–100) of the
  /// sampled steps (rank_by = "p90").
  int rank_by = 0;
  /// True when every factor is 1 (no straggler can be drawn, no spread).
  [[nodiscard]] bool none() const {
    return sigma == 0 && jitter == 0 && (slow_factor == 1 || (slow_fraction == 0 && slow_devices == 0));
  }
};

}  // namespace hetsim
