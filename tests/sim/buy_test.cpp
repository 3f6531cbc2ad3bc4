// Purchase planning (sim/plan/buy): the pruned search finds the exhaustive front, its bounds
// never exceed what the planner finds, and the limits hold on every point of the front.
#include "sim/plan/buy.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>

#include "sim/api/api.hpp"
#include "sim/io/plan_json.hpp"
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

Scenario load_buy(const std::string& text) {
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
      const Scenario s = load_buy(purchase(cost, limits, kTwo));
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

// The time bound counts a MoE model's matmuls as they are: multi-head latent attention's
// projections and dense layers' MLPs (issue 15). On one cluster the bounds scale as the matmul
// FLOPs per token, 6·(weights of the matmuls a token runs + the output head):
//   tiny: 4·(2·256·256 + 2·256·128 + 3·256·1024) + 1024·256 = 4,194,304
//   DeepSeek-V3 cut to 4 layers, the first dense: MLA 7168·1536 + 1536·128·192 + 7168·576
//     + 512·128·256 + 128·128·7168 = 187,105,280 per layer; MLP 3·7168·18432 = 396,361,728 in
//     the dense layer and in each MoE layer (8 routed + 1 shared of 2048); 4 layers + 129280·7168
//     = 3,260,547,072.
TEST(Buy, TheTimeBoundCountsLatentAttentionAndDenseLayers) {
  auto bound = [](const std::string& model) {
    auto s = api::load_text("[model]\n" + model + "[training]\nglobal_batch = 32\nseq_len = 4096\ntokens = 1e12\n"
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n", "r.toml", {.plan = false});
    EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
    return s.ok() ? buy::time_lower_bound_s(*s, true) : 0.0;
  };
  const double tiny = bound("preset = \"tiny\"\n");
  const double ds = bound("preset = \"deepseek-v3\"\nlayers = 4\nfirst_dense_layers = 1\n");
  ASSERT_GT(tiny, 0);
  EXPECT_NEAR(ds / tiny, 3'260'547'072.0 / 4'194'304.0, 1e-9 * ds / tiny);
}

TEST(Buy, BudgetPowerAndVendorIslandsHoldOnTheFront) {
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "budget_usd = 300000\npower_kw = 15\n", kTwo));
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
  const Scenario late = load_buy(purchase("[cost]\nmode = \"own\"\n", "deadline_days = 0.001\n", kTwo));
  auto r = api::buy(late, {});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->front.empty());
  for (const auto& p : r->front) EXPECT_FALSE(p.meets_deadline);
  EXPECT_NE(report::buy_text(late, *r, 0).find("no point of the front meets the deadline"), std::string::npos);

  Scenario fast = load_buy(purchase("[cost]\nmode = \"own\"\n", "objective = \"time\"\n", kTwo));
  auto f = api::buy(fast, {});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->recommended, 0u);
  Scenario cheap = load_buy(purchase("[cost]\nmode = \"own\"\n", "objective = \"cost\"\n", kTwo));
  auto c = api::buy(cheap, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->recommended, c->front.size() - 1);
}

