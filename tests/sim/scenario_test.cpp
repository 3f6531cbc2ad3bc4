#include <gtest/gtest.h>

#include <filesystem>

#include "sim/analytic/stage_cost.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

TEST(Scenario, MinimalUniformPlanExpands) {
  auto s = test::parse(test::minimal());
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  ASSERT_TRUE(s->plan.has_value());
  const auto& p = *s->plan;
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].replicas, 4);
  EXPECT_EQ(p.groups[0].micro_batches, 4);  // 16 sequences / (dp 4 · micro_batch 1)
  ASSERT_EQ(p.groups[0].stages.size(), 2u);
  EXPECT_EQ(p.groups[0].stages[1].first_layer, 2);
  EXPECT_EQ(p.devices(), 16);
}

// The kernel choices of [training] read as written and reach the ops' shape: every attention
// kernel and gradient-accumulation value (auto resolves by fused_kernels).
TEST(Scenario, AttentionKernelAndGradientAccumulationReachTheShape) {
  auto shape = [](const std::string& training) {
    auto text = test::minimal();
    text.replace(text.find("precision = \"bf16\"\n"), 19, "precision = \"bf16\"\n" + training);
    auto s = test::parse(text);
    EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
    return analytic::micro_batch_shape(*s, *s->plan, s->plan->groups[0].stages[0]);
  };
  using workload::AttentionKernel;
  using workload::GradAccumulation;
  EXPECT_EQ(shape("").attention_kernel, AttentionKernel::Vendor);
  EXPECT_EQ(shape("fused_kernels = false\n").attention_kernel, AttentionKernel::Fa2);
  EXPECT_EQ(shape("attention_kernel = \"vendor\"\n").attention_kernel, AttentionKernel::Vendor);
  EXPECT_EQ(shape("attention_kernel = \"fa2\"\n").attention_kernel, AttentionKernel::Fa2);
  EXPECT_EQ(shape("attention_kernel = \"triton\"\n").attention_kernel, AttentionKernel::Triton);
  EXPECT_EQ(shape("").grad_accumulation, GradAccumulation::Fused);
  EXPECT_EQ(shape("grad_accumulation = \"add\"\n").grad_accumulation, GradAccumulation::Add);
  EXPECT_EQ(shape("grad_accumulation = \"cast_add\"\n").grad_accumulation, GradAccumulation::CastAdd);
  EXPECT_EQ(shape("grad_accumulation = \"add16\"\n").grad_accumulation, GradAccumulation::Add16);
  EXPECT_EQ(shape("grad_accumulation = \"fused\"\n").grad_accumulation, GradAccumulation::Fused);
}

TEST(Scenario, ExplicitKeysOverrideAPreset) {
  auto s = test::parse(
      "[model]\npreset = \"llama3-8b\"\nlayers = 16\n[training]\nglobal_batch = 8\nseq_len = 128\n"
      "[[cluster.pool]]\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  EXPECT_EQ(s->model.layers, 16);
  EXPECT_EQ(s->model.hidden, 4096);
  EXPECT_FALSE(s->plan.has_value());
}

TEST(Scenario, UniformShorthandSpansSeveralPools) {
  auto s = test::parse(
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 48\nseq_len = 256\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n"
      "[[cluster.pool]]\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n"
      "[parallel]\ntp = 4\npp = 2\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto& p = *s->plan;
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].replicas, 2);  // 16 H100 / 8
  EXPECT_EQ(p.groups[1].replicas, 1);  // 8 A100 / 8
  EXPECT_EQ(p.groups[1].stages[0].pool, 1);
  EXPECT_EQ(p.sequences_per_step(), 48);
}

