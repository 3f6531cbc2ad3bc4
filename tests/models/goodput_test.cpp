#include "models/cost/goodput.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace hetsim::cost {
namespace {

// The example of shared/reference/hardware.md §7: a job interrupted every 3 h (M = 10,800 s)
// whose checkpoint takes 5 min (C = 300 s), restarting in 10 min (R = 600 s). Young's interval
// √(2·C·M) = 2545.6 s ≈ 42 min; the maximiser of the wall-time model √(C² + 2·C·(M + R)) =
// √(6,930,000) = 2632.5 s; kept / wall = 2632.5 / (2932.5 · (1 + (1466.25 + 600)/10800)) = 0.7535.
TEST(Goodput, YoungDalyByHand) {
  GoodputInput in;
  in.interruptions_per_hour = 1.0 / 3.0;
  in.checkpoint = Bytes{300e9};
  in.write_bandwidth = BytesPerSec{1e9};  // 300 s
  in.restart = Duration{600};
  const Goodput g = goodput(in);
  EXPECT_NEAR(g.job_mtbf.v, 10800, 1e-6);
  EXPECT_NEAR(g.checkpoint_write.v, 300, 1e-9);
  EXPECT_NEAR(g.interval.v, 2632.5, 0.05);
  EXPECT_NEAR(g.interval.v / std::sqrt(2.0 * 300 * 10800), 1.0, 0.04);  // Young, to first order
  EXPECT_NEAR(g.fraction, 0.7535, 5e-4);
}

TEST(Goodput, TheOptimumBeatsOtherIntervals) {
  GoodputInput in;
  in.interruptions_per_hour = 2.0;
  in.checkpoint = Bytes{1e12};
  in.write_bandwidth = BytesPerSec{50e9};  // 20 s
  in.restart = Duration{300};
  const Goodput best = goodput(in);
  EXPECT_NEAR(best.interval.v, 290.5, 0.05);  // √(20² + 2·20·(1800 + 300))
  for (double tau : {30.0, 120.0, 268.3, 300.0, 3000.0, 20000.0}) {
    in.interval = Duration{tau};
    EXPECT_LE(goodput(in).fraction, best.fraction + 1e-12) << "interval " << tau << " s";
  }
}

TEST(Goodput, MoreDevicesSlowerStorageOrLongerRestartsKeepLess) {
  GoodputInput in;
  in.interruptions_per_hour = 0.1;
  in.checkpoint = Bytes{5e12};
  in.write_bandwidth = BytesPerSec{100e9};
  in.restart = Duration{600};
  const double base = goodput(in).fraction;
  EXPECT_GT(base, 0.5);
  EXPECT_LT(base, 1.0);
  GoodputInput more = in;
  more.interruptions_per_hour *= 8;
  EXPECT_LT(goodput(more).fraction, base);
  GoodputInput slow = in;
  slow.write_bandwidth = BytesPerSec{10e9};
  EXPECT_LT(goodput(slow).fraction, base);
  GoodputInput restart = in;
  restart.restart = Duration{3600};
  EXPECT_LT(goodput(restart).fraction, base);
}

TEST(Goodput, WithoutInterruptionsOnlyChosenCheckpointsCost) {
  GoodputInput in;
  in.checkpoint = Bytes{1e12};
  in.write_bandwidth = BytesPerSec{1e10};  // 100 s
  in.restart = Duration{600};
  EXPECT_DOUBLE_EQ(goodput(in).fraction, 1.0);
  EXPECT_TRUE(std::isinf(goodput(in).job_mtbf.v));
  in.interval = Duration{900};
  EXPECT_NEAR(goodput(in).fraction, 0.9, 1e-12);
}

TEST(Goodput, CheckpointsSlowerThanFailuresStillGiveAFraction) {
  GoodputInput in;
  in.interruptions_per_hour = 60;  // one a minute
  in.checkpoint = Bytes{1e13};
  in.write_bandwidth = BytesPerSec{1e9};  // 10,000 s
  in.restart = Duration{600};
  const Goodput g = goodput(in);
  EXPECT_GT(g.fraction, 0);
  EXPECT_LT(g.fraction, 0.01);
  EXPECT_GE(g.interval.v, g.checkpoint_write.v);
}

}  // namespace
}  // namespace hetsim::cost