// Lead times: training starts when the last bought node is in service, so the front's time is
// lead + effective time to train; the deadline applies to it; costs are those of the training.
TEST(Buy, LeadTimesDelayTrainingAndDecideTheDeadline) {
  const Scenario none = load_buy(purchase("[cost]\nmode = \"own\"\n", "", kTwo));
  auto a = api::buy(none, {});
  ASSERT_TRUE(a.ok());
  // Without lead times the fastest point buys MI300X nodes (the tiny model, 1e10 tokens).
  ASSERT_FALSE(a->front.empty());
  const buy::Point fastest = a->front.front();
  ASSERT_GT(fastest.nodes[1], 0);
  ASSERT_EQ(fastest.nodes[0], 0);
  // The MI300X nodes take 0.002 days (173 s) to arrive; the deadline falls between the
  // fastest point's training time and its training time + that lead time.
  const double deadline_days = (fastest.effective_time_s + 0.001 * 86400) / 86400;
  const std::string leads =
      "[[purchase.candidate]]\ndevice = \"h100-sxm5\"\nmax_nodes = 3\nlead_time_days = 1000\n"
      "[[purchase.candidate]]\ndevice = \"mi300x\"\nmax_nodes = 2\nlead_time_days = 0.002\n";
  const Scenario late = load_buy(purchase("[cost]\nmode = \"own\"\n", fmt::format("deadline_days = {:.9f}\n", deadline_days), leads));
  ASSERT_TRUE(late.purchase);
  EXPECT_EQ(late.purchase->candidates[0].lead_time_days, 1000);
  auto b = api::buy(late, {});
  buy::Options all;
  all.exhaustive = true;
  auto c = api::buy(late, all);
  ASSERT_TRUE(b.ok() && c.ok());
  ASSERT_FALSE(b->front.empty());
  ASSERT_EQ(b->front.size(), c->front.size());  // pruning stays sound with lead times
  for (std::size_t i = 0; i < b->front.size(); ++i) EXPECT_EQ(b->front[i].nodes, c->front[i].nodes);
  bool mi300x_on_front = false;
  for (const auto& p : b->front) {
    const double lead_days = p.nodes[0] > 0 ? 1000 : p.nodes[1] > 0 ? 0.002 : 0;
    EXPECT_DOUBLE_EQ(p.lead_time_s, lead_days * 86400) << p.nodes[0] << "," << p.nodes[1];
    EXPECT_DOUBLE_EQ(p.trained_in_s, p.lead_time_s + p.effective_time_s);
    EXPECT_EQ(p.meets_deadline, p.trained_in_s <= deadline_days * 86400.0);
    EXPECT_EQ(p.nodes[0], 0) << "a 1,000-day wait cannot be on the front";
    if (p.nodes[1] > 0) {
      mi300x_on_front = true;
      EXPECT_FALSE(p.meets_deadline) << "it would without its lead time";
      EXPECT_LT(p.effective_time_s, deadline_days * 86400.0);
    }
    // The same composition costs what it costs without lead times and trains as long.
    for (const auto& q : a->front)
      if (q.nodes == p.nodes) {
        EXPECT_NEAR(q.effective_time_s, p.effective_time_s, 1e-9 * q.effective_time_s);
        EXPECT_NEAR(q.total_usd, p.total_usd, 1e-6 * q.total_usd);
      }
  }
  EXPECT_TRUE(mi300x_on_front);
  for (std::size_t i = 1; i < b->front.size(); ++i) EXPECT_LT(b->front[i - 1].trained_in_s, b->front[i].trained_in_s);
  // The same deadline without lead times: the MI300X point meets it.
  const Scenario on_time = load_buy(purchase("[cost]\nmode = \"own\"\n", fmt::format("deadline_days = {:.9f}\n", deadline_days), kTwo));
  auto d = api::buy(on_time, {});
  ASSERT_TRUE(d.ok());
  ASSERT_FALSE(d->front.empty());
  EXPECT_EQ(d->front.front().nodes, fastest.nodes);
  EXPECT_TRUE(d->front.front().meets_deadline);
  const std::string text = report::buy_text(late, *b, 0);
  EXPECT_NE(text.find("lead time + effective time to train"), std::string::npos) << text;
  EXPECT_NE(text.find("1000 days' lead time"), std::string::npos) << text;
}

// Each candidate's price ±20 % and electricity ±50 %: a row each, saying whether the
// recommendation moves and to what.
TEST(Buy, SensitivityHasARowPerPriceAndSaysWhetherTheRecommendationMoves) {
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "objective = \"cost\"\n", kTwo));
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
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "", kTwo));
  auto a = api::buy(s, {});
  auto b = api::buy(s, {});
  ASSERT_TRUE(a.ok() && b.ok());
  // Everything but the timings (seconds, first_point_s), byte for byte.
  auto untimed = [&](const buy::Result& r) {
    auto j = nlohmann::ordered_json::parse(report::buy_json(s, r, 0));
    EXPECT_TRUE(j.contains("first_point_s"));
    j.erase("first_point_s");
    return j.dump();
  };
  EXPECT_EQ(untimed(*a), untimed(*b));
}

