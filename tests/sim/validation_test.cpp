// The published runs in scenarios/validation/: each estimate is compared with its [reference].
// docs/validation.md records the figures; this test keeps them from drifting unnoticed.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "sim/analytic/estimate.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

TEST(Validation, EveryPublishedRunIsEstimatedWithinTheRecordedBand) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(HETSIM_SOURCE_DIR) + "/scenarios/validation")) {
    if (e.path().extension() != ".toml") continue;
    SCOPED_TRACE(e.path().filename().string());
    auto s = io::read_scenario(e.path(), test::catalog());
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    ASSERT_TRUE(s->reference.has_value());
    const auto est = analytic::estimate(*s, *s->plan);
    EXPECT_TRUE(est.fits);
    if (s->reference->peak_memory.v > 0) {
      // Peak memory where the source measured it (docs/validation.md): the target,
      // within 10 %, is met (worst today: bloom-176b, −9.7 %; ±15 % before 2026-12-05).
      const double merr = analytic::peak_memory_as(est, s->reference->peak_memory_kind).v /
                          s->reference->peak_memory.v - 1.0;
      EXPECT_LT(std::fabs(merr), 0.10) << "peak memory off by " << 100 * merr << " %";
      ++n;
    }
    if (s->reference->step_time_s <= 0) continue;
    const double err = est.step_time.v / s->reference->step_time_s - 1.0;
    // The design target is 10 %; docs/validation.md shows where the model stands today (worst:
    // megatron-gpt-32b, +35.2 % since its DP sync hides behind the blocking TP collectives too,
    // 2026-12-07 — its assumed micro-batch 1 exposes a DP sync the measurement rules out; next
    // megatron-gpt-1.7b −16.9 %, torchtitan's Float8 H200 run −15.8 % and NeMo's 405B −15.5 %).
    // This band catches regressions and gross mistakes (a unit slip gives ×10 or more): ±37 %
    // since 2026-12-07 (±40 % from 2026-12-06 late, ±42 % before, ±45 % when Gaudi 2's 13B run
    // was −36 %).
    EXPECT_LT(std::fabs(err), 0.37) << "predicted " << est.step_time.v << " s vs measured "
                                    << s->reference->step_time_s << " s";
    ++n;
  }
  EXPECT_GE(n, 10);
}

// The runs kept out of the band (memory-gap/, moe-candidates/, mi300x-candidates/, ci-candidates/,
// fa2-candidates/, torchtitan-pp-candidates/, heterogeneous/: docs/validation.md says why each is apart) are scenarios too: each reads, with
// its [reference], and is estimated.
TEST(Validation, EveryRunKeptApartStillReadsAndEstimates) {
  int n = 0;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(std::string(HETSIM_SOURCE_DIR) + "/scenarios/validation")) {
    if (e.path().extension() != ".toml" || e.path().parent_path().filename() == "validation") continue;
    SCOPED_TRACE(e.path().string());
    auto s = io::read_scenario(e.path(), test::catalog());
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    EXPECT_TRUE(s->reference.has_value());
    const auto est = analytic::estimate(*s, *s->plan);
    EXPECT_GT(est.step_time.v, 0);
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(Validation, MegatronTflopsUseTheSameFlopCount) {
  // Published TFLOP/s × GPUs × step time = the Megatron FLOP count, which hetsim's model FLOPs
  // reproduce exactly (see ModelFlops.MatchesMegatronFormulaForGpt); so the reference step time
  // and TFLOP/s in each file agree to the rounding of the step time.
  for (const auto& e : std::filesystem::directory_iterator(std::string(HETSIM_SOURCE_DIR) + "/scenarios/validation")) {
    // The Megatron-Core table (megatron-gpt-*) counts model FLOPs without recompute; the SC21
    // table counts the recompute pass too (checked by its own test below).
    if (e.path().filename().string().rfind("megatron-gpt", 0) != 0) continue;
    auto s = io::read_scenario(e.path(), test::catalog());
    ASSERT_TRUE(s.ok());
    const auto est = analytic::estimate(*s, *s->plan);
    const double implied = est.model_flops_per_step.v / (s->reference->step_time_s * est.devices) / 1e12;
    EXPECT_NEAR(implied / s->reference->tflops_per_device, 1.0, 2e-3) << e.path();
  }
}

}  // namespace
}  // namespace hetsim