TEST(Scenario, ReplicasAskingForMoreThanTheBatchAreRejected) {
  // 40 sequences / micro_batch 2 = 20 micro-batches; the first group alone asks for 2·12 = 24.
  auto s = test::parse(
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 40\nseq_len = 256\n"
      "[[cluster.pool]]\nname = \"fast\"\ndevice = \"h100-sxm5\"\nnodes = 1\n"
      "[[cluster.pool]]\nname = \"slow\"\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n"
      "[parallel]\nmicro_batch = 2\n"
      "[[parallel.replicas]]\ncount = 2\nmicro_batches = 12\n"
      "stages = [{pool = \"fast\", tp = 2, layers = 3}, {pool = \"slow\", tp = 2, layers = 1}]\n"
      "[[parallel.replicas]]\ncount = 1\n"
      "stages = [{pool = \"slow\", tp = 4, layers = 4}]\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(test::all_errors(s.errors()).find("micro-batches"), std::string::npos)
      << test::all_errors(s.errors());
}

TEST(Scenario, RemainingMicroBatchesAreSharedByReplicasWithoutACount) {
  auto s = test::parse(
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 40\nseq_len = 256\n"
      "[[cluster.pool]]\nname = \"fast\"\ndevice = \"h100-sxm5\"\nnodes = 1\n"
      "[[cluster.pool]]\nname = \"slow\"\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n"
      "[parallel]\nmicro_batch = 2\n"
      "[[parallel.replicas]]\ncount = 2\nmicro_batches = 7\n"
      "stages = [{pool = \"fast\", tp = 2, layers = 3}, {pool = \"slow\", tp = 2, layers = 1}]\n"
      "[[parallel.replicas]]\ncount = 1\n"
      "stages = [{pool = \"slow\", tp = 4, layers = 4}]\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  EXPECT_EQ(s->plan->groups[1].micro_batches, 6);  // 20 − 2·7
  EXPECT_EQ(s->plan->sequences_per_step(), 40);
}

TEST(Scenario, InlineDeviceAndLink) {
  auto s = test::parse(
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 8\nseq_len = 128\n"
      "[[cluster.link]]\nname = \"my-fabric\"\nkind = \"scale-up\"\nbandwidth = \"200GB/s\"\nlatency = \"2us\"\n"
      "[[cluster.pool]]\nnodes = 2\n"
      "[cluster.pool.device]\nname = \"npu-x\"\npeak = { bf16 = \"500TFLOPS\" }\nmemory = \"64GiB\"\n"
      "memory_bandwidth = \"2TB/s\"\ntdp = \"500W\"\n"
      "node = { devices = 4, fabric = \"my-fabric\", nics = 4, nic = \"roce-200\" }\n"
      "[parallel]\ntp = 4\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto& pool = s->cluster.pools[0];
  EXPECT_EQ(pool.device.name, "npu-x");
  EXPECT_EQ(pool.devices_per_node, 4);
  EXPECT_DOUBLE_EQ(pool.fabric.bandwidth.v, 200e9);
  EXPECT_DOUBLE_EQ(pool.nic_bandwidth_per_device().v, 25e9);
  EXPECT_EQ(s->plan->replicas(), 2);
}

TEST(Scenario, InlineLinkReplacesTheCatalogueEntryOfTheSameName) {
  auto s = test::parse(test::minimal() +
                       "[[cluster.link]]\nname = \"nvlink4\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  EXPECT_DOUBLE_EQ(s->cluster.pools[0].fabric.bandwidth.v, 100e9);
}

TEST(Scenario, NetworkAndCostOverrides) {
  auto s = test::parse(test::minimal() +
                       "[cluster.network]\nnic_bandwidth = \"100Gbps\"\nnics_per_node = 2\noversubscription = 2.0\n"
                       "[cost]\nmode = \"own\"\n[cost.price_usd_per_hour]\n\"h100-sxm5\" = 1.25\n");
  // [cluster.network] after [parallel] is still the cluster's table in TOML.
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto& pool = s->cluster.pools[0];
  EXPECT_DOUBLE_EQ(pool.nic.bandwidth.v, 12.5e9);
  EXPECT_EQ(pool.nics_per_node, 2);
  EXPECT_DOUBLE_EQ(s->cluster.network.oversubscription, 2.0);
  EXPECT_DOUBLE_EQ(pool.device.price_usd_per_hour, 1.25);
  EXPECT_EQ(s->cost.mode, CostSpec::Mode::Own);
}

TEST(Scenario, EveryBundledScenarioLoadsWithAPlan) {
  int n = 0;
  for (const char* dir : {"scenarios", "scenarios/validation"}) {
    for (const auto& e : std::filesystem::directory_iterator(std::string(HETSIM_SOURCE_DIR) + "/" + dir)) {
      if (e.path().extension() != ".toml") continue;
      SCOPED_TRACE(e.path().string());
      auto s = io::read_scenario(e.path(), test::catalog());
      ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
      EXPECT_TRUE(s->plan.has_value());
      ++n;
    }
  }
  EXPECT_GE(n, 15);  // default + 4 realistic + 10 validation runs
}

}  // namespace
}  // namespace hetsim

namespace hetsim {
namespace {

// Defect 11: `hetsim plan` does not read [parallel] (docs/planner.md): a table written for
// another cluster does not stop the search, a misspelt key is still reported.
TEST(Scenario, WithoutPlanReadingParallelValuesAreNotChecked) {
  const std::string base =
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 16\nseq_len = 512\n[[cluster.pool]]\n"
      "device = \"h100-sxm5\"\nnodes = 1\n";
  const std::string wrong = base + "[parallel]\ntp = 3\npp = 7\nschedule = \"zigzag\"\n";
  EXPECT_FALSE(io::parse_scenario(wrong, "w.toml", test::catalog()).ok()) << "estimate still checks it";
  auto r = io::parse_scenario(wrong, "w.toml", test::catalog(), {.plan = false});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  EXPECT_FALSE(r->plan.has_value());
  auto typo = io::parse_scenario(base + "[parallel]\ntpp = 2\n", "t.toml", test::catalog(), {.plan = false});
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.errors()[0].key, "parallel.tpp");
  auto good = io::parse_scenario(base + "[parallel]\ntp = 2\n", "g.toml", test::catalog());
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(good->plan.has_value());
}

}  // namespace
}  // namespace hetsim
