// Plans as JSON: round trip, and bad plans rejected with the file and JSON path.

#include <gtest/gtest.h>

#include "sim/io/plan_json.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

Scenario mixed() {
  auto s = io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/mixed-h100-a100.toml", test::catalog());
  EXPECT_TRUE(s.ok());
  return *s;
}

TEST(PlanJson, RoundTripsExactly) {
  const Scenario s = mixed();
  const std::string text = io::plan_to_json(s, *s.plan);
  auto back = io::parse_plan_json(text, "plan.json", s);
  ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
  EXPECT_EQ(io::plan_to_json(s, *back), text);
  EXPECT_EQ(back->groups.size(), 2u);
  EXPECT_EQ(back->groups[1].micro_batches, 36);
}

TEST(PlanJson, EveryRecomputeModeRoundTrips) {
  Scenario s = mixed();
  for (auto rc : {cost::Recompute::None, cost::Recompute::Selective, cost::Recompute::Full, cost::Recompute::SelectiveOp}) {
    s.plan->recompute = rc;
    const std::string text = io::plan_to_json(s, *s.plan);
    EXPECT_NE(text.find("\"recompute\": \"" + std::string(cost::recompute_name(rc)) + "\""), std::string::npos) << text;
    auto back = io::parse_plan_json(text, "plan.json", s);
    ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
    EXPECT_EQ(back->recompute, rc);
  }
}

// pipeline_runs: written only when above 1 (plans before it read as one run), read back, and a
// count that does not divide a group's micro-batches refused like [parallel]'s.
TEST(PlanJson, PipelineRunsRoundTripAndAreValidated) {
  Scenario s = mixed();  // groups of 92 and 36 micro-batches
  EXPECT_EQ(io::plan_to_json(s, *s.plan).find("pipeline_runs"), std::string::npos);
  s.plan->pipeline_runs = 4;
  const std::string text = io::plan_to_json(s, *s.plan);
  EXPECT_NE(text.find("\"pipeline_runs\": 4"), std::string::npos) << text;
  auto back = io::parse_plan_json(text, "plan.json", s);
  ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
  EXPECT_EQ(back->pipeline_runs, 4);
  std::string bad = text;
  bad.replace(bad.find("\"pipeline_runs\": 4"), 18, "\"pipeline_runs\": 8");
  auto refused = io::parse_plan_json(bad, "plan.json", s);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(test::all_errors(refused.errors()).find("pipeline_runs = 8 does not divide a replica group's 92 micro-batches"),
            std::string::npos)
      << test::all_errors(refused.errors());
}

// Selective recompute's modules: written only when not the default attention core (plans
// written before the key read as it), read back, and validated like [parallel]: a name hetsim
// does not know, or modules without selective recompute, refused at their JSON path; a module
// the model lacks (MLA's up projections on Mixtral) by the plan's validation, at the key
// [parallel] would have.
TEST(PlanJson, RecomputeModulesRoundTripAndAreValidated) {
  auto s = io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/mixtral-8x7b-mi300x.toml", test::catalog());
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  s->plan->recompute = cost::Recompute::Selective;
  EXPECT_EQ(io::plan_to_json(*s, *s->plan).find("recompute_modules"), std::string::npos);
  s->plan->recompute_modules = static_cast<workload::RecomputeModules>(workload::module_bit(workload::RecomputeModule::MoeAct) |
                                                                       workload::module_bit(workload::RecomputeModule::LayerNorm));
  const std::string text = io::plan_to_json(*s, *s->plan);
  EXPECT_NE(text.find("\"recompute_modules\": [\n    \"layernorm\",\n    \"moe_act\"\n  ]"), std::string::npos) << text;
  auto back = io::parse_plan_json(text, "plan.json", *s);
  ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
  EXPECT_EQ(back->recompute_modules, s->plan->recompute_modules);
  const auto refused = [&](const std::string& from, const std::string& to) {
    std::string bad = text;
    bad.replace(bad.find(from), from.size(), to);
    auto r = io::parse_plan_json(bad, "plan.json", *s);
    EXPECT_FALSE(r.ok()) << bad;
    return r.ok() ? std::string() : test::all_errors(r.errors());
  };
  const std::string lacks = refused("\"moe_act\"", "\"mla_up_proj\"");
  EXPECT_NE(lacks.find("needs multi-head latent attention"), std::string::npos) << lacks;
  EXPECT_NE(lacks.find("[parallel.recompute_modules]"), std::string::npos) << lacks;
  EXPECT_NE(refused("\"moe_act\"", "\"moe_activation\"").find("unknown recompute module \"moe_activation\" [/recompute_modules/1]"), std::string::npos);
  EXPECT_NE(refused("\"recompute\": \"selective\"", "\"recompute\": \"full\"").find("chooses what selective recompute re-runs"),
            std::string::npos);
}