// The front as it grows: each report is a Pareto front, fastest first; the last one is the
// answer's front; the first point's time is measured.
TEST(Buy, TheFrontIsReportedAsItGrows) {
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "", kTwo));
  buy::Options o;
  std::vector<std::vector<std::vector<int>>> seen;
  o.on_front = [&](const std::vector<buy::Point>& front) {
    ASSERT_FALSE(front.empty());
    std::vector<std::vector<int>> nodes;
    for (std::size_t i = 0; i < front.size(); ++i) {
      nodes.push_back(front[i].nodes);
      if (i > 0) {
        EXPECT_LE(front[i - 1].trained_in_s, front[i].trained_in_s);
        EXPECT_GT(front[i - 1].total_usd, front[i].total_usd);  // slower points must be cheaper
      }
    }
    seen.push_back(nodes);
  };
  auto r = api::buy(s, o);
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->front.empty());
  ASSERT_FALSE(seen.empty());
  std::vector<std::vector<int>> last;
  for (const auto& p : r->front) last.push_back(p.nodes);
  EXPECT_EQ(seen.back(), last);
  EXPECT_GE(r->first_point_s, 0);
  EXPECT_NE(report::buy_text(s, *r, 1).find("first front point after"), std::string::npos);
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

  const Scenario plain = load_buy(test::minimal());
  auto none = api::buy(plain, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors()[0].key, "purchase");

  const Scenario huge = load_buy(purchase("", "", "[[purchase.candidate]]\ndevice = \"h100-sxm5\"\nmax_nodes = 4096\n"
                                              "[[purchase.candidate]]\ndevice = \"mi300x\"\nmax_nodes = 4096\n"));
  auto many = api::buy(huge, {});
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.errors()[0].hint.find("node_step"), std::string::npos);
}

// --out DIR: every front point as a scenario of what it owns and buys (prices kept, the
// purchase gone) and its plan; read back, the plan estimates to the step the front reports.
TEST(Buy, EachFrontPointIsWrittenAsAScenarioAndAPlanThatRunAsWritten) {
  // (With framework keys of its own, which the written points keep.)
  const std::string text = purchase("[cost]\nmode = \"own\"\n[parallel]\nsequence_parallel = false\npipeline_runs = 2\ncp_comm = \"a2a\"\n", "",
                                    "[[purchase.candidate]]\nname = \"new\"\ndevice = \"h100-sxm5\"\nmax_nodes = 2\n"
                                    "purchase_usd = 20000\n"
                                    "[[purchase.candidate]]\ndevice = \"mi300x\"\nmax_nodes = 1\n");
  const Scenario s = load_buy(text);
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  ASSERT_GE(r->front.size(), 2u);
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "buy-out";
  auto files = api::buy_files(s, text, *r, dir);
  ASSERT_TRUE(files.ok()) << test::all_errors(files.errors());
  ASSERT_EQ(files->size(), 2 * r->front.size() + 1);
  for (std::size_t i = 0; i < r->front.size(); ++i) {
    const buy::Point& p = r->front[i];
    const auto& scen = (*files)[2 * i];
    const auto& plan = (*files)[2 * i + 1];
    EXPECT_EQ(scen.path, dir / ("point-" + std::to_string(i + 1) + ".toml"));
    auto back = api::load_text(scen.content, scen.path.string(), {.plan = false});
    ASSERT_TRUE(back.ok()) << scen.content << test::all_errors(back.errors());
    EXPECT_FALSE(back->purchase.has_value());
    ASSERT_EQ(back->cluster.pools.size(), p.scenario.cluster.pools.size());
    for (std::size_t k = 0; k < back->cluster.pools.size(); ++k) {
      EXPECT_EQ(back->cluster.pools[k].name, p.scenario.cluster.pools[k].name);
      EXPECT_EQ(back->cluster.pools[k].nodes, p.scenario.cluster.pools[k].nodes);
      EXPECT_EQ(back->cluster.pools[k].device.purchase_usd, p.scenario.cluster.pools[k].device.purchase_usd);
      if (back->cluster.pools[k].name == "new") {
        EXPECT_EQ(back->cluster.pools[k].device.purchase_usd, 20000.0);
      }
    }
    auto pl = io::parse_plan_json(plan.content, plan.path.string(), *back);
    ASSERT_TRUE(pl.ok()) << test::all_errors(pl.errors());
    EXPECT_NEAR(api::estimate(*back, *pl).step_time.v, p.best.estimate.step_time.v, 1e-9 * p.best.estimate.step_time.v);
    // Its [parallel] is that plan: `hetsim estimate point-N.toml` runs the point, `hetsim plan`
    // keeps the framework.
    auto own = api::load_text(scen.content, scen.path.string());
    ASSERT_TRUE(own.ok()) << scen.content << test::all_errors(own.errors());
    ASSERT_TRUE(own->plan.has_value());
    EXPECT_EQ(io::plan_to_json(*own, *own->plan), io::plan_to_json(*own, *io::parse_plan_json(plan.content, "p.json", *own)));
    EXPECT_EQ(own->plan->pipeline_runs, 2);
    EXPECT_FALSE(own->framework.sequence_parallel);
    EXPECT_EQ(own->plan->cp_comm, plan::Plan::CpComm::AllToAll);
    EXPECT_NEAR(api::estimate(*own, *own->plan).step_time.v, p.best.estimate.step_time.v, 1e-9 * p.best.estimate.step_time.v);
  }
  const std::string& csv = files->back().content;
  EXPECT_EQ(files->back().path, dir / "front.csv");
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')), r->front.size() + 1);
  EXPECT_EQ(csv.rfind("point,recommended,buy_nodes_new,buy_nodes_mi300x,", 0), 0u);
  EXPECT_EQ(report::buy_csv(s, *r), csv);
}

