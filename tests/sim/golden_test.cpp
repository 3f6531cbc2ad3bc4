// Every bundled scenario is also a golden test: its `hetsim simulate --json` output is kept in
// tests/golden/<name>.simulate.json. A change to the model shows up there in review.
// To accept a change: HETSIM_UPDATE_GOLDEN=1 build/dev/bin/sim_tests --gtest_filter='Golden*'

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/analytic/estimate.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/report/simulation_report.hpp"
#include "sim/schedule/schedule.hpp"
#include "tests/support/read_file.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

using test::slurp;

std::string simulate_json(const std::string& text, const std::string& name) {
  auto s = test::parse(text, name);
  EXPECT_TRUE(s.ok());
  if (!s.ok()) return {};
  auto sim = report::run_simulation(*s, *s->plan);
  EXPECT_TRUE(sim.ok());
  return sim.ok() ? report::simulate_json(*s, *s->plan, *sim) : std::string{};
}

TEST(Golden, EveryScenarioMatchesItsGoldenOutput) {
  const std::filesystem::path src(HETSIM_SOURCE_DIR);
  // Scenario names are relative to the repository (so the golden files do not depend on where
  // it is checked out), and so are the catalogue files they load.
  std::filesystem::current_path(src);
  const bool update = std::getenv("HETSIM_UPDATE_GOLDEN") != nullptr;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(src / "scenarios")) {
    if (e.path().extension() != ".toml") continue;
    const std::string rel = "scenarios/" + e.path().filename().string();
    const std::string got = simulate_json(slurp(e.path()), rel);
    const auto golden = src / "tests/golden" / (e.path().stem().string() + ".simulate.json");
    if (update) {
      std::ofstream(golden, std::ios::binary) << got;
      continue;
    }
    ASSERT_TRUE(std::filesystem::exists(golden)) << golden << " missing; run with HETSIM_UPDATE_GOLDEN=1";
    EXPECT_EQ(got, slurp(golden)) << rel << " differs from " << golden
                                  << "; if intended, run with HETSIM_UPDATE_GOLDEN=1 and review the diff";
    // Determinism twin: the same scenario twice, the same bytes.
    EXPECT_EQ(got, simulate_json(slurp(e.path()), rel));
    ++n;
  }
  if (!update) {
    EXPECT_GE(n, 5);
  }
}

}  // namespace
}  // namespace hetsim
