// Mutated scenarios and plans never crash the readers: every outcome is a value or diagnostics.
// A deterministic stand-in for a fuzzer (seeded mutations of every bundled file), run in CI
// under ASan + UBSan by the asan preset.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "sim/analytic/estimate.hpp"
#include "sim/io/plan_json.hpp"
#include "tests/support/read_file.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

using test::slurp;

// HETSIM_FUZZ_ITERATIONS raises the count for a longer local run.
int iterations(int fallback) {
  const char* env = std::getenv("HETSIM_FUZZ_ITERATIONS");
  return env ? std::max(1, std::atoi(env)) : fallback;
}

std::string mutate(std::string s, std::mt19937_64& rng) {
  static const std::string alphabet = "[]{}=\",.#\n 0123456789-+eEabcxyz_\\'\t";
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 5) {
      case 0: s.erase(at, 1 + rng() % 8); break;
      case 1: s.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      case 2: s[at] = alphabet[rng() % alphabet.size()]; break;
      case 3: s.resize(at); break;
      default: {  // duplicate a slice elsewhere
        const std::size_t from = rng() % s.size();
        s.insert(at, s.substr(from, 1 + rng() % 40));
      }
    }
  }
  return s;
}

TEST(Robustness, MutatedScenariosGiveValuesOrDiagnostics) {
  std::mt19937_64 rng(20261202);
  int accepted = 0, rejected = 0;
  for (const char* dir : {"scenarios", "scenarios/validation"}) {
    for (const auto& e : std::filesystem::directory_iterator(std::string(HETSIM_SOURCE_DIR) + "/" + dir)) {
      if (e.path().extension() != ".toml") continue;
      const std::string text = slurp(e.path());
      for (int i = 0, n = iterations(150); i < n; ++i) {
        const std::string m = mutate(text, rng);
        auto s = test::parse(m, "fuzz.toml");
        if (!s.ok()) {
          ++rejected;
          for (const auto& d : s.errors()) ASSERT_FALSE(d.message.empty());
          continue;
        }
        ++accepted;
        if (s->plan) {
          const auto est = analytic::estimate(*s, *s->plan);
          EXPECT_GE(est.step_time.v, 0.0);
        }
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(accepted, 0);
}

TEST(Robustness, MutatedPlansGiveValuesOrDiagnostics) {
  auto s = io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/mixed-h100-a100.toml", test::catalog());
  ASSERT_TRUE(s.ok());
  const std::string text = io::plan_to_json(*s, *s->plan);
  std::mt19937_64 rng(7);
  int rejected = 0;
  for (int i = 0, n = iterations(2000); i < n; ++i) {
    auto p = io::parse_plan_json(mutate(text, rng), "fuzz.json", *s);
    if (!p.ok()) ++rejected;
    else (void)analytic::estimate(*s, *p);
  }
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace hetsim