// Nothing within the budget: the front is empty and the cheapest composition over the budget
// that has a plan says what the answer would take.
TEST(Buy, NothingWithinTheLimitsNamesTheSmallestCompositionThatWouldFit) {
  const std::string text =
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 64\nseq_len = 512\ntokens = 1e10\n"
      "[cost]\nmode = \"own\"\n[purchase]\nbudget_usd = 1000\n" + kTwo;
  const Scenario s = load_buy(text);
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->front.empty());
  EXPECT_EQ(r->over_budget, r->compositions);
  ASSERT_TRUE(r->smallest_fit.has_value());
  // One MI300X node (8 × $18,900) is the cheapest purchase; the tiny model fits on it.
  EXPECT_EQ(r->smallest_fit->nodes, (std::vector<int>{0, 1}));
  EXPECT_GT(r->smallest_fit->capex_usd, 1000.0);
  const std::string t = report::buy_text(s, *r, 0);
  EXPECT_NE(t.find("smallest that would fit: buy 1 × mi300x"), std::string::npos) << t;
  EXPECT_NE(t.find("it needs a budget of at least"), std::string::npos) << t;
  EXPECT_NE(report::buy_json(s, *r, 0).find("\"smallest_fit\": {"), std::string::npos);

  // Within the limits a front exists and nothing is said about the smallest fit.
  auto ok = api::buy(load_buy(purchase("[cost]\nmode = \"own\"\n", "", kTwo)), {});
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE(ok->smallest_fit.has_value());
}

// --top K shortens the table (the recommended point always stays); JSON keeps every point.
TEST(Buy, TopShortensTheTableOnly) {
  const Scenario s = load_buy(
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 512\nseq_len = 512\ntokens = 1e10\n"
      "[cost]\nmode = \"own\"\n[purchase]\nobjective = \"cost\"\n"
      "[[purchase.candidate]]\ndevice = \"h100-sxm5\"\nmax_nodes = 4\n"
      "[[purchase.candidate]]\ndevice = \"mi300x\"\nmax_nodes = 2\n");
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  ASSERT_GE(r->front.size(), 3u);
  ASSERT_EQ(r->recommended, r->front.size() - 1);  // the cheapest, last
  const std::string t = report::buy_text(s, *r, 0, 1);
  EXPECT_NE(t.find(" 1 "), std::string::npos);
  EXPECT_NE(t.find(" " + std::to_string(r->recommended + 1) + "* "), std::string::npos) << t;
  EXPECT_NE(t.find(std::to_string(r->front.size() - 2) + " more point"), std::string::npos) << t;
  EXPECT_EQ(report::buy_text(s, *r, 0, 0).find("more point"), std::string::npos);
}

