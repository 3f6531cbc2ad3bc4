#pragma once
// Goodput: the share of wall-clock time a long training job spends on training that is kept,
// once interruptions, checkpoints and restarts are paid (docs/cost-models.md#goodput).
//
// A job of N devices is interrupted at the rate Σ count_i / mtbf_i (each device's mean time
// between interruptions, catalogue `mtbf_hours`). It writes a checkpoint of size S at bandwidth
// B (C = S / B) every τ of training; an interruption loses on average half a segment (τ + C)/2
// and costs a restart R. To first order (Young 1974; Daly 2006), the wall time per τ of kept
// training is (τ + C)·(1 + ((τ + C)/2 + R)/M), with M the job's mean time between
// interruptions. The interval that maximises it is τ* = √(C² + 2·C·(M + R)), Young's √(2·C·M)
// when C and R are small beside M.

#include "models/base/units.hpp"

namespace hetsim::cost {

struct GoodputInput {
  double interruptions_per_hour = 0;  ///< of the whole job: Σ devices_i / mtbf_hours_i
  Bytes checkpoint;                   ///< what one checkpoint writes (all devices together)
  BytesPerSec write_bandwidth;        ///< aggregate, > 0
  Duration restart;                   ///< detect, reschedule, reload, warm up
  Duration interval;                  ///< 0: the Young/Daly optimum
};

struct Goodput {
  Duration job_mtbf;          ///< M; infinite when nothing fails
  Duration checkpoint_write;  ///< C
  Duration interval;          ///< τ, chosen or given
  double fraction = 1;        ///< kept training time / wall time, in (0, 1]
};

/// Requires: write_bandwidth > 0, interruptions_per_hour ≥ 0, restart ≥ 0, interval ≥ 0.
[[nodiscard]] Goodput goodput(const GoodputInput& in);

}  // namespace hetsim::cost
