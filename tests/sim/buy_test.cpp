// Purchase planning (sim/plan/buy): the pruned search finds the exhaustive front, its bounds
// never exceed what the planner finds, and the limits hold on every point of the front.
#include "sim/plan/buy.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "sim/api/api.hpp"
#include "sim/report/buy_report.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

std::string purchase(const std::string& cost, const std::string& limits, const std::string& candidates) {
  return "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 64\nseq_len = 512\ntokens = 1e10\n"
         "[[cluster.pool]]\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n" +
         cost + "[purchase]\n" + limits + candidates;
}

const std::string kTwo =
    "[[purchase.candidate]]\ndevice = \"h100-sxm5\"\nmax_nodes = 3\n"
    "[[purchase.candidate]]\ndevice = \"mi300x\"\nmax_nodes = 2\n";

Scenario load(const std::string& text) {
  auto s = api::load_text(text, "buy.toml", {.plan = false});
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : test::all_errors(s.errors()));
  return s.ok() ? *s : Scenario{};
}

void expect_same_front(const buy::Result& a, const buy::Result& b) {
  ASSERT_EQ(a.front.size(), b.front.size());
  for (std::size_t i = 0; i < a.front.size(); ++i) {
    EXPECT_EQ(a.front[i].nodes, b.front[i].nodes) << "point " << i;
    EXPECT_NEAR(a.front[i].effective_time_s, b.front[i].effective_time_s, 0.02 * b.front[i].effective_time_s);
    EXPECT_NEAR(a.front[i].total_usd, b.front[i].total_usd, 0.02 * b.front[i].total_usd + 1e-9);
  }
}

TEST(Buy, PrunedSearchFindsTheExhaustiveFront) {
  for (const std::string& cost : {std::string("[cost]\nmode = \"own\"\n"), std::string("[cost]\nmode = \"rent\"\n")}) {
    for (const std::string& limits : {std::string(""), std::string("budget_usd = 400000\n"), std::string("power_kw = 20\n")}) {
      SCOPED_TRACE(cost + limits);
      const Scenario s = load(purchase(cost, limits, kTwo));
      buy::Options pruned, all;
      all.exhaustive = true;
      auto a = api::buy(s, pruned);
      auto b = api::buy(s, all);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(a->compositions, 12u);  // 4 × 3 choices, "buy nothing" included: a pool is owned
      EXPECT_EQ(b->pruned, 0u);
      expect_same_front(*a, *b);
      ASSERT_FALSE(a->front.empty());
      EXPECT_LE(a->planned, b->planned);
    }
  }
}

// The screening bound is below the planner's answer on every cluster the planner can plan for:
// random compositions of catalogue devices and precisions.
TEST(Buy, TheTimeBoundIsNeverAboveThePlannersTime) {
  const char* devices[] = {"a100-sxm4-80gb", "h100-sxm5", "h200-sxm", "mi300x", "l40s", "gaudi2", "tpu-v5p", "b200"};
  std::mt19937 rng(7);
  int checked = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const char* a = devices[rng() % std::size(devices)];
    const char* b = devices[rng() % std::size(devices)];
    const std::string text =
        std::string("[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 32\nseq_len = 512\ntokens = 1e9\n") +
        (trial % 3 == 0 ? "precision = \"fp8\"\n" : "") + "[[cluster.pool]]\nname = \"p\"\ndevice = \"" + a +
        "\"\nnodes = " + std::to_string(1 + rng() % 2) + "\n" +
        (std::string(a) != b ? std::string("[[cluster.pool]]\nname = \"q\"\ndevice = \"") + b + "\"\nnodes = 1\n" : "");
    auto s = api::load_text(text, "r.toml", {.plan = false});
    ASSERT_TRUE(s.ok()) << text << test::all_errors(s.errors());
    for (bool same_vendor : {true, false}) {
      planner::Options o;
      o.top = 1;
      o.verify = 2;
      o.same_vendor = same_vendor;
      auto r = api::plan(*s, o);
      if (!r.ok() || r->result.top.empty()) continue;
      const auto& c = r->result.top.front();
      const double scale = c.verified() ? c.simulated_step_s / c.estimate.step_time.v : 1.0;
      const double t = c.estimate.time_to_train.v * scale / c.estimate.goodput.fraction;
      EXPECT_LE(buy::time_lower_bound_s(*s, same_vendor), t) << text;
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

TEST(Buy, BudgetPowerAndVendorIslandsHoldOnTheFront) {
  const Scenario s = load(purchase("[cost]\nmode = \"own\"\n", "budget_usd = 300000\npower_kw = 15\n", kTwo));
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->front.empty());
  EXPECT_GT(r->over_budget + r->over_power, 0u);
  for (const auto& p : r->front) {
    EXPECT_LE(p.capex_usd, 300000.0);
    EXPECT_LE(p.power_kw, 15.0);
    std::set<std::string> vendors;
    for (const auto& g : p.best.plan.groups)
      for (const auto& st : g.stages) vendors.insert(p.scenario.cluster.pools[st.pool].device.vendor);
    EXPECT_EQ(vendors.size(), 1u) << "a plan spans vendors";
  }
  // Front order: faster is dearer.
  for (std::size_t i = 1; i < r->front.size(); ++i) {
    EXPECT_LT(r->front[i - 1].effective_time_s, r->front[i].effective_time_s);
    EXPECT_GT(r->front[i - 1].total_usd, r->front[i].total_usd);
  }
}

TEST(Buy, ADeadlineNoPointMeetsStillShowsTheFrontAndTheRecommendationFollowsTheObjective) {
  const Scenario late = load(purchase("[cost]\nmode = \"own\"\n", "deadline_days = 0.001\n", kTwo));
  auto r = api::buy(late, {});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->front.empty());
  for (const auto& p : r->front) EXPECT_FALSE(p.meets_deadline);
  EXPECT_NE(report::buy_text(late, *r, 0).find("no point of the front meets the deadline"), std::string::npos);

  Scenario fast = load(purchase("[cost]\nmode = \"own\"\n", "objective = \"time\"\n", kTwo));
  auto f = api::buy(fast, {});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->recommended, 0u);
  Scenario cheap = load(purchase("[cost]\nmode = \"own\"\n", "objective = \"cost\"\n", kTwo));
  auto c = api::buy(cheap, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->recommended, c->front.size() - 1);
}