// Expert parallelism travels with the plan (absent = 1, as plans written before it), and a
// plan file is validated like [parallel]: ep must divide the experts.
TEST(PlanJson, ExpertParallelismRoundTripsAndIsValidated) {
  auto s = io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/mixtral-8x7b-mi300x.toml", test::catalog());
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  EXPECT_EQ(io::plan_to_json(*s, *s->plan).find("\"ep\""), std::string::npos);
  s->plan->ep = 2;
  const std::string text = io::plan_to_json(*s, *s->plan);
  EXPECT_NE(text.find("\"ep\": 2"), std::string::npos) << text;
  auto back = io::parse_plan_json(text, "plan.json", *s);
  ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
  EXPECT_EQ(back->ep, 2);
  std::string bad = text;
  bad.replace(bad.find("\"ep\": 2"), 7, "\"ep\": 3");
  auto refused = io::parse_plan_json(bad, "plan.json", *s);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(test::all_errors(refused.errors()).find("does not divide the model's 8 experts"), std::string::npos)
      << test::all_errors(refused.errors());
}

// expert_tp: written only when set, read back; a value not dividing a stage's tp is refused.
TEST(PlanJson, ExpertTensorParallelismRoundTripsAndIsValidated) {
  auto s = io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/mixtral-8x7b-mi300x.toml", test::catalog());
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  EXPECT_EQ(io::plan_to_json(*s, *s->plan).find("expert_tp"), std::string::npos);
  s->plan->expert_tp = 1;
  s->plan->ep = 8;
  const std::string text = io::plan_to_json(*s, *s->plan);
  EXPECT_NE(text.find("\"expert_tp\": 1"), std::string::npos) << text;
  auto back = io::parse_plan_json(text, "plan.json", *s);
  ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
  EXPECT_EQ(back->expert_tp, 1);
  std::string bad = text;
  bad.replace(bad.find("\"expert_tp\": 1"), 14, "\"expert_tp\": 3");
  auto refused = io::parse_plan_json(bad, "plan.json", *s);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(test::all_errors(refused.errors()).find("expert_tp = 3 does not divide"), std::string::npos)
      << test::all_errors(refused.errors());
}

// fp8_dispatch: the same, written only when set, read back, refused for a dense model.
TEST(PlanJson, Fp8DispatchRoundTripsAndIsValidated) {
  auto s = io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/mixtral-8x7b-mi300x.toml", test::catalog());
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  EXPECT_EQ(io::plan_to_json(*s, *s->plan).find("fp8_dispatch"), std::string::npos);
  s->plan->fp8_dispatch = true;
  const std::string text = io::plan_to_json(*s, *s->plan);
  EXPECT_NE(text.find("\"fp8_dispatch\": true"), std::string::npos) << text;
  auto back = io::parse_plan_json(text, "plan.json", *s);
  ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
  EXPECT_TRUE(back->fp8_dispatch);
  const Scenario dense = mixed();
  std::string on_dense = io::plan_to_json(dense, *dense.plan);
  on_dense.replace(on_dense.find("\"groups\""), 8, "\"fp8_dispatch\": true, \"groups\"");
  auto refused = io::parse_plan_json(on_dense, "plan.json", dense);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(test::all_errors(refused.errors()).find("fp8_dispatch sends the tokens to their experts in fp8"), std::string::npos)
      << test::all_errors(refused.errors());
}

// overlap_ep_comm: written only when set (plans before it read as false), read back, and
// refused for a dense model's plan like ep.
TEST(PlanJson, ExpertAllToAllOverlapRoundTripsAndIsValidated) {
  auto s = io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/mixtral-8x7b-mi300x.toml", test::catalog());
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  EXPECT_EQ(io::plan_to_json(*s, *s->plan).find("overlap_ep_comm"), std::string::npos);
  s->plan->ep = 2;
  s->plan->overlap_ep_comm = true;
  const std::string text = io::plan_to_json(*s, *s->plan);
  EXPECT_NE(text.find("\"overlap_ep_comm\": true"), std::string::npos) << text;
  auto back = io::parse_plan_json(text, "plan.json", *s);
  ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
  EXPECT_TRUE(back->overlap_ep_comm);
  const Scenario dense = mixed();
  std::string on_dense = io::plan_to_json(dense, *dense.plan);
  on_dense.replace(on_dense.find("\"groups\""), 8, "\"overlap_ep_comm\": true, \"groups\"");
  auto refused = io::parse_plan_json(on_dense, "plan.json", dense);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(test::all_errors(refused.errors()).find("this model has no experts"), std::string::npos)
      << test::all_errors(refused.errors());
}