// Re-pricing (buy_pricing.hpp, api::reprice): the search's figures come out of the same
// pricing, so re-pricing under the searched scenario must give them back exactly.
TEST(Reprice, UnchangedInputsGiveIdenticalFigures) {
  for (const std::string& cost : {std::string("[cost]\nmode = \"own\"\n"), std::string("[cost]\nmode = \"rent\"\n")}) {
    for (const std::string& limits : {std::string(""), std::string("budget_usd = 400000\n"), std::string("deadline_days = 2\n")}) {
      SCOPED_TRACE(cost + limits);
      const Scenario s = load_buy(purchase(cost, limits, kTwo));
      auto r = api::buy(s, {});
      ASSERT_TRUE(r.ok());
      ASSERT_FALSE(r->front.empty());
      auto x = api::reprice(s, s, *r);
      ASSERT_TRUE(x.ok()) << test::all_errors(x.errors());
      const buy::Result& n = x->result;
      ASSERT_EQ(n.front.size(), r->front.size());
      for (std::size_t i = 0; i < n.front.size(); ++i) {
        const buy::Point& a = r->front[i];
        const buy::Point& b = n.front[i];
        EXPECT_EQ(a.nodes, b.nodes);
        EXPECT_EQ(a.capex_usd, b.capex_usd);
        EXPECT_EQ(a.run_usd, b.run_usd);
        EXPECT_EQ(a.total_usd, b.total_usd);
        EXPECT_EQ(a.effective_time_s, b.effective_time_s);
        EXPECT_EQ(a.trained_in_s, b.trained_in_s);
        EXPECT_EQ(a.power_kw, b.power_kw);
        EXPECT_EQ(a.usd_per_million_tokens, b.usd_per_million_tokens);
        EXPECT_EQ(a.meets_deadline, b.meets_deadline);
        EXPECT_EQ(io::plan_to_json(a.scenario, a.best.plan), io::plan_to_json(b.scenario, b.best.plan));
      }
      EXPECT_EQ(n.recommended, r->recommended);
      EXPECT_EQ(n.runner_up, r->runner_up);
      ASSERT_EQ(n.sensitivity.size(), r->sensitivity.size());
      for (std::size_t i = 0; i < n.sensitivity.size(); ++i) {
        EXPECT_EQ(n.sensitivity[i].nodes, r->sensitivity[i].nodes);
        EXPECT_EQ(n.sensitivity[i].total_usd, r->sensitivity[i].total_usd);
      }
      EXPECT_EQ(x->may_join, 0u);  // nothing the search left out can join at its own prices
      EXPECT_EQ(report::buy_csv(s, n), report::buy_csv(s, *r));
    }
  }
}

// Doubling candidate 0's price d (h100-sxm5): a point buying n of its nodes of 8 devices pays
// n·8·d more capex when owning, n·8·(d $/h)·hours more rent when renting; the others pay the
// same, and the points of the front that buy none of it stay on the front.
TEST(Reprice, DoublingADevicePriceMovesThePointsThatBuyItAsTheClosedFormSays) {
  for (bool own : {true, false}) {
    SCOPED_TRACE(own ? "own" : "rent");
    const Scenario s = load_buy(purchase(own ? "[cost]\nmode = \"own\"\n" : "[cost]\nmode = \"rent\"\n", "", kTwo));
    auto r = api::buy(s, {});
    ASSERT_TRUE(r.ok());
    Scenario dear = s;
    auto& device = dear.purchase->candidates[0].pool.device;
    device.purchase_usd *= 2;
    device.price_usd_per_hour *= 2;
    const hw::DeviceSpec& d0 = s.purchase->candidates[0].pool.device;
    const int per_node = s.purchase->candidates[0].pool.devices_per_node;
    int moved = 0;
    for (const buy::Priced& q : r->planned_points) {
      const buy::Point before = buy::price(s, q);
      const buy::Point after = buy::price(dear, q);
      const double n = q.nodes[0] * per_node;
      const double delta = own ? n * d0.purchase_usd : n * d0.price_usd_per_hour * q.time_s / 3600.0;
      EXPECT_NEAR(after.total_usd - before.total_usd, delta, 1e-9 * before.total_usd);
      EXPECT_NEAR(after.capex_usd - before.capex_usd, own ? delta : 0.0, 1e-9 * before.total_usd);
      EXPECT_EQ(after.trained_in_s, before.trained_in_s);
      if (q.nodes[0] > 0) ++moved;
    }
    EXPECT_GT(moved, 0);
    auto x = api::reprice(s, dear, *r);
    ASSERT_TRUE(x.ok());
    for (const buy::Point& p : r->front) {
      if (p.nodes[0] > 0) continue;
      const auto& f = x->result.front;
      EXPECT_TRUE(std::any_of(f.begin(), f.end(), [&](const buy::Point& q) {
        return q.nodes == p.nodes && q.total_usd == p.total_usd;
      })) << "a point buying no " << d0.name << " left the front";
    }
    // Every point of the new front has its plan and its scenario at the new prices.
    for (const buy::Point& p : x->result.front) {
      EXPECT_FALSE(p.best.plan.groups.empty());
      if (p.nodes[0] > 0) {
        EXPECT_EQ(p.scenario.cluster.pools[1].device.purchase_usd, device.purchase_usd);  // [0] is owned
      }
    }
  }
}

