// sim/api: the door every front end uses. It reports instead of printing, names the file of
// every failure, stops a search when asked, and gives the same numbers from any thread.
#include "sim/api/api.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stop_token>
#include <thread>

#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

TEST(Api, LoadTextNamesItsFileAndPlanToRunNeedsAPlan) {
  auto bad = api::load_text("[model\n", "editor.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors()[0].where.file, "editor.toml");
  EXPECT_EQ(bad.errors()[0].kind, ErrorKind::BadInput);

  auto s = api::load_text(test::minimal(), "m.toml", {.plan = false});
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto p = api::plan_to_run(*s, "", "simulate");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.errors()[0].key, "parallel");
  EXPECT_NE(p.errors()[0].message.find("hetsim simulate"), std::string::npos);
  EXPECT_FALSE(api::plan_to_run(*s, "/nonexistent/plan.json", "simulate").ok());
}

TEST(Api, SimulateNativeMatchesTheReportPath) {
  auto s = api::load_text(test::minimal(), "m.toml");
  ASSERT_TRUE(s.ok());
  auto p = api::plan_to_run(*s, "", "simulate");
  ASSERT_TRUE(p.ok());
  auto sim = api::simulate(*s, *p);
  ASSERT_TRUE(sim.ok()) << test::all_errors(sim.errors());
  EXPECT_FALSE(sim->simgrid.has_value());
  auto direct = report::run_simulation(*s, *p);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(sim->sim.trace.makespan, direct->trace.makespan);
  EXPECT_DOUBLE_EQ(api::estimate(*s, *p).step_time.v, analytic::estimate(*s, *p).step_time.v);
}

// A step whose estimate is past what the simulated clock (int64 nanoseconds) is for says so: a
// 405B model's gradients over a 1 KB/s network (legal, and absurd) used to overflow the schedule's
// times into a "deadlock".
TEST(Api, AStepBeyondTheSimulatedClockIsRefusedNotSimulated) {
  auto s = api::load_text("[model]\npreset = \"llama3-405b\"\n[training]\nglobal_batch = 32\nseq_len = 512\n"
                          "[[cluster.link]]\nname = \"slow\"\nkind = \"scale-out\"\nbandwidth = \"1KB/s\"\nlatency = \"1us\"\n"
                          "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\nnic = \"slow\"\n"
                          "[parallel]\ntp = 8\npp = 1\ndp = 2\n",
                          "slow.toml");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  ASSERT_GT(api::estimate(*s, *s->plan).step_time.v, 1e8);
  auto r = api::simulate(*s, *s->plan);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(test::all_errors(r.errors()).find("beyond the 1e+08 s the simulation's clock is for"), std::string::npos)
      << test::all_errors(r.errors());
}

// A long simulation reports its progress and stops when asked: an 8-stage pipeline of 4096
// micro-batches (about 200 k tasks).
TEST(Api, SimulateReportsProgressAndStopsWhenAsked) {
  const std::string text =
      "[model]\npreset = \"tiny\"\nlayers = 8\n[training]\nglobal_batch = 4096\nseq_len = 128\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n[parallel]\ntp = 1\npp = 8\ndp = 1\nmicro_batch = 1\n";
  auto s = api::load_text(text, "long.toml");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto p = api::plan_to_run(*s, "", "simulate");
  ASSERT_TRUE(p.ok());
  std::vector<double> seen;
  api::SimulateOptions o;
  o.progress = [&](double f) { seen.push_back(f); };
  auto sim = api::simulate(*s, *p, o);
  ASSERT_TRUE(sim.ok()) << test::all_errors(sim.errors());
  ASSERT_GE(seen.size(), 2u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  EXPECT_GT(seen.front(), 0.0);

  // Asked to stop at the first progress report: it ends there, saying so.
  std::stop_source stop;
  api::SimulateOptions o2;
  o2.stop = stop.get_token();
  int calls = 0;
  o2.progress = [&](double) { ++calls; stop.request_stop(); };
  auto stopped = api::simulate(*s, *p, o2);
  ASSERT_FALSE(stopped.ok());
  EXPECT_NE(stopped.errors()[0].message.find("stopped"), std::string::npos);
  EXPECT_EQ(calls, 1);
}

TEST(Api, PlanLeavesOutPoolsWithoutThePrecisionAndRefusesWhenNoneIsLeft) {
  const std::string two =
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 16\nseq_len = 512\nprecision = \"bf16\"\n"
      "[[cluster.pool]]\ndevice = \"v100-sxm2-32gb\"\nnodes = 1\n[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n";
  auto s = api::load_text(two, "two.toml", {.plan = false});
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  planner::Options o;
  o.top = 2;
  o.verify = 2;
  auto r = api::plan(*s, o);
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("v100-sxm2-32gb"), std::string::npos);
  EXPECT_NE(r->notes[0].find("fp16"), std::string::npos);
  ASSERT_FALSE(r->result.top.empty());

  const std::string v100 =
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 16\nseq_len = 512\nprecision = \"bf16\"\n"
      "[[cluster.pool]]\ndevice = \"v100-sxm2-32gb\"\nnodes = 1\n";
  auto only = api::load_text(v100, "v100.toml", {.plan = false});
  ASSERT_TRUE(only.ok());
  auto none = api::plan(*only, o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.errors()[0].key, "training.precision");
  EXPECT_EQ(none.errors()[0].where.file, "v100.toml");
}

// A GUI drops a search whose inputs changed: asked to stop after its first phase, the search
// ends with what that phase found, unverified, and says it stopped.
TEST(Api, AStoppedSearchEndsEarlyWithWhatItFound) {
  const std::string two =
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 16\nseq_len = 512\n"
      "[[cluster.pool]]\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n";
  auto s = api::load_text(two, "two.toml", {.plan = false});
  ASSERT_TRUE(s.ok());
  planner::Options whole;
  auto full = api::plan(*s, whole);
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE(full->result.stopped);
  EXPECT_GT(full->result.simulated, 0u);

  std::stop_source src;
  planner::Options o;
  o.stop = src.get_token();
  o.progress = [&](double) { src.request_stop(); };  // stop after the first pool
  auto part = api::plan(*s, o);
  ASSERT_TRUE(part.ok());
  EXPECT_TRUE(part->result.stopped);
  EXPECT_EQ(part->result.simulated, 0u);
  EXPECT_LT(part->result.evaluated, full->result.evaluated);
  ASSERT_FALSE(part->result.top.empty());
  for (const auto& c : part->result.top) EXPECT_EQ(c.family, "single pool");
}

TEST(Api, GivesTheSameNumbersFromManyThreads) {
  auto s = api::load_text(test::minimal(), "m.toml");
  ASSERT_TRUE(s.ok());
  const double want = api::estimate(*s, *s->plan).step_time.v;
  std::vector<double> got(4, 0);
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < got.size(); ++i)
      threads.emplace_back([&, i] {
        auto mine = api::load_text(test::minimal(), "m.toml");
        if (mine.ok()) got[i] = api::estimate(*mine, *mine->plan).step_time.v;
      });
  }
  for (double g : got) EXPECT_DOUBLE_EQ(g, want);
}

}  // namespace
}  // namespace hetsim