// ep_dispatch: written only when not the all-to-all (plans before it read as all-to-all), read
// back, and refused for a dense model's plan.
TEST(PlanJson, ExpertDispatchRoundTripsAndIsValidated) {
  auto s = io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/mixtral-8x7b-mi300x.toml", test::catalog());
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  EXPECT_EQ(io::plan_to_json(*s, *s->plan).find("ep_dispatch"), std::string::npos);
  s->plan->ep_dispatch = plan::Plan::EpDispatch::Hierarchical;
  const std::string text = io::plan_to_json(*s, *s->plan);
  EXPECT_NE(text.find("\"ep_dispatch\": \"hierarchical\""), std::string::npos) << text;
  auto back = io::parse_plan_json(text, "plan.json", *s);
  ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
  EXPECT_EQ(back->ep_dispatch, plan::Plan::EpDispatch::Hierarchical);
  const Scenario dense = mixed();
  std::string on_dense = io::plan_to_json(dense, *dense.plan);
  on_dense.replace(on_dense.find("\"groups\""), 8, "\"ep_dispatch\": \"hierarchical\", \"groups\"");
  auto refused = io::parse_plan_json(on_dense, "plan.json", dense);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(test::all_errors(refused.errors()).find("ep_dispatch says how tokens reach their experts"), std::string::npos)
      << test::all_errors(refused.errors());
}

struct BadPlan {
  const char* name;
  std::string from, to;  // textual edit of the valid plan
  const char* says;
};

class PlanJsonBad : public ::testing::TestWithParam<BadPlan> {};

TEST_P(PlanJsonBad, IsRejectedWithFileAndPath) {
  const Scenario s = mixed();
  std::string text = io::plan_to_json(s, *s.plan);
  const auto& c = GetParam();
  const auto at = text.find(c.from);
  ASSERT_NE(at, std::string::npos) << c.from;
  text.replace(at, c.from.size(), c.to);
  auto p = io::parse_plan_json(text, "plan.json", s);
  ASSERT_FALSE(p.ok()) << c.name;
  const std::string all = test::all_errors(p.errors());
  EXPECT_NE(all.find("plan.json"), std::string::npos) << all;
  EXPECT_NE(all.find(c.says), std::string::npos) << all;
}

void PrintTo(const BadPlan& b, std::ostream* os) { *os << b.name; }

INSTANTIATE_TEST_SUITE_P(
    Plans, PlanJsonBad,
    ::testing::Values(
        BadPlan{"syntax", "\"groups\": [", "\"groups\": [[", "JSON syntax"},
        BadPlan{"not_a_plan", "\"hetsim-plan\"", "\"other\"", "not a hetsim plan"},
        BadPlan{"future_version", "\"version\": 1", "\"version\": 2", "unsupported plan version 2"},
        BadPlan{"unknown_key", "\"zero\": 1", "\"zeros\": 1", "unknown key 'zeros' [/zeros]"},
        BadPlan{"unknown_pool", "\"pool\": \"a100\"", "\"pool\": \"a10\"", "unknown pool 'a10'"},
        BadPlan{"bad_schedule", "\"1f1b\"", "\"1f2b\"", "unknown schedule \"1f2b\""},
        BadPlan{"layers_not_covered", "\"layers\": 20\n", "\"layers\": 19\n", "cover"},
        BadPlan{"tp_too_wide", "\"tp\": 8", "\"tp\": 16", "does not fit inside a node"},
        BadPlan{"too_many_replicas", "\"replicas\": 4", "\"replicas\": 40", "devices of pool"},
        BadPlan{"virtual_stages_without_interleaving", "\"virtual_stages\": 1", "\"virtual_stages\": 2",
                "virtual_stages applies to the interleaved schedule only"},
        BadPlan{"wrong_type", "\"micro_batch\": 1", "\"micro_batch\": \"1\"", "expected an integer"},
        // Issue 11, defect 2: a number beyond double range and a duplicate key are diagnostics
        // with file:line:col, not an uncaught exception or a silent choice.
        BadPlan{"number_out_of_range", "\"micro_batch\": 1", "\"micro_batch\": 1e400", "plan.json:5:18: error: JSON: "},
        BadPlan{"duplicate_key", "\"zero\": 1", "\"zero\": 1,\n  \"zero\": 2", "duplicate key \"zero\""}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace hetsim