// Electricity: only the energy moves, in proportion.
TEST(Reprice, ElectricityScalesTheEnergyOnly) {
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "", kTwo));
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  Scenario dear = s;
  dear.cost.electricity_usd_per_kwh *= 3;
  for (const buy::Priced& q : r->planned_points) {
    const buy::Point a = buy::price(s, q);
    const buy::Point b = buy::price(dear, q);
    EXPECT_GT(a.energy_usd, 0);
    EXPECT_NEAR(b.energy_usd, 3 * a.energy_usd, 1e-9 * a.energy_usd);
    EXPECT_NEAR(b.total_usd - a.total_usd, 2 * a.energy_usd, 1e-9 * a.total_usd);
    EXPECT_EQ(b.capex_usd, a.capex_usd);
    EXPECT_EQ(b.amortisation_usd, a.amortisation_usd);
  }
}

// A budget raised after the search: the compositions it refused are not planned, and
// may_join says how many a new search could add; the front stays within the new limits.
TEST(Reprice, ALargerBudgetCountsWhatANewSearchCouldAdd) {
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "budget_usd = 300000\n", kTwo));
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  ASSERT_GT(r->over_budget, 0u);
  Scenario rich = s;
  rich.purchase->budget_usd = 1e9;
  auto x = api::reprice(s, rich, *r);
  ASSERT_TRUE(x.ok());
  EXPECT_GT(x->may_join, 0u);
  Scenario poor = s;
  poor.purchase->budget_usd = 1;  // only "buy nothing" is within it
  auto y = api::reprice(s, poor, *r);
  ASSERT_TRUE(y.ok());
  for (const buy::Point& p : y->result.front) EXPECT_LE(p.capex_usd, 1.0);
  EXPECT_GT(y->refused, 0u);
  EXPECT_EQ(y->may_join, 0u);
}

TEST(Reprice, RefusesWhatChangesThePlannedTimes) {
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "", kTwo));
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  Scenario other = s;
  other.training.tokens *= 2;
  auto x = api::reprice(s, other, *r);
  ASSERT_FALSE(x.ok());
  EXPECT_EQ(x.errors().front().key, "training.tokens");
  other = s;
  other.purchase->candidates[1].max_nodes = 5;
  x = api::reprice(s, other, *r);
  ASSERT_FALSE(x.ok());
  EXPECT_EQ(x.errors().front().key, "purchase.candidate[1]");
}

// The sensitivity says by how much: where the recommendation stays, its cost moves as the
// closed form says (electricity ×1.5: half its energy more; a price it does not buy: nothing).
TEST(Reprice, SensitivitySaysByHowMuch) {
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "objective = \"cost\"\n", kTwo));
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  const buy::Point& now = r->front[r->recommended];
  ASSERT_EQ(now.nodes, (std::vector<int>{0, 0}));
  for (const buy::Sensitivity& x : r->sensitivity) {
    ASSERT_FALSE(x.changes);
    const double expect = x.what == "electricity" ? (x.factor - 1) * now.energy_usd : 0.0;
    EXPECT_NEAR(x.total_change_usd, expect, 1e-9 * now.total_usd) << x.what << " " << x.factor;
    EXPECT_NEAR(x.total_usd, now.total_usd + expect, 1e-9 * now.total_usd);
    EXPECT_EQ(x.time_change_s, 0);
  }
}