// Each candidate's price ±20 % and electricity ±50 %: a row each, saying whether the
// recommendation moves and to what.
TEST(Buy, SensitivityHasARowPerPriceAndSaysWhetherTheRecommendationMoves) {
  const Scenario s = load(purchase("[cost]\nmode = \"own\"\n", "objective = \"cost\"\n", kTwo));
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->front.empty());
  ASSERT_EQ(r->sensitivity.size(), 6u);
  EXPECT_EQ(r->sensitivity[0].what, "h100-sxm5 price");
  EXPECT_EQ(r->sensitivity[4].what, "electricity");
  const auto& now = r->front[r->recommended].nodes;
  for (const auto& x : r->sensitivity) EXPECT_EQ(x.changes, x.nodes != now) << x.what;
  // The cheapest point (buy nothing) stays the cheapest whatever the bought devices cost.
  EXPECT_EQ(now, (std::vector<int>{0, 0}));
  for (const auto& x : r->sensitivity) EXPECT_FALSE(x.changes) << x.what << " " << x.factor;
  EXPECT_NE(report::buy_text(s, *r, 0).find("sensitivity"), std::string::npos);
}

TEST(Buy, SameInputSameAnswer) {
  const Scenario s = load(purchase("[cost]\nmode = \"own\"\n", "", kTwo));
  auto a = api::buy(s, {});
  auto b = api::buy(s, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(report::buy_json(s, *a, 0), report::buy_json(s, *b, 0));
}

TEST(Buy, RefusesWhatItCannotAnswer) {
  auto no_tokens = api::load_text(
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 64\nseq_len = 512\n[purchase]\n" + kTwo, "t.toml",
      {.plan = false});
  ASSERT_TRUE(no_tokens.ok()) << test::all_errors(no_tokens.errors());
  EXPECT_TRUE(no_tokens->cluster.pools.empty());  // nothing owned: allowed with [purchase]
  auto r = api::buy(*no_tokens, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].key, "training.tokens");
  EXPECT_FALSE(api::plan(*no_tokens, {}).ok()) << "plan needs owned pools";

  const Scenario plain = load(test::minimal());
  auto none = api::buy(plain, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors()[0].key, "purchase");

  const Scenario huge = load(purchase("", "", "[[purchase.candidate]]\ndevice = \"h100-sxm5\"\nmax_nodes = 4096\n"
                                              "[[purchase.candidate]]\ndevice = \"mi300x\"\nmax_nodes = 4096\n"));
  auto many = api::buy(huge, {});
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.errors()[0].hint.find("node_step"), std::string::npos);
}

}  // namespace
}  // namespace hetsim
