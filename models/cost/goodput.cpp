#include "models/cost/goodput.hpp"

#include <cmath>
#include <limits>

#include "models/base/assert.hpp"

namespace hetsim::cost {

Goodput goodput(const GoodputInput& in) {
  HETSIM_ASSERT(in.write_bandwidth.v > 0 && in.interruptions_per_hour >= 0 && in.restart.v >= 0 &&
                    in.interval.v >= 0,
                "goodput inputs out of range");
  Goodput g;
  g.checkpoint_write = in.checkpoint / in.write_bandwidth;
  if (in.interruptions_per_hour <= 0) {  // nothing fails: no checkpoint is needed
    g.job_mtbf = Duration{std::numeric_limits<double>::infinity()};
    g.interval = in.interval;
    g.fraction = in.interval.v > 0 ? in.interval.v / (in.interval.v + g.checkpoint_write.v) : 1.0;
    return g;
  }
  const double m = 3600.0 / in.interruptions_per_hour;
  const double c = g.checkpoint_write.v;
  g.job_mtbf = Duration{m};
  // The interval that maximises the kept share below: √(C² + 2·C·(M + R)), which is Young's
  // √(2·C·M) when C and R are small beside M (and never shorter than one checkpoint).
  const double tau = in.interval.v > 0 ? in.interval.v : std::sqrt(c * c + 2.0 * c * (m + in.restart.v));
  g.interval = Duration{tau};
  const double segment = tau + c;
  g.fraction = tau / (segment * (1.0 + (segment / 2.0 + in.restart.v) / m));
  return g;
}

}  // namespace hetsim::cost