// Any front point's own sensitivity (buy::point_sensitivity, what the GUI's tornado shows for a
// picked point): owning, candidate k's price × f moves the point's capex by (f − 1) × its
// nodes of k × devices per node × the device price; electricity × f moves its energy by (f − 1)
// × energy; the time never moves. For the recommended point the rows equal sensitivity()'s
// wherever the recommendation stays.
TEST(Reprice, EveryFrontPointsOwnSensitivityFollowsTheClosedForm) {
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "", kTwo));
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  ASSERT_GT(r->front.size(), 1u);
  int buying = 0;
  for (std::size_t i = 0; i < r->front.size(); ++i) {
    const buy::Point& p = r->front[i];
    const auto rows = buy::point_sensitivity(s, *r, i);
    ASSERT_EQ(rows.size(), r->sensitivity.size()) << "point " << i;
    for (std::size_t j = 0; j < rows.size(); ++j) {
      const buy::PointSensitivity& x = rows[j];
      EXPECT_EQ(x.what, r->sensitivity[j].what);
      EXPECT_EQ(x.factor, r->sensitivity[j].factor);
      double expect = 0;
      if (x.what == "electricity") {
        expect = (x.factor - 1) * p.energy_usd;
      } else {
        for (std::size_t k = 0; k < s.purchase->candidates.size(); ++k) {
          const auto& c = s.purchase->candidates[k];
          if (c.pool.name + " price" == x.what)
            expect = (x.factor - 1) * p.nodes[k] * c.pool.devices_per_node * c.pool.device.purchase_usd;
        }
      }
      EXPECT_NEAR(x.total_change_usd, expect, 1e-9 * p.total_usd) << "point " << i << ": " << x.what << " " << x.factor;
      EXPECT_NEAR(x.total_usd, p.total_usd + expect, 1e-9 * p.total_usd);
      EXPECT_EQ(x.time_change_s, 0);
      if (i == r->recommended && !r->sensitivity[j].changes) {
        EXPECT_NEAR(x.total_usd, r->sensitivity[j].total_usd, 1e-9 * p.total_usd) << x.what;
      }
    }
    if (std::any_of(p.nodes.begin(), p.nodes.end(), [](int n) { return n > 0; })) ++buying;
  }
  EXPECT_GT(buying, 0);  // some point buys, so a price moves something
  EXPECT_TRUE(buy::point_sensitivity(s, *r, r->front.size()).empty());
}

// "Why this one": the parts add up to each point's time and cost, and the differences to theirs.
TEST(Reprice, WhyThisOnesPartsAddUp) {
  const Scenario s = load_buy(purchase("[cost]\nmode = \"own\"\n", "deadline_days = 1000\n", kTwo));
  auto r = api::buy(s, {});
  ASSERT_TRUE(r.ok());
  ASSERT_GE(r->front.size(), 2u);
  EXPECT_NE(r->runner_up, r->recommended);
  const buy::Point& a = r->front[r->recommended];
  const buy::Point& b = r->front[r->runner_up];
  const buy::Versus v = buy::versus(a, b);
  auto sum = [](const std::vector<buy::Part>& parts) {
    double t = 0;
    for (const auto& p : parts) t += p.value;
    return t;
  };
  EXPECT_NEAR(sum(v.chosen_time), a.trained_in_s, 1e-9 * a.trained_in_s);
  EXPECT_NEAR(sum(v.other_time), b.trained_in_s, 1e-9 * b.trained_in_s);
  EXPECT_NEAR(sum(v.time_s), a.trained_in_s - b.trained_in_s, 1e-9 * b.trained_in_s);
  EXPECT_NEAR(sum(v.chosen_cost), a.total_usd, 1e-9 * a.total_usd);
  EXPECT_NEAR(sum(v.cost_usd), a.total_usd - b.total_usd, 1e-9 * b.total_usd);
  ASSERT_EQ(v.time_s.size(), 7u);
  EXPECT_EQ(v.time_s[0].name, "compute");
  EXPECT_GT(v.chosen_time[0].value, 0);
  // Failures: what goodput adds, (1/goodput - 1) of the time without them.
  const double ideal = a.effective_time_s * a.best.estimate.goodput.fraction;
  EXPECT_NEAR(v.chosen_time[5].value, ideal * (1 / a.best.estimate.goodput.fraction - 1), 1e-6 * ideal);
  EXPECT_EQ(v.chosen_time[5].name, "failures and restarts");
}

}  // namespace
}  // namespace hetsim
