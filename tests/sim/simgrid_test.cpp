// The simgrid engine (one SimGrid simulation per process: ctest runs each test in its own).
// Agreement with the native engine where nothing contends; the slowdown that only shared links
// cause, with the links named; a platform file SimGrid itself loads.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/engine/native_engine.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/simgrid/platform.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

Result<Scenario> bundled(const std::string& name) {
  return io::read_scenario(std::string(HETSIM_SOURCE_DIR) + "/scenarios/" + name + ".toml", test::catalog());
}

// The scenario's plan through both engines.
struct Both {
  schedule::TaskGraph graph;
  engine::Trace native;
  engine::SimgridRun simgrid;
};
Both run_both(const Scenario& s) {
  Both b;
  b.graph = schedule::build_schedule(s, *s.plan);
  auto native = engine::run_native(b.graph);
  EXPECT_TRUE(native.ok());
  if (native) b.native = *native;
  auto sg = engine::run_simgrid(b.graph, s.cluster);
  EXPECT_TRUE(sg.ok()) << (sg.ok() ? "" : test::all_errors(sg.errors()));
  if (sg) b.simgrid = std::move(*sg);
  return b;
}

// Nothing shares a link: one node (a pipeline over NVLink), and pods whose rings never meet.
class Agreement : public ::testing::TestWithParam<const char*> {};

TEST_P(Agreement, BothEnginesAgreeWithin2PercentWhereNothingContends) {
  auto s = bundled(GetParam());
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto b = run_both(*s);
  ASSERT_FALSE(b.simgrid.trace.end.empty());
  EXPECT_TRUE(b.simgrid.contended.empty()) << b.simgrid.contended.front().link;
  EXPECT_NEAR(static_cast<double>(b.simgrid.trace.makespan) / static_cast<double>(b.native.makespan), 1.0, 0.02);
  // The same tasks, each no shorter than its modelled duration, and the same peaks.
  for (std::uint32_t i = 0; i < b.graph.size(); ++i)
    EXPECT_GE(b.simgrid.trace.end[i] - b.simgrid.trace.start[i], b.graph.tasks[i].duration - 1);
  EXPECT_EQ(b.simgrid.trace.peak_bytes, b.native.peak_bytes);
}

INSTANTIATE_TEST_SUITE_P(Bundled, Agreement, ::testing::Values("cpu-pipeline", "default", "llama3-8b-tpu-v5p"));

// What the platform has beyond the cost model's worst case: on a 2:1 oversubscribed fat-tree the
// native engine charges every NIC transfer the full oversubscription; SimGrid charges what the
// step's traffic actually does, which here is less.
TEST(Simgrid, AnUnsaturatedOversubscribedFabricCostsLessThanTheWorstCase) {
  auto s = test::parse(
      "[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\nseq_len = 4096\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 4\n[cluster.network]\nnic = \"ib-ndr-400\"\n"
      "oversubscription = 2\n[parallel]\ntp = 4\npp = 2\ndp = 4\nmicro_batch = 1\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto b = run_both(*s);
  EXPECT_LT(static_cast<double>(b.simgrid.trace.makespan), static_cast<double>(b.native.makespan));
}

// One node of 8 H100, TP 2 · DP 4 with ZeRO 3: the parameter gathers' rings and the TP rings run
// at the same time over the same fabric ports. The native engine prices each collective alone.
TEST(Simgrid, SharedLinksSlowTheStepAndAreNamed) {
  auto s = test::parse(
      "[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\nseq_len = 4096\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n"
      "[parallel]\ntp = 2\npp = 1\ndp = 4\nmicro_batch = 1\nzero = 3\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto b = run_both(*s);
  const auto* sg = &b.simgrid;
  EXPECT_GT(static_cast<double>(sg->trace.makespan), 1.01 * static_cast<double>(b.native.makespan));
  ASSERT_FALSE(sg->contended.empty());
  for (const auto& c : sg->contended) {
    EXPECT_GT(c.peak_demand, 1.0) << c.link;
    EXPECT_NE(c.link.find("-port"), std::string::npos) << c.link;  // one node: only fabric ports are shared
  }
  EXPECT_GT(sg->flow_delay_s, 0);
}

TEST(Simgrid, ASecondSimulationInOneProcessIsRefusedClearly) {
  auto s = bundled("cpu-pipeline");
  ASSERT_TRUE(s.ok());
  const auto g = schedule::build_schedule(*s, *s->plan);
  ASSERT_TRUE(engine::run_simgrid(g, s->cluster).ok());
  auto again = engine::run_simgrid(g, s->cluster);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(to_string(again.errors()[0]).find("one simulation per process"), std::string::npos);
}

TEST(Simgrid, ThePlatformFileLoadsInSimGrid) {
  auto s = bundled("mixed-h100-a100");
  ASSERT_TRUE(s.ok());
  const auto p = platform::build(s->cluster);
  const auto file = std::filesystem::temp_directory_path() / "hetsim-platform-test.xml";
  std::ofstream(file) << platform::to_xml(p, {{0, 1}, {0, 200}, {200, 0}});
  auto n = engine::load_platform_file(file.string(), "p0n0d0", "p1n9d0");
  std::filesystem::remove(file);
  ASSERT_TRUE(n.ok()) << test::all_errors(n.errors());
  EXPECT_EQ(n->hosts, p.hosts.size());
  EXPECT_EQ(n->route_links, p.route(0, 200).size());  // p1n9d0 is host 200 (128 H100 first)
}

}  // namespace
}  // namespace hetsim
