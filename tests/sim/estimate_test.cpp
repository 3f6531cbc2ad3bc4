#include "sim/analytic/estimate.hpp"

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>
#include <tuple>

#include "models/workload/model_spec.hpp"

#include "models/cost/memory.hpp"

#include "models/cost/compute.hpp"
#include "sim/analytic/op_breakdown.hpp"
#include "sim/analytic/stage_cost.hpp"
#include "sim/report/estimate_report.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/engine/native_engine.hpp"
#include "tests/support/read_file.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

using test::load;

// One pool of 8 H100 in one node, tp 1, pp 4, dp 1, no TP/DP communication:
// 1F1B step = (m + p − 1)·(t_f + t_b) + pp comm + optimizer; the bubble is (p − 1)·(t_f + t_b).
TEST(Estimate, UniformOneFOneBMatchesTheClosedForm) {
  const std::string text =
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 16\nseq_len = 512\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\ndevices_per_node = 4\n"
      "[parallel]\ntp = 1\npp = 4\ndp = 1\nmicro_batch = 1\nschedule = \"1f1b\"\n";
  const Scenario s = load(text);
  ASSERT_TRUE(s.plan);
  const auto e = analytic::estimate(s, *s.plan);
  ASSERT_EQ(e.stages.size(), 4u);
  // Interior stages are identical: c = fwd + bwd + pp; first/last differ by embedding/head.
  // Take the closed form over the real per-stage times: T = m·max c + Σc − max c.
  double cmax = 0, csum = 0;
  for (const auto& st : e.stages) {
    const double c = st.per_micro_batch.total().v;
    cmax = std::max(cmax, c);
    csum += c;
  }
  const int m = 16;
  EXPECT_NEAR(e.step.get("pipeline bubble").v + e.step.get("compute").v + e.step.get("pp comm").v +
                  e.step.get("recompute").v + e.step.get("tp comm").v,
              m * cmax + csum - cmax, 1e-12);
  // With equal stages the bubble is exactly (p − 1)·c: check against an all-interior bound.
  EXPECT_NEAR(e.step.get("pipeline bubble").v, csum - cmax, 1e-12);
  EXPECT_EQ(e.step.get("dp comm").v, 0.0);  // one replica: nothing to synchronise
}

TEST(Estimate, InterleavingShrinksTheBubbleByV) {
  const std::string base =
      "[model]\npreset = \"tiny\"\nlayers = 8\n[training]\nglobal_batch = 16\nseq_len = 512\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\ndevices_per_node = 4\n"
      "[parallel]\ntp = 1\npp = 4\nmicro_batch = 1\n";
  const Scenario plain = load(base + "schedule = \"1f1b\"\n");
  const Scenario inter = load(base + "schedule = \"interleaved\"\nvirtual_stages = 2\n");
  const auto a = analytic::estimate(plain, *plain.plan);
  const auto b = analytic::estimate(inter, *inter.plan);
  // Bubble (Σc − max c)/v; the per-stage c grows only by the extra p2p messages.
  EXPECT_LT(b.step.get("pipeline bubble").v, 0.6 * a.step.get("pipeline bubble").v);
  EXPECT_GT(b.step.get("pipeline bubble").v, 0.4 * a.step.get("pipeline bubble").v);
}

TEST(Estimate, GPipeKeepsAllMicroBatchesInMemory) {
  const std::string base =
      "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 32\nseq_len = 512\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\ndevices_per_node = 2\n"
      "[parallel]\ntp = 1\npp = 2\nmicro_batch = 1\n";
  const Scenario g = load(base + "schedule = \"gpipe\"\n");
  const Scenario o = load(base + "schedule = \"1f1b\"\n");
  const auto eg = analytic::estimate(g, *g.plan);
  const auto eo = analytic::estimate(o, *o.plan);
  EXPECT_DOUBLE_EQ(eg.stages[0].in_flight, 32);
  EXPECT_DOUBLE_EQ(eo.stages[0].in_flight, 2);
  EXPECT_NEAR(eg.step_time.v, eo.step_time.v, 1e-12);  // same time, more memory
  EXPECT_GT(eg.stages[0].memory.get("activations").v, 15 * eo.stages[0].memory.get("activations").v);
}

TEST(Estimate, MfuAndThroughputAreConsistent) {
  const Scenario s = load(test::minimal());
  const auto e = analytic::estimate(s, *s.plan);
  EXPECT_NEAR(e.tokens_per_s, 16.0 * 512 / e.step_time.v, 1e-6);
  EXPECT_NEAR(e.mfu, e.flops_per_device.v / 989e12, 1e-12);
  EXPECT_GT(e.mfu, 0.0);
  EXPECT_LT(e.mfu, 1.0);
  EXPECT_TRUE(e.fits);
  EXPECT_EQ(e.devices, 16);
}

TEST(Estimate, TimeAndCostToTrain) {
  const Scenario s = load(test::minimal() + "[cost]\n[cost.price_usd_per_hour]\n\"h100-sxm5\" = 2.0\n");
  Scenario t = s;
  t.training.tokens = 1e9;
  const auto e = analytic::estimate(t, *t.plan);
  const double seconds = 1e9 / e.tokens_per_s;
  EXPECT_NEAR(e.time_to_train.v, seconds, 1e-6 * seconds);
  // 16 devices · $2/h
  EXPECT_NEAR(e.cost_to_train_usd, 16 * 2.0 * seconds / 3600, 1e-6);
}

// Goodput from the used devices' catalogue MTBF (H100: 50,700 device-hours, Llama 3), a
// checkpoint of weights + optimizer state (bf16 + fp32 master + Adam: 14 B per parameter)
// written at 0.12 GB/s per device, and a 10 min restart; [reliability] overrides each.
TEST(Estimate, GoodputFromTheDevicesTheCheckpointAndTheRestart) {
  Scenario s = load(test::minimal());
  const auto e = analytic::estimate(s, *s.plan);
  ASSERT_EQ(e.devices, 16);
  const double params = workload::count_params(s.model).total(s.model.layers);
  EXPECT_NEAR(e.checkpoint.v, 14 * params, 1e-6 * params);
  EXPECT_NEAR(e.goodput.job_mtbf.v, 50700.0 / 16 * 3600, 1e-6);
  EXPECT_NEAR(e.goodput.checkpoint_write.v, 14 * params / (16 * 0.12e9), 1e-9);
  cost::GoodputInput by_hand;
  by_hand.interruptions_per_hour = 16 / 50700.0;
  by_hand.checkpoint = Bytes{14 * params};
  by_hand.write_bandwidth = BytesPerSec{16 * 0.12e9};
  by_hand.restart = Duration{600};
  EXPECT_DOUBLE_EQ(e.goodput.fraction, cost::goodput(by_hand).fraction);
  EXPECT_GT(e.goodput.fraction, 0.99);  // 16 devices rarely fail

  Scenario t = load(test::minimal() + "[reliability]\nmtbf_hours = 100\ncheckpoint_bandwidth = \"2MB/s\"\n"
                                      "restart_time = \"1h\"\n");
  const auto f = analytic::estimate(t, *t.plan);
  EXPECT_NEAR(f.goodput.job_mtbf.v, 100.0 / 16 * 3600, 1e-6);
  EXPECT_LT(f.goodput.fraction, e.goodput.fraction);
  EXPECT_GT(f.goodput.fraction, 0);
  const auto j = report::estimate_json(t, *t.plan, f);
  EXPECT_NE(j.find("\"goodput\""), std::string::npos);
  EXPECT_NE(j.find("\"effective_time_to_train_s\""), std::string::npos);
}

TEST(Estimate, OutOfMemoryPlanIsFlagged) {
  const std::string text =
      "[model]\npreset = \"llama3-70b\"\n[training]\nglobal_batch = 8\nseq_len = 8192\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n[parallel]\ntp = 8\npp = 1\n";
  const Scenario s = load(text);
  const auto e = analytic::estimate(s, *s.plan);
  EXPECT_FALSE(e.fits);
  ASSERT_EQ(e.device_types.size(), 1u);
  // 70.6 B params / 8 · 18 B ≈ 159 GB of state alone
  EXPECT_GT(e.device_types[0].peak_memory.v, 150e9);
  EXPECT_FALSE(e.device_types[0].fits);
}

TEST(Estimate, FasterReplicasTakingMoreMicroBatchesBalanceTheStep) {
  auto make = [](int fast_mb) {
    // A model large enough that both devices are compute-bound (a tiny one is host-bound on
    // both: then neither is faster).
    return "[model]\nlayers = 4\nhidden = 4096\nheads = 32\nffn_hidden = 16384\nvocab = 32000\n"
           "[training]\nglobal_batch = 64\nseq_len = 1024\nprecision = \"fp16\"\n"
           "[[cluster.pool]]\nname = \"h\"\ndevice = \"h100-sxm5\"\nnodes = 1\ndevices_per_node = 1\n"
           "[[cluster.pool]]\nname = \"v\"\ndevice = \"v100-sxm2-32gb\"\nnodes = 1\ndevices_per_node = 1\n"
           "[parallel]\nmicro_batch = 1\n"
           "[[parallel.replicas]]\nmicro_batches = " + std::to_string(fast_mb) +
           "\nstages = [{pool = \"h\", layers = 4}]\n"
           "[[parallel.replicas]]\nstages = [{pool = \"v\", layers = 4}]\n";
  };
  const Scenario even = load(make(32));
  const Scenario skew = load(make(48));
  const auto a = analytic::estimate(even, *even.plan);
  const auto b = analytic::estimate(skew, *skew.plan);
  EXPECT_LT(b.step_time.v, a.step_time.v);  // the V100 replica no longer holds everyone up
}

// Several replica groups price their data-parallel ring with as many members per node as the
// placement puts there (the SimGrid engine's channels), not one: 16 replicas (tp 1, ZeRO 1, the
// reduce not overlapped) on two nodes of 8 are the same ring whether they are one group of 16
// or 16 groups of 1, so the estimate and the simulated step are the same to the ns. (Before,
// the 16 groups priced every member alone on its node, at one device's NIC share.) Groups of 3
// and 6 replicas are placed 3 on the first node and 6 on the second (a block that does not fit
// the rest of a node starts the next one): unequal runs, so one member per node, a slower ring
// than one group of 9 (3 a node).
TEST(Estimate, ReplicaGroupsPriceTheirRingByTheMembersTheirPlacementPutsOnANode) {
  auto text = [](const std::vector<int>& counts) {
    int total = 0;
    for (int c : counts) total += c;
    std::string t = "[model]\npreset = \"tiny\"\nlayers = 4\n"
                    "[training]\nglobal_batch = " + std::to_string(total) + "\nseq_len = 2048\nprecision = \"bf16\"\n"
                    "[[cluster.pool]]\nname = \"h\"\ndevice = \"h100-sxm5\"\nnodes = 2\n"
                    "[parallel]\nmicro_batch = 1\nzero = 1\noverlap_grad_reduce = false\n";
    for (int c : counts)
      t += "[[parallel.replicas]]\ncount = " + std::to_string(c) + "\nmicro_batches = 1\nstages = [{pool = \"h\", layers = 4}]\n";
    return t;
  };
  const Scenario one = load(text({16}));
  const Scenario many = load(text(std::vector<int>(16, 1)));
  ASSERT_TRUE(one.plan && many.plan);
  const auto a = analytic::estimate(one, *one.plan);
  const auto b = analytic::estimate(many, *many.plan);
  ASSERT_GT(a.step.get("dp comm").v, 0.0);
  EXPECT_EQ(a.step_time.v, b.step_time.v);
  const auto sa = engine::run_native(schedule::build_schedule(one, *one.plan));
  const auto sb = engine::run_native(schedule::build_schedule(many, *many.plan));
  ASSERT_TRUE(sa.ok() && sb.ok());
  EXPECT_EQ(sa->makespan, sb->makespan);
  const Scenario nine = load(text({9}));
  const Scenario split = load(text({3, 6}));
  ASSERT_TRUE(nine.plan && split.plan);
  EXPECT_GT(analytic::estimate(split, *split.plan).step.get("dp comm").v,
            analytic::estimate(nine, *nine.plan).step.get("dp comm").v);
}

TEST(Estimate, SameInputSameBytes) {
  const Scenario s = load(test::minimal());
  const auto a = report::estimate_json(s, *s.plan, analytic::estimate(s, *s.plan));
  const auto b = report::estimate_json(s, *s.plan, analytic::estimate(s, *s.plan));
  EXPECT_EQ(a, b);
  for (const char* key : {"\"step_time_s\"", "\"tokens_per_s\"", "\"mfu\"", "\"tflops_per_device\"",
                          "\"time_to_train_s\"", "\"cost_to_train_usd\"", "\"peak_memory_bytes\"",
                          "\"memory_capacity_bytes\"", "\"fits\"", "\"count\"", "\"device\""})
    EXPECT_NE(a.find(key), std::string::npos) << key;
}

}  // namespace
}  // namespace hetsim

namespace hetsim {
namespace {

// The op breakdown explains the estimate: for every stage of a heterogeneous plan, the ops'
// forward and backward times add up to the stage's per-micro-batch compute, and stages that
// are alike are shown once with their count.
TEST(OpBreakdown, AddsUpToEachStagesComputeAndFoldsAlikeStages) {
  const Scenario s = load(test::slurp(std::filesystem::path(HETSIM_SOURCE_DIR) / "scenarios/mixed-h100-a100.toml"));
  ASSERT_TRUE(s.plan);
  const auto e = analytic::estimate(s, *s.plan);
  const auto ops = analytic::op_breakdown(s, *s.plan);
  ASSERT_FALSE(ops.empty());
  int covered = 0;
  for (const auto& so : ops) covered += so.alike;
  int stages = 0;
  for (const auto& g : s.plan->groups) stages += g.replicas * static_cast<int>(g.stages.size());
  EXPECT_EQ(covered, stages);
  for (const auto& so : ops) {
    bool found = false;
    for (const auto& st : e.stages) {
      if (st.group != so.group || st.stage != so.stage) continue;
      found = true;
      const double want = st.per_micro_batch.get("forward").v + st.per_micro_batch.get("backward").v;
      EXPECT_NEAR(so.compute().v, want, 1e-9 * want) << "group " << so.group << " stage " << so.stage;
    }
    EXPECT_TRUE(found);
    for (const auto& part : so.parts)
      for (const auto& op : part.ops) {
        EXPECT_GT(op.fwd.total.v + op.bwd.total.v, 0) << op.op.name;
        // A layer's big GEMMs are compute-bound on any GPU; its norms are memory-bound.
        if (op.op.name == "mlp_up") {
          EXPECT_FALSE(op.fwd.memory_bound()) << so.pool;
        }
        if (op.op.kind == workload::OpKind::Norm) {
          EXPECT_TRUE(op.fwd.memory_bound()) << so.pool;
        }
      }
  }
}

// Per-op selective checkpointing (torchtitan's policy) re-runs each op's share of its forward:
// the recompute of a layer is Σ op_time(forward) × op_recompute, independently summed here.
// Eager PyTorch's loss holds 12 bytes per logit at its peak, Megatron's fused one 6.
// attention_kernel: auto runs FlashAttention-2 (PyTorch SDPA) with eager kernels and the vendor's
// kernel with fused ones; either can be forced. On an H100 FlashAttention-2 is 0.62 of cuDNN.
TEST(Estimate, AttentionKernelFollowsTheFrameworkUnlessForced) {
  auto attention_fwd = [](const std::string& training) {
    const Scenario s = load("[model]\npreset = \"llama3-8b\"\nlayers = 2\n[training]\nglobal_batch = 8\nseq_len = 4096\n" + training +
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n[parallel]\ntp = 1\npp = 1\ndp = 8\n");
    EXPECT_TRUE(s.plan);
    for (const auto& so : analytic::op_breakdown(s, *s.plan))
      for (const auto& part : so.parts)
        for (const auto& op : part.ops)
          if (op.op.name == "attention") return op.fwd.total.v;
    ADD_FAILURE() << "no attention op";
    return 0.0;
  };
  const double vendor = attention_fwd("");
  ASSERT_GT(vendor, 0);
  const double eager = attention_fwd("fused_kernels = false\n");
  EXPECT_GT(eager, vendor * 1.5);  // compute-bound: about 1/0.62
  EXPECT_NEAR(attention_fwd("attention_kernel = \"fa2\"\n"), eager, 1e-12);
  EXPECT_NEAR(attention_fwd("fused_kernels = false\nattention_kernel = \"vendor\"\n"), vendor, 1e-12);
  EXPECT_NEAR(attention_fwd("attention_kernel = \"auto\"\n"), vendor, 1e-12);
}

// ZeRO-3 copies each layer's gathered weights out of the flat all-gather buffer before its
// forward and again before its backward: 2 bytes read and written per bf16 weight, at the
// streaming bandwidth, one kernel.
TEST(Estimate, ZeroThreeCopiesEachGatheredLayerOut) {
  auto stage = [](int zero, const std::string& training = "") {
    const Scenario s = load("[model]\npreset = \"llama3-8b\"\nlayers = 2\n[training]\nglobal_batch = 8\nseq_len = 4096\n" + training +
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n[parallel]\ntp = 1\npp = 1\ndp = 8\nzero = " +
                            std::to_string(zero) + "\n");
    EXPECT_TRUE(s.plan);
    return std::make_pair(analytic::estimate(s, *s.plan).stages.at(0), s);
  };
  const auto [z1, s1] = stage(1);
  const auto [z3, s3] = stage(3);
  const hw::DeviceSpec& d = s3.cluster.pools[0].device;
  const double per_layer = workload::count_params(s3.model).per_layer;
  const double copy = 2 * per_layer * 2 / (d.memory_bandwidth.v * d.efficiency.memory) + d.efficiency.launch_overhead.v;
  EXPECT_NEAR(z3.per_micro_batch.get("forward").v - z1.per_micro_batch.get("forward").v, 2 * copy, 1e-9);
  EXPECT_NEAR(z3.per_micro_batch.get("backward").v - z1.per_micro_batch.get("backward").v, 2 * copy, 1e-9);
  // FSDP1's flat parameters are views of the gathered buffer: no copy.
  const auto [flat, sf] = stage(3, "zero3_copy_out = false\n");
  EXPECT_NEAR(flat.per_micro_batch.get("forward").v, z1.per_micro_batch.get("forward").v, 1e-12);
}

// A full recompute runs on the weights the backward's gather brought in: the forward and the
// backward copy them out, the recompute does not (two copy-outs per layer and micro-batch).
TEST(Estimate, ZeroThreeFullRecomputeCopiesNothingOfItsOwn) {
  auto layer = [](const std::string& training) {
    const Scenario s = load("[model]\npreset = \"llama3-8b\"\nlayers = 2\n[training]\nglobal_batch = 8\nseq_len = 4096\n" +
                            training + "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n[parallel]\ntp = 1\npp = 1\ndp = 8\n"
                            "recompute = \"full\"\nzero = 3\n");
    EXPECT_TRUE(s.plan);
    return analytic::stage_costs(s, *s.plan).at(0).at(0);
  };
  const auto copied = layer(""), flat = layer("zero3_copy_out = false\n");
  EXPECT_GT(copied.layer_fwd.v, flat.layer_fwd.v);
  EXPECT_NEAR(copied.layer_bwd.v - flat.layer_bwd.v, copied.layer_fwd.v - flat.layer_fwd.v, 1e-15);
  EXPECT_DOUBLE_EQ(copied.layer_recompute.v, flat.layer_recompute.v);
  EXPECT_DOUBLE_EQ(flat.layer_recompute.v, flat.layer_fwd.v);
}

// ZeRO 3 gathers and reduces a layer at a time (one collective per layer and pass, as FSDP and
// Megatron-FSDP do), not in 40 M-parameter buckets; FSDP2 (zero3_copy_out) first packs the 16-bit
// gradients into the reduce-scatter's input in its dtype: (2 + 4) bytes a parameter at the
// non-vectorized rate when it casts to fp32, (2 + 2) at the streaming rate for bf16 reduces.
TEST(Estimate, ZeroThreeSyncsALayerAtATimeAndFsdp2PacksItsGradients) {
  auto stage = [](const std::string& extra) {
    const Scenario s = load("[model]\npreset = \"llama3-8b\"\nlayers = 4\n[training]\nglobal_batch = 16\nseq_len = 4096\n" + extra +
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n[parallel]\ntp = 1\npp = 1\ndp = 16\nzero = 3\n");
    EXPECT_TRUE(s.plan);
    return std::make_pair(analytic::stage_costs(s, *s.plan).at(0).at(0), s);
  };
  const auto [flat, sf] = stage("zero3_copy_out = false\n");
  const auto [fsdp2, s2] = stage("");
  const auto [bf16, sb] = stage("grad_reduce_dtype = \"bf16\"\n");
  const auto [bf16_flat, sbf] = stage("grad_reduce_dtype = \"bf16\"\nzero3_copy_out = false\n");
  const auto pc = workload::count_params(sf.model);
  EXPECT_DOUBLE_EQ(flat.bucket, pc.per_layer);
  EXPECT_DOUBLE_EQ(flat.dp_buckets, 4);  // one collective per layer (the embedding and head ride along)
  const hw::DeviceSpec& d = sf.cluster.pools[0].device;
  const double launches = flat.dp_buckets * d.efficiency.launch_overhead.v;
  EXPECT_NEAR(fsdp2.dp_reduce.v - flat.dp_reduce.v,
              flat.params * 6 / (d.memory_bandwidth.v * d.efficiency.unvectorized_memory) + launches, 1e-12);
  EXPECT_NEAR(bf16.dp_reduce.v - bf16_flat.dp_reduce.v,
              flat.params * 4 / (d.memory_bandwidth.v * d.efficiency.memory) + launches, 1e-12);
  EXPECT_DOUBLE_EQ(fsdp2.dp_gather.v, flat.dp_gather.v);  // the gathers are the same
}

// PyTorch FSDP leaves three buffers whole (docs/cost-models.md#zero-3-buffers): the root unit
// (embedding, output layer, final norm) stays gathered through the backward; a layer's backward
// stages its unsharded bf16 weight gradients and their fp32 reduce-scatter input; the output
// layer's gradient waits for the root's post-backward. On a TPU (JAX/XLA) only the two gathered
// layers count.
TEST(Estimate, ZeroThreeOnGpusHoldsTheRootUnitAndStagesALayersGradients) {
  auto costs = [](int zero, const std::string& device) {
    const Scenario s = load("[model]\npreset = \"llama3-8b\"\nlayers = 2\n[training]\nglobal_batch = 16\nseq_len = 4096\n"
                            "[[cluster.pool]]\ndevice = \"" + device + "\"\nnodes = 2\n[parallel]\ntp = 1\npp = 1\ndp = " +
                            std::to_string(device == "h100-sxm5" ? 16 : 8) + "\nzero = " + std::to_string(zero) + "\n");
    EXPECT_TRUE(s.plan);
    return std::make_pair(analytic::stage_costs(s, *s.plan).at(0).at(0), s);
  };
  const auto [z1, s1] = costs(1, "h100-sxm5");
  const auto [z3, s3] = costs(3, "h100-sxm5");
  const auto pc = workload::count_params(s3.model);
  ASSERT_GT(pc.output, 0);
  // bf16 weights, fp32 gradients.
  EXPECT_DOUBLE_EQ(z1.gathered.v, 0);
  EXPECT_NEAR(z3.gathered.v, 2 * pc.per_layer * 2 + (pc.embedding + pc.output + pc.final_norm) * 2, 1);
  EXPECT_NEAR(z3.backward_working.v - z1.backward_working.v, pc.per_layer * (2 + 4) + (pc.output + pc.final_norm) * 2, 1);
  const auto [t1, st1] = costs(1, "tpu-v5p");
  const auto [t3, st3] = costs(3, "tpu-v5p");
  EXPECT_NEAR(t3.gathered.v, 2 * pc.per_layer * 2, 1);
  EXPECT_NEAR(t3.backward_working.v, t1.backward_working.v, 1);
}

// Without sequence parallelism Megatron-LM (until Megatron-Core) and DeepSpeed's pipeline engine
// send 1/t of the activation from each TP rank and all-gather it on the receiving stage; with
// pipeline_scatter_gather = false every rank sends all of it. With sequence parallelism the
// activation is split already: no gather. The gather is the receiver's TP collective: the
// activation into stage 1 in the forward, its gradient into stage 0 in the backward (v of each
// per micro-batch when interleaved, less the pipeline's ends).
TEST(Estimate, PipelineSendsAreScatteredOverTheTensorParallelRanks) {
  auto costs = [](const std::string& training, const std::string& parallel) {
    const Scenario s = load("[model]\npreset = \"llama3-8b\"\nlayers = 4\n[training]\nglobal_batch = 8\nseq_len = 4096\n" +
                            training + "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n[parallel]\ntp = 8\npp = 2\ndp = 1\n" +
                            parallel);
    EXPECT_TRUE(s.plan);
    return analytic::stage_costs(s, *s.plan).at(0);
  };
  const auto whole = costs("pipeline_scatter_gather = false\n", "sequence_parallel = false\n");
  const auto scattered = costs("", "sequence_parallel = false\n");
  const auto sp = costs("", "");
  ASSERT_GT(whole[0].send_next.v, 0);
  // 1/8 of the message over the NIC ...
  EXPECT_LT(scattered[0].send_next.v, whole[0].send_next.v / 2);
  EXPECT_DOUBLE_EQ(scattered[0].send_next.v, sp[0].send_next.v);
  EXPECT_DOUBLE_EQ(sp[0].send_next.v, costs("pipeline_scatter_gather = false\n", "")[0].send_next.v);
  // ... then an NVLink all-gather of the whole activation by the receiving stage's ranks.
  EXPECT_GT(scattered[0].regather.v, 0);
  EXPECT_EQ(scattered[0].regathers_fwd, 0);
  EXPECT_EQ(scattered[0].regathers_bwd, 1);
  EXPECT_EQ(scattered[1].regathers_fwd, 1);
  EXPECT_EQ(scattered[1].regathers_bwd, 0);
  for (int st = 0; st < 2; ++st) {
    EXPECT_NEAR(scattered[st].tp(2).v - whole[st].tp(2).v, scattered[st].regather.v, 1e-15);
    EXPECT_EQ(whole[st].pipeline_regather().v, 0);
    EXPECT_EQ(sp[st].pipeline_regather().v, 0);
  }
  const auto interleaved = costs("", "sequence_parallel = false\nschedule = \"interleaved\"\nvirtual_stages = 2\n");
  EXPECT_EQ(interleaved[0].regathers_fwd, 1);
  EXPECT_EQ(interleaved[0].regathers_bwd, 2);
  EXPECT_EQ(interleaved[1].regathers_fwd, 2);
  EXPECT_EQ(interleaved[1].regathers_bwd, 1);
}

// Interleaved pipelines: every stage sends v activations a micro-batch to the next stage and v
// gradients back, except that the last stage hands v − 1 of its chunks on to stage 0 (the
// wrap-around) and stage 0 sends v − 1 gradients back to it, priced on that pair's links (w,
// StageCost::send_wrap), as the schedule runs them. 3 stages, v = 2: stage 0 = v·s0 + (v−1)·w,
// stage 1 = v·s1 + v·s0, stage 2 = v·s1 + (v−1)·w (s_i the send between stages i and i + 1);
// without interleaving, no wrap-around. Here every stage fills its own node: w = s0.
TEST(Estimate, InterleavedPipelinesCountTheWrapAroundSends) {
  auto stages = [](const std::string& schedule) {
    const Scenario s = load("[model]\npreset = \"llama3-8b\"\nlayers = 6\n[training]\nglobal_batch = 6\nseq_len = 4096\n"
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 3\n[parallel]\ntp = 8\npp = 3\ndp = 1\n" +
                            schedule);
    EXPECT_TRUE(s.plan);
    return std::make_pair(analytic::stage_costs(s, *s.plan).at(0), analytic::estimate(s, *s.plan).stages);
  };
  const auto [c, e] = stages("schedule = \"interleaved\"\nvirtual_stages = 2\n");
  const double s0 = c[0].send_next.v, s1 = c[1].send_next.v, w = c[2].send_wrap.v;
  ASSERT_GT(s0, 0);
  EXPECT_DOUBLE_EQ(w, s0);
  EXPECT_EQ(c[0].send_wrap.v, 0);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_NEAR(e[0].per_micro_batch.get("pp comm").v, 2 * s0 + 1 * w, 1e-15);
  EXPECT_NEAR(e[1].per_micro_batch.get("pp comm").v, 2 * s1 + 2 * s0, 1e-15);
  EXPECT_NEAR(e[2].per_micro_batch.get("pp comm").v, 2 * s1 + 1 * w, 1e-15);
  const auto [c1, plain] = stages("schedule = \"1f1b\"\n");
  EXPECT_EQ(c1[2].send_wrap.v, 0);
  EXPECT_NEAR(plain[0].per_micro_batch.get("pp comm").v, c1[0].send_next.v, 1e-15);
  EXPECT_NEAR(plain[2].per_micro_batch.get("pp comm").v, c1[1].send_next.v, 1e-15);
}

// The wrap-around has links of its own: 4 stages of tp 1 · 4 replicas on two nodes of 8 (blocks
// of 4 devices: stages 0-1 on node 0, 2-3 on node 1). Stage 0 sends to stage 1 over NVLink, but
// the last stage hands on to stage 0 across the nodes, over the NICs: the estimate and the
// schedule's wrap-around sends price that (before 2026-12-07 both took stage 0's NVLink send).
TEST(Estimate, TheInterleavedWrapAroundCrossesTheNodesItsStagesAreOn) {
  const Scenario s = load("[model]\npreset = \"llama3-8b\"\nlayers = 8\n[training]\nglobal_batch = 16\nseq_len = 4096\n"
                          "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n"
                          "[parallel]\ntp = 1\npp = 4\ndp = 4\nmicro_batch = 1\nschedule = \"interleaved\"\nvirtual_stages = 2\n");
  ASSERT_TRUE(s.plan);
  const auto c = analytic::stage_costs(s, *s.plan).at(0);
  const double s0 = c[0].send_next.v, s1 = c[1].send_next.v, w = c[3].send_wrap.v;
  EXPECT_GT(w, 2 * s0) << "the wrap-around crosses the nodes, stage 0 -> 1 does not";
  EXPECT_GT(s1, 2 * s0);  // stage 1 -> 2 crosses them too
  EXPECT_NEAR(w, s1, s1 * 1e-9);
  const auto e = analytic::estimate(s, *s.plan).stages;
  EXPECT_NEAR(e[0].per_micro_batch.get("pp comm").v, 2 * s0 + 1 * w, 1e-15);
  // The schedule's sends between the last stage and the first take the same time.
  const auto g = schedule::build_schedule(s, *s.plan);
  int wraps = 0;
  for (const auto& t : g.tasks) {
    const bool send = t.kind == schedule::TaskKind::SendActivation || t.kind == schedule::TaskKind::SendGradient;
    if (!send) continue;
    const int stage = g.devices[t.device].stage;
    const bool wrap = (t.kind == schedule::TaskKind::SendActivation && stage == 3) ||
                      (t.kind == schedule::TaskKind::SendGradient && stage == 0);
    if (!wrap) continue;
    ++wraps;
    EXPECT_EQ(t.duration, schedule::to_ns(c[3].send_wrap));
  }
  EXPECT_EQ(wraps, 2 * 4);  // (v − 1) each way per micro-batch, 4 micro-batches a replica

  // At pp 2 the wrap-around is the pair (1, 0) itself: the estimate's send_wrap and the
  // schedule's send (stage 0's send_next) are one price, even over two pools of other fabrics.
  const Scenario two = load("[model]\npreset = \"llama3-8b\"\nlayers = 8\n[training]\nglobal_batch = 8\nseq_len = 4096\n"
                            "[[cluster.pool]]\nname = \"h\"\ndevice = \"h100-sxm5\"\nnodes = 1\n"
                            "[[cluster.pool]]\nname = \"a\"\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n"
                            "[parallel]\nmicro_batch = 1\nschedule = \"interleaved\"\nvirtual_stages = 2\n"
                            "[[parallel.replicas]]\ncount = 1\nmicro_batches = 8\n"
                            "stages = [{pool = \"h\", tp = 8, layers = 4}, {pool = \"a\", tp = 8, layers = 4}]\n");
  ASSERT_TRUE(two.plan);
  const auto c2 = analytic::stage_costs(two, *two.plan).at(0);
  EXPECT_GT(c2[0].send_next.v, 0);
  EXPECT_EQ(c2[1].send_wrap.v, c2[0].send_next.v);
}

// Expert parallelism (issue 15): each rank holds experts/ep of a MoE layer's routed experts —
// their weights, gradients and unsharded state shrink by ep — and runs ep× the tokens per expert
// in experts/ep GEMMs (the same FLOPs); each MoE layer adds a dispatch and a combine all-to-all
// each way of the rank's routed tokens over the ep ranks. On a fabric of 100 GB/s with no
// latency, one all-to-all is, in closed form, (tokens/tp · top_k · h · 2 bytes) · (ep − 1)/ep / 100 GB/s.
TEST(Estimate, ExpertParallelismSplitsTheExpertsAndAddsAllToAlls) {
  auto costs = [](int ep, int zero) {
    const Scenario s = load(
        "[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\n[training]\nglobal_batch = 16\nseq_len = 4096\n"
        "[[cluster.link]]\nname = \"fab\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\nlatency = \"0us\"\nefficiency = 1.0\n"
        "[[cluster.pool]]\nnodes = 1\n[cluster.pool.device]\nname = \"g\"\npeak = { bf16 = \"1000TFLOPS\" }\n"
        "memory = \"192GiB\"\nmemory_bandwidth = \"4TB/s\"\nnode = { devices = 8, fabric = \"fab\", nics = 8, nic = \"fab\" }\n"
        "[parallel]\ntp = 2\npp = 1\ndp = 4\nzero = " + std::to_string(zero) + "\nep = " + std::to_string(ep) + "\n");
    EXPECT_TRUE(s.plan);
    return std::make_pair(s, analytic::stage_costs(s, *s.plan).at(0).at(0));
  };
  const auto [s1, one] = costs(1, 0);
  const auto [s4, four] = costs(4, 0);
  const auto pc = workload::count_params(s1.model);
  EXPECT_DOUBLE_EQ(one.expert_params, pc.per_layer_experts / 2 * 4);
  EXPECT_DOUBLE_EQ(four.expert_params, pc.per_layer_experts / 4 / 2 * 4);
  EXPECT_NEAR(one.params_layer - four.params_layer, pc.per_layer_experts / 2 * 0.75, 1.0);
  EXPECT_EQ(one.layer_ep_fwd.v, 0);
  const double a2a = 4096.0 / 2 * 2 * 4096 * 2 * 0.75 / 100e9;
  EXPECT_NEAR(four.layer_ep_fwd.v, 2 * a2a, 1e-12);
  EXPECT_NEAR(four.layer_ep_bwd.v, 2 * a2a, 1e-12);
  EXPECT_EQ(four.layer_ep_recompute.v, 0);  // no recompute
  // The experts' FLOPs are the same, in fewer, taller GEMMs: no slower.
  EXPECT_LE(four.layer_fwd.v, one.layer_fwd.v * (1 + 1e-9));
  // Memory: weights and gradients of the experts / 4; under ZeRO 1 their optimizer shards span
  // dp/ep = 1 rank, so the sharded state is the same per device.
  const auto m1 = analytic::estimate(s1, *s1.plan), m4 = analytic::estimate(s4, *s4.plan);
  EXPECT_LT(m4.device_types[0].peak_memory.v, m1.device_types[0].peak_memory.v);
  EXPECT_GT(m4.step.get("ep comm").v, 0);
  EXPECT_EQ(m1.step.get("ep comm").v, 0);
  const auto [z1, zero_one] = costs(4, 1);
  const auto [z1e1, zero_one_ep1] = costs(1, 1);
  cost::DeviceMemoryInput in4 = zero_one.memory, in1 = zero_one_ep1.memory;
  const double per_param_opt = in4.state.optimizer;
  EXPECT_NEAR(cost::device_memory(in4).get("optimizer").v,
              ((in4.params - in4.expert_params) / 4 + in4.expert_params / 1) * per_param_opt, 1.0);
  EXPECT_NEAR(cost::device_memory(in1).get("optimizer").v, in1.params / 4 * per_param_opt, 1.0);
}

// Selective recompute's modules (Megatron-Core's --recompute-modules) re-run the forward of
// their ops before the backward, and the collectives a recomputed block issues: moe_act the
// experts' activation alone; moe the whole block, its dispatch and combine and its TP gathers;
// a dense model's mlp the MLP and its gather and reduce-scatter (half the layer's forward TP
// collectives, both blocks' being alike). Full recompute still re-runs it all.
TEST(Estimate, RecomputeModulesReRunTheirOpsAndCollectives) {
  const auto stage = [](const std::string& model, const std::string& recompute) {
    const Scenario s = load("[model]\n" + model + "[training]\nglobal_batch = 16\nseq_len = 4096\n"
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n"
                            "[parallel]\ntp = 2\npp = 1\ndp = 4\nsequence_parallel = true\n" + recompute);
    EXPECT_TRUE(s.plan);
    return std::make_pair(s, analytic::stage_costs(s, *s.plan).at(0).at(0));
  };
  const std::string moe = "preset = \"mixtral-8x7b\"\nlayers = 4\n";
  const auto fwd_of = [](const Scenario& s, const analytic::StageCost& c, const std::set<std::string>& names) {
    double t = 0;
    for (const auto& op : *c.layer_ops)
      if (names.count(op.name)) t += cost::op_time(s.cluster.pools[0].device, s.training.precision, op, cost::Pass::Forward).v;
    return t;
  };
  const auto [sa, act] = stage(moe, "ep = 4\nrecompute = \"selective\"\nrecompute_modules = [\"moe_act\"]\n");
  EXPECT_NEAR(act.layer_recompute.v, fwd_of(sa, act, {"expert_swiglu"}), 1e-12);
  EXPECT_EQ(act.layer_ep_recompute.v, 0);
  EXPECT_EQ(act.layer_tp_recompute.v, 0);
  const auto [sm, whole] = stage(moe, "ep = 4\nrecompute = \"selective\"\nrecompute_modules = [\"moe\"]\n");
  EXPECT_NEAR(whole.layer_recompute.v,
              fwd_of(sm, whole, {"router", "moe_permute", "expert_up", "expert_swiglu", "expert_down", "moe_unpermute"}), 1e-12);
  EXPECT_GT(whole.layer_ep_recompute.v, 0);
  EXPECT_DOUBLE_EQ(whole.layer_ep_recompute.v, whole.layer_ep_fwd.v);
  EXPECT_GT(whole.layer_tp_recompute.v, 0);
  const auto [sf, full] = stage(moe, "ep = 4\nrecompute = \"full\"\n");
  EXPECT_DOUBLE_EQ(full.layer_ep_recompute.v, whole.layer_ep_recompute.v);
  // shared_experts: the shared experts re-run, with their TP gather and reduce-scatter (the MoE
  // block's collectives when it has shared experts, a dense MLP's over the tp ranks), not the
  // dispatch; with moe as well, the block's collectives re-run once.
  const std::string with_shared = moe + "shared_experts = 1\n";
  const auto [ss, shared] = stage(with_shared, "ep = 4\nrecompute = \"selective\"\nrecompute_modules = [\"shared_experts\"]\n");
  EXPECT_NEAR(shared.layer_recompute.v, fwd_of(ss, shared, {"shared_up", "shared_swiglu", "shared_down"}), 1e-12);
  EXPECT_EQ(shared.layer_ep_recompute.v, 0);
  EXPECT_NEAR(shared.layer_tp_recompute.v, shared.layer_tp_fwd.v / 2, 1e-12);
  const auto [sb, both] =
      stage(with_shared, "ep = 4\nrecompute = \"selective\"\nrecompute_modules = [\"shared_experts\", \"moe\"]\n");
  EXPECT_DOUBLE_EQ(both.layer_tp_recompute.v, shared.layer_tp_recompute.v);
  EXPECT_GT(both.layer_ep_recompute.v, 0);
  const std::string dense = "preset = \"llama3-8b\"\nlayers = 4\n";
  const auto [sd, mlp] = stage(dense, "recompute = \"selective\"\nrecompute_modules = [\"mlp\"]\n");
  EXPECT_NEAR(mlp.layer_recompute.v, fwd_of(sd, mlp, {"mlp_norm", "mlp_up", "swiglu", "mlp_down"}), 1e-12);
  EXPECT_NEAR(mlp.layer_tp_recompute.v, mlp.layer_tp_fwd.v / 2, 1e-12);
  // The default module list is the attention core: today's selective to the bit.
  const auto [s0, core] = stage(dense, "recompute = \"selective\"\n");
  const auto [s1, listed] = stage(dense, "recompute = \"selective\"\nrecompute_modules = [\"core_attn\"]\n");
  EXPECT_DOUBLE_EQ(core.layer_recompute.v, listed.layer_recompute.v);
  EXPECT_DOUBLE_EQ(core.act_per_layer.v, listed.act_per_layer.v);
  EXPECT_EQ(core.layer_tp_recompute.v, 0);
}

// A recompute of tiny kernels is issued by the host with the backward's: where the host issues
// both more slowly than an H100 runs them, the recompute takes what the host needs beyond the
// backward, kernels · host_overhead − backward (a 128-wide layer of 64 tokens: microsecond
// kernels against 9 µs of host each).
TEST(Estimate, AHostBoundRecomputeTakesTheHostsPace) {
  const Scenario s = load("[model]\nname = \"m\"\nlayers = 2\nhidden = 128\nheads = 2\nkv_heads = 2\nffn_hidden = 512\n"
                          "vocab = 256\n[training]\nglobal_batch = 8\nseq_len = 64\n"
                          "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n"
                          "[parallel]\ntp = 1\npp = 1\ndp = 8\nmicro_batch = 1\nrecompute = \"selective\"\n"
                          "recompute_modules = [\"core_attn\", \"mlp\"]\n");
  ASSERT_TRUE(s.plan);
  const auto c = analytic::stage_costs(s, *s.plan).at(0).at(0);
  const auto& dev = s.cluster.pools[0].device;
  double ops = 0, kernels = 0;
  for (const auto& op : *c.layer_ops)
    if (cost::recompute_share(op, s.plan->recompute, s.plan->recompute_modules) > 0) {
      ops += cost::op_time(dev, s.training.precision, op, cost::Pass::Forward).v;
      kernels += op.fwd_kernels;
    }
  const double host = dev.efficiency.host_overhead.v * (kernels + cost::kernels(*c.layer_ops, cost::Pass::Backward)) -
                      c.layer_bwd.v;
  ASSERT_GT(host, ops);  // the case binds
  EXPECT_NEAR(c.layer_recompute.v, host, 1e-15);
}

// [memory] expert_gradient_bytes and optimizer_bytes (NeMo Automodel: bf16 expert gradients,
// bf16 Adam moments on a bf16 model) reach each stage's memory and the checkpoint, no time: the
// routed experts' gradients at 2 B beside the rest at 4, the optimizer state at 4 B per
// parameter (its ZeRO 1 shards as before), a checkpoint of 2 + 4 B per parameter (14 without).
TEST(Estimate, ExpertGradientAndOptimizerWidthsReachTheMemoryAndTheCheckpoint) {
  const std::string base =
      "[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\n[training]\nglobal_batch = 16\nseq_len = 4096\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n[parallel]\ntp = 2\npp = 1\ndp = 4\nzero = 1\nep = 4\n";
  const Scenario plain = load(base);
  const Scenario lean = load(base + "[memory]\nexpert_gradient_bytes = 2\noptimizer_bytes = 4\n");
  ASSERT_TRUE(plain.plan && lean.plan);
  const auto c = analytic::stage_costs(lean, *lean.plan).at(0).at(0);
  const auto mem = cost::device_memory(c.memory);
  const double experts = c.expert_params, dense = c.params - c.expert_params;
  EXPECT_NEAR(mem.get("gradients").v, dense * 4 + experts * 2, 1.0);
  EXPECT_NEAR(mem.get("optimizer").v, (dense / 4 + experts / 1) * 4, 1.0);
  const auto a = analytic::estimate(plain, *plain.plan), b = analytic::estimate(lean, *lean.plan);
  EXPECT_LT(b.device_types[0].peak_memory.v, a.device_types[0].peak_memory.v);
  EXPECT_DOUBLE_EQ(b.step_time.v, a.step_time.v);
  EXPECT_NEAR(b.checkpoint.v / a.checkpoint.v, 6.0 / 14.0, 1e-12);
}

// Routing imbalance (issue 15, docs/cost-models.md#routing-imbalance). Uniform routing, given
// as a flat histogram or a Zipf skew of 0, is today's cost to the bit. A measured histogram of
// 30, 10 ×7 tokens over Mixtral's 8 experts at ep 4 puts loads 2.4 and 0.8 (units of the mean)
// on rank 0, whose dropless rows are (2.4 + 0.8)/2 = 1.6× the balanced ones: each all-to-all
// moves 1.6× (closed form on the ideal fabric: 1.6 · tokens/tp · top_k · h · 2 B · 3/4 / 100 GB/s),
// the expert GEMMs run 1.6× the rows, and the step (one stage, m = 4 micro-batches of 4 layers,
// nothing overlapped with the layers) grows by m · layers · the change of one layer's forward,
// backward, TP and EP time. A Zipf skew of 1 puts 1 and 1/2 of H8 = 2.7179 on rank 0:
// 8·(1 + 1/2)/(2·H8) = 2.2076×.
TEST(Estimate, RoutingImbalanceMovesTheStepAsTheMostLoadedRankPredicts) {
  auto run = [](const std::string& routing) {
    const Scenario s = load(
        "[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\n" + routing +
        "[training]\nglobal_batch = 16\nseq_len = 4096\n"
        "[[cluster.link]]\nname = \"fab\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\nlatency = \"0us\"\nefficiency = 1.0\n"
        "[[cluster.pool]]\nnodes = 1\n[cluster.pool.device]\nname = \"g\"\npeak = { bf16 = \"1000TFLOPS\" }\n"
        "memory = \"192GiB\"\nmemory_bandwidth = \"4TB/s\"\nnode = { devices = 8, fabric = \"fab\", nics = 8, nic = \"fab\" }\n"
        "[parallel]\ntp = 2\npp = 1\ndp = 4\nep = 4\nmicro_batch = 1\n");
    EXPECT_TRUE(s.plan);
    return std::make_tuple(s.model, analytic::stage_costs(s, *s.plan).at(0).at(0), analytic::estimate(s, *s.plan));
  };
  const auto [mu, cu, eu] = run("");
  for (const char* flat : {"routing_histogram = [5, 5, 5, 5, 5, 5, 5, 5]\n", "routing_skew = 0\n"}) {
    const auto [mf, cf, ef] = run(flat);
    EXPECT_EQ(mf.expert_load.size(), 8u) << flat;
    EXPECT_EQ(ef.step_time.v, eu.step_time.v) << flat;
    EXPECT_EQ(cf.layer_fwd.v, cu.layer_fwd.v) << flat;
    EXPECT_EQ(cf.layer_ep_fwd.v, cu.layer_ep_fwd.v) << flat;
    EXPECT_EQ(cf.act_per_layer.v, cu.act_per_layer.v) << flat;
    EXPECT_EQ(ef.device_types[0].peak_memory.v, eu.device_types[0].peak_memory.v) << flat;
  }
  const auto [ms, cs, es] = run("routing_histogram = [30, 10, 10, 10, 10, 10, 10, 10]\n");
  const double a2a = 4096.0 / 2 * 2 * 4096 * 2 * 0.75 / 100e9;
  EXPECT_NEAR(cu.layer_ep_fwd.v, 2 * a2a, 1e-12);
  EXPECT_NEAR(cs.layer_ep_fwd.v, 1.6 * 2 * a2a, 1e-12);
  EXPECT_NEAR(cs.layer_ep_bwd.v, 1.6 * 2 * a2a, 1e-12);
  EXPECT_GT(cs.layer_fwd.v, cu.layer_fwd.v);
  auto layer = [](const analytic::StageCost& c) {
    return (c.layer_fwd + c.layer_bwd + c.layer_tp_fwd + c.layer_tp_bwd + c.layer_ep_fwd + c.layer_ep_bwd).v;
  };
  const double m = 4, layers = 4;
  EXPECT_NEAR(es.step_time.v - eu.step_time.v, m * layers * (layer(cs) - layer(cu)), 1e-9);
  EXPECT_GT(es.device_types[0].peak_memory.v, eu.device_types[0].peak_memory.v);  // 1.6× the expert rows
  // The model FLOPs (every token's top_k experts) do not move: MFU falls with the step.
  EXPECT_DOUBLE_EQ(es.model_flops_per_step.v, eu.model_flops_per_step.v);

  const auto [mz, cz, ez] = run("routing_skew = 1\n");
  const double h8 = 1 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6 + 1.0 / 7 + 1.0 / 8;
  EXPECT_NEAR(cz.layer_ep_fwd.v, 8 * 1.5 / (2 * h8) * 2 * a2a, 1e-12);
  // Dropping at capacity 1.25: every buffer is padded to the capacity, skew or not.
  const auto [md, cd, ed] = run("capacity_factor = 1.25\nrouting_skew = 1\n");
  EXPECT_FALSE(md.dropless);
  EXPECT_NEAR(cd.layer_ep_fwd.v, 1.25 * 2 * a2a, 1e-12);
  // The report says what the router drops: shares 1/H8 and 1/(2·H8) lie above the capacity
  // 1.25/8, the rest below; JSON and text alike.
  {
    const Scenario s = load(
        "[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\ncapacity_factor = 1.25\nrouting_skew = 1\n"
        "[training]\nglobal_batch = 16\nseq_len = 4096\n[[cluster.pool]]\ndevice = \"mi300x\"\nnodes = 1\n"
        "[parallel]\ntp = 2\npp = 1\ndp = 4\nep = 4\nmicro_batch = 1\n");
    ASSERT_TRUE(s.plan);
    const auto e = analytic::estimate(s, *s.plan);
    const double dropped = (1 / h8 - 1.25 / 8) + (1 / (2 * h8) - 1.25 / 8);
    const auto j = nlohmann::json::parse(report::estimate_json(s, *s.plan, e));
    EXPECT_NEAR(j.at("moe_routing").at("dropped_token_fraction").get<double>(), dropped, 1e-12);
    EXPECT_EQ(j.at("moe_routing").at("dropless").get<bool>(), false);
    EXPECT_DOUBLE_EQ(j.at("moe_routing").at("busiest_rank_load").get<double>(), 1.25);
    EXPECT_NE(report::estimate_text(s, *s.plan, e).find(fmt::format("drops {:.2f} % of the routed tokens", 100 * dropped)),
              std::string::npos);
    // A dense model has no routing key.
    const Scenario d = load("[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 8\nseq_len = 128\n"
                            "[[cluster.pool]]\ndevice = \"mi300x\"\nnodes = 1\n[parallel]\ntp = 1\npp = 1\ndp = 8\n");
    ASSERT_TRUE(d.plan);
    EXPECT_FALSE(nlohmann::json::parse(report::estimate_json(d, *d.plan, analytic::estimate(d, *d.plan))).contains("moe_routing"));
  }
}

// overlap_ep_comm (issue 15): one micro-batch's forward of a layer merged with another's
// backward, in four slots (DeepSeek-V3 Fig. 4): forward attention ‖ backward combine gradient,
// backward MLP ‖ forward dispatch, forward MLP ‖ backward dispatch gradient, backward attention
// ‖ forward combine. A slot exposes what its exchange exceeds its compute by, plus
// overlap_slowdown of the overlapped time; the warm-up forward and cool-down backward of 1F1B
// (1 of 4 micro-batches at pp 1) have no partner and stay exposed; each pass keeps its share. A
// slow fabric makes every exchange outgrow its compute, a fast one lets them hide; one
// micro-batch per replica has nothing to overlap with.
TEST(Estimate, OverlappedAllToAllsCostWhatTheComputeDoesNotHide) {
  auto scenario = [](const std::string& fabric, const std::string& parallel) {
    Scenario s = load(
        "[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\n[training]\nglobal_batch = 16\nseq_len = 4096\n"
        "[[cluster.link]]\nname = \"fab\"\nkind = \"scale-up\"\nbandwidth = \"" + fabric +
        "\"\nlatency = \"0us\"\nefficiency = 1.0\n"
        "[[cluster.pool]]\nnodes = 1\n[cluster.pool.device]\nname = \"g\"\npeak = { bf16 = \"1000TFLOPS\" }\n"
        "memory = \"192GiB\"\nmemory_bandwidth = \"4TB/s\"\nefficiency = { overlap_slowdown = 0.2 }\n"
        "node = { devices = 8, fabric = \"fab\", nics = 8, nic = \"fab\" }\n"
        "[parallel]\ntp = 2\npp = 1\ndp = 4\nep = 4\n" + parallel);
    EXPECT_TRUE(s.plan);
    return s;
  };
  auto run = [&](const std::string& fabric, const std::string& parallel) {
    const Scenario s = scenario(fabric, parallel);
    return std::make_pair(analytic::stage_costs(s, *s.plan).at(0).at(0), analytic::estimate(s, *s.plan));
  };
  for (const char* fabric : {"5GB/s", "400GB/s"}) {
    const auto [c0, e0] = run(fabric, "micro_batch = 1\n");
    const auto [c1, e1] = run(fabric, "micro_batch = 1\noverlap_ep_comm = true\n");
    // The attention block's share of each pass: the ops before mlp_norm (op_breakdown's times).
    const Scenario s0 = scenario(fabric, "micro_batch = 1\n");
    const auto parts = analytic::op_breakdown(s0, *s0.plan).at(0).parts;
    const auto layer = std::find_if(parts.begin(), parts.end(), [](const auto& p) { return p.part == "layer"; });
    ASSERT_NE(layer, parts.end());
    double af = 0, ab = 0, sf = 0, sb = 0;
    bool attention = true;
    for (const auto& o : layer->ops) {
      attention = attention && o.op.name != "mlp_norm";
      sf += o.fwd.total.v;
      sb += o.bwd.total.v;
      if (attention) {
        af += o.fwd.total.v;
        ab += o.bwd.total.v;
      }
    }
    ASSERT_GT(af, 0);
    ASSERT_LT(af, sf);
    const double f_attn = c0.layer_fwd.v * af / sf, f_mlp = c0.layer_fwd.v - f_attn;
    const double b_attn = c0.layer_bwd.v * ab / sb, b_mlp = c0.layer_bwd.v - b_attn;
    const double x = c0.layer_ep_fwd.v / 2;  // one all-to-all (bf16 both ways)
    ASSERT_GT(x, 0);
    double exposed = 0;
    for (const double compute : {f_attn, b_mlp, f_mlp, b_attn}) exposed += std::max(0.0, x - compute) + 0.2 * std::min(x, compute);
    const double a2a = 4 * x, unpaired = 1.0 / 4;  // 16 sequences over dp 4: 4 micro-batches
    const double kept = unpaired * a2a + (1 - unpaired) * exposed;
    EXPECT_NEAR((c1.layer_ep_fwd + c1.layer_ep_bwd).v, kept, 1e-12 * a2a) << fabric;
    EXPECT_NEAR(c1.layer_ep_fwd.v, c1.layer_ep_bwd.v, 1e-15) << fabric;  // two all-to-alls each way
    EXPECT_EQ(c1.layer_fwd.v, c0.layer_fwd.v) << fabric;
    EXPECT_LT(e1.step_time.v, e0.step_time.v) << fabric;
    // The estimate's step moves by the micro-batches × layers × the change of one layer.
    EXPECT_NEAR(e0.step_time.v - e1.step_time.v, 4 * 4 * (a2a - kept), 1e-9) << fabric;
    // Both branches of every slot's max are tested.
    if (std::string(fabric) == "5GB/s") EXPECT_GT(x, std::max({f_attn, b_mlp, f_mlp, b_attn}));
    else EXPECT_LT(x, std::min({f_attn, b_mlp, f_mlp, b_attn}));
    // One micro-batch per replica (global batch 4 over dp 4): nothing to overlap with.
    const auto [c2, e2] = run(fabric, "micro_batch = 4\noverlap_ep_comm = true\n");
    const auto [c3, e3] = run(fabric, "micro_batch = 4\n");
    EXPECT_EQ(c2.layer_ep_fwd.v, c3.layer_ep_fwd.v) << fabric;
    EXPECT_EQ(e2.step_time.v, e3.step_time.v) << fabric;
  }
  // GPipe runs every forward before any backward: no pairs, nothing hidden.
  const auto [g0, ge0] = run("400GB/s", "micro_batch = 1\nschedule = \"gpipe\"\n");
  const auto [g1, ge1] = run("400GB/s", "micro_batch = 1\nschedule = \"gpipe\"\noverlap_ep_comm = true\n");
  EXPECT_EQ(g0.layer_ep_fwd.v, g1.layer_ep_fwd.v);
  EXPECT_EQ(ge0.step_time.v, ge1.step_time.v);
}

// fp8 training with sequence parallelism, sp_gather = "module": Transformer Engine all-gathers
// the dense blocks' inputs and output gradients after the fp8 cast, one byte per element, and
// gathers the column GEMMs' inputs again for their weight gradients; the reduce-scatters keep the
// 16-bit activation, and a MoE block's gathers (the token dispatcher's) stay 16-bit too.
// "framework" (Intel Gaudi's Megatron-DeepSpeed, its default there): the framework gathers the
// 16-bit input and the GEMM keeps it, so the backward has one gather per block fewer. Without
// sequence parallelism the all-reduces do not change.
// Overlaps off, so every collective is exposed whole: per layer and block, forward an all-gather
// and a reduce-scatter; backward two all-gathers (module) or one (framework) and a reduce-scatter.
TEST(Estimate, Fp8TrainingGathersItsSequenceParallelInputsInFp8WhereTransformerEngineGathers) {
  auto scenario = [](const std::string& model, const std::string& device, const std::string& training,
                     bool sp) {
    Scenario s = load("[model]\n" + model + "layers = 2\n[training]\nglobal_batch = 8\nseq_len = 4096\n"
                      "precision = \"fp8\"\n" + training + "[[cluster.pool]]\ndevice = \"" + device +
                      "\"\nnodes = 1\n[parallel]\ntp = 4\npp = 1\ndp = 2\nmicro_batch = 1\n"
                      "overlap_tp_comm = false\noverlap_tp_backward = false\nsequence_parallel = " +
                      (sp ? "true" : "false") + "\n");
    EXPECT_TRUE(s.plan);
    return s;
  };
  auto costs = [](const Scenario& s) { return analytic::stage_costs(s, *s.plan).at(0).at(0); };
  for (const char* device : {"h100-sxm5", "gaudi2"}) {
    const std::string dense = "preset = \"llama3-8b\"\n";
    const Scenario s = scenario(dense, device, "sp_gather = \"module\"\n", true);
    cost::CommGroup g;
    g.ranks = g.ranks_per_node = 4;
    g.intra = cost::fabric_link(s.cluster.pools[0].fabric);
    const double sbh = 4096.0 * s.model.hidden;
    auto t = [&](cost::Collective c, double bytes) { return cost::collective_time(c, Bytes{bytes}, g).time.total().v; };
    const double ag8 = t(cost::Collective::AllGather, sbh), ag16 = t(cost::Collective::AllGather, 2 * sbh);
    const double rs16 = t(cost::Collective::ReduceScatter, 2 * sbh);
    const auto fp8 = costs(s);
    const auto bf16 = costs(scenario(dense, device, "sp_gather = \"framework\"\n", true));
    const auto dflt = costs(scenario(dense, device, "", true));
    EXPECT_NEAR(fp8.layer_tp_fwd.v, 2 * (ag8 + rs16), 1e-12) << device;
    EXPECT_NEAR(fp8.layer_tp_bwd.v, 2 * (2 * ag8 + rs16), 1e-12) << device;
    EXPECT_NEAR(bf16.layer_tp_fwd.v, 2 * (ag16 + rs16), 1e-12) << device;
    EXPECT_NEAR(bf16.layer_tp_bwd.v, 2 * (ag16 + rs16), 1e-12) << device;  // kept, not gathered again
    EXPECT_EQ(dflt.layer_tp_fwd.v, (std::string(device) == "gaudi2" ? bf16 : fp8).layer_tp_fwd.v) << device;
    EXPECT_EQ(fp8.layer_fwd.v, bf16.layer_fwd.v) << device;  // compute is untouched
    // Without sequence parallelism: all-reduces of the 16-bit activation, whoever would gather.
    const auto ar_fp8 = costs(scenario(dense, device, "sp_gather = \"module\"\n", false));
    const auto ar_bf16 = costs(scenario(dense, device, "sp_gather = \"framework\"\n", false));
    EXPECT_NEAR(ar_fp8.layer_tp_fwd.v, 2 * t(cost::Collective::AllReduce, 2 * sbh), 1e-12) << device;
    EXPECT_EQ(ar_fp8.layer_tp_fwd.v, ar_bf16.layer_tp_fwd.v) << device;
  }
  // A MoE layer: the attention block gathers in fp8, the MoE block in 16 bits.
  const Scenario moe = scenario("preset = \"mixtral-8x7b\"\n", "h100-sxm5", "sp_gather = \"module\"\n", true);
  cost::CommGroup g;
  g.ranks = g.ranks_per_node = 4;
  g.intra = cost::fabric_link(moe.cluster.pools[0].fabric);
  const double sbh = 4096.0 * moe.model.hidden;
  auto t = [&](cost::Collective c, double bytes) { return cost::collective_time(c, Bytes{bytes}, g).time.total().v; };
  EXPECT_NEAR(costs(moe).layer_tp_fwd.v,
              t(cost::Collective::AllGather, sbh) + t(cost::Collective::AllGather, 2 * sbh) + 2 * t(cost::Collective::ReduceScatter, 2 * sbh),
              1e-12);
}

// Multi-head latent attention under tensor parallelism: the attention block's column-parallel
// GEMMs are the up projections, so its column-side collectives carry the compressed latents
// (q_lora_rank + kv_lora_rank, plus the shared RoPE key under sequence parallelism, which the
// backward's re-gather of the GEMM inputs leaves out), not the hidden state; the row side (O's
// output) and the MLP keep the hidden width. Overlaps off: every collective exposed whole. Per
// layer, sequence parallel: forward gather(latent + rope) + scatter(h) + gather(h) + scatter(h);
// backward gather(h) + gather(latent) + scatter(latent + rope) for the attention,
// gather(h) × 2 + scatter(h) for the MLP. Without: all-reduce(h) forward, all-reduce(latent)
// backward for the attention.
TEST(Estimate, LatentAttentionGathersItsLatentsNotTheHiddenState) {
  auto scenario = [](bool sp, const std::string& q_lora) {
    Scenario s = load("[model]\nlayers = 2\nhidden = 2048\nheads = 16\nhead_dim = 192\nkv_lora_rank = 512\n" + q_lora +
                      "qk_rope_dim = 64\nv_head_dim = 128\nffn_hidden = 8192\nvocab = 32000\n"
                      "[training]\nglobal_batch = 8\nseq_len = 4096\n"
                      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n[parallel]\ntp = 4\npp = 1\ndp = 2\n"
                      "micro_batch = 1\noverlap_tp_comm = false\noverlap_tp_backward = false\nsequence_parallel = " +
                      (sp ? "true" : "false") + "\n");
    EXPECT_TRUE(s.plan);
    return s;
  };
  for (const char* q_lora : {"q_lora_rank = 1536\n", ""}) {
    const double q_in = std::string(q_lora).empty() ? 2048 : 1536;  // queries without a bottleneck: from h
    const Scenario s = scenario(true, q_lora);
    cost::CommGroup g;
    g.ranks = g.ranks_per_node = 4;
    g.intra = cost::fabric_link(s.cluster.pools[0].fabric);
    const double tokens = 4096, h = 2048;
    auto t = [&](cost::Collective c, double elems) { return cost::collective_time(c, Bytes{2 * elems}, g).time.total().v; };
    using C = cost::Collective;
    const double latent_sp = tokens * (q_in + 512 + 64), latent = tokens * (q_in + 512), hid = tokens * h;
    const auto c = analytic::stage_costs(s, *s.plan).at(0).at(0);
    EXPECT_NEAR(c.layer_tp_fwd.v, t(C::AllGather, latent_sp) + t(C::ReduceScatter, hid) + t(C::AllGather, hid) +
                                      t(C::ReduceScatter, hid), 1e-12) << q_lora;
    // The backward's re-gather is of the up projections' inputs alone: no RoPE key.
    EXPECT_NEAR(c.layer_tp_bwd.v, t(C::AllGather, hid) + t(C::AllGather, latent) + t(C::ReduceScatter, latent_sp) +
                                      2 * t(C::AllGather, hid) + t(C::ReduceScatter, hid), 1e-12) << q_lora;
    // The calls the schedule and the replay carry say the same bytes.
    ASSERT_FALSE(c.layer_tp_fwd_calls.empty());
    EXPECT_DOUBLE_EQ(c.layer_tp_fwd_calls[0].bytes, 2 * latent_sp) << q_lora;
    const auto n = analytic::stage_costs(scenario(false, q_lora), *scenario(false, q_lora).plan).at(0).at(0);
    EXPECT_NEAR(n.layer_tp_fwd.v, 2 * t(C::AllReduce, hid), 1e-12) << q_lora;
    EXPECT_NEAR(n.layer_tp_bwd.v, t(C::AllReduce, latent) + t(C::AllReduce, hid), 1e-12) << q_lora;
  }
}

// Megatron-Core's gradient buckets (docs/cost-models.md#data-parallel-sync): ZeRO ≤ 1 with
// overlap_grad_reduce cuts each stage-0 sync into buckets of max(40 M, 1 M · dp) parameters; one
// bucket without the overlap and on later pipeline stages; ZeRO 2 keeps buckets of 40 M.
TEST(Estimate, GradientBucketsFollowMegatronCore) {
  auto costs = [](const std::string& parallel) {
    const Scenario s = load("[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 128\nseq_len = 1024\n"
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 16\n[parallel]\n" + parallel);
    EXPECT_TRUE(s.plan);
    return analytic::stage_costs(s, *s.plan).at(0);
  };
  const auto dp64 = costs("tp = 2\npp = 1\ndp = 64\nzero = 1\noverlap_grad_reduce = true\n");
  EXPECT_DOUBLE_EQ(dp64[0].bucket, 64e6);
  EXPECT_DOUBLE_EQ(dp64[0].dp_buckets, std::ceil(dp64[0].params / 64e6));
  const auto dp16 = costs("tp = 2\npp = 4\ndp = 16\nzero = 1\noverlap_grad_reduce = true\n");
  EXPECT_DOUBLE_EQ(dp16[0].bucket, 40e6);  // 1 M × 16 is less than 40 M
  EXPECT_DOUBLE_EQ(dp16[0].dp_buckets, std::ceil(dp16[0].params / 40e6));
  for (std::size_t si = 1; si < dp16.size(); ++si) EXPECT_DOUBLE_EQ(dp16[si].dp_buckets, 1.0) << si;
  const auto off = costs("tp = 2\npp = 1\ndp = 64\nzero = 1\noverlap_grad_reduce = false\n");
  EXPECT_DOUBLE_EQ(off[0].dp_buckets, 1.0);
  EXPECT_LT(off[0].dp_reduce.v, dp64[0].dp_reduce.v);  // one call's latency instead of many
  const auto z2 = costs("tp = 2\npp = 1\ndp = 64\nzero = 2\noverlap_grad_reduce = true\n");
  EXPECT_DOUBLE_EQ(z2[0].dp_buckets, std::ceil(z2[0].params / 40e6));
  ASSERT_GT(dp64[0].dp_buckets, 1.0);
}

// overlap_ep_comm's unpaired passes: a stage keeps u + (1 − u)·k of its all-to-alls, k the
// merged pair's share (the same per layer on every stage of one pool and tp) and u its warm-up
// forwards' share of the micro-batches: interleaved over 2 stages of 2 chunks, 4 micro-batches,
// Megatron's warm-up holds (p − i − 1)·2 + (v − 1)·p + 1 chunks: 5 on stage 0 (u = 5/2/4),
// 3 on stage 1 (u = 3/2/4).
TEST(Estimate, OverlappedAllToAllsLeaveTheWarmUpExposed) {
  auto keep = [](const std::string& extra) {
    auto text = [&](bool overlap) {
      return "[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\n[training]\nglobal_batch = 16\nseq_len = 4096\n"
             "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n[parallel]\ntp = 2\npp = 2\ndp = 4\nep = 4\n"
             "micro_batch = 1\n" + extra + (overlap ? "overlap_ep_comm = true\n" : "");
    };
    const Scenario a = load(text(false)), b = load(text(true));
    EXPECT_TRUE(a.plan && b.plan);
    const auto ca = analytic::stage_costs(a, *a.plan).at(0), cb = analytic::stage_costs(b, *b.plan).at(0);
    std::vector<double> k;
    for (std::size_t si = 0; si < ca.size(); ++si) k.push_back(cb[si].layer_ep_fwd / ca[si].layer_ep_fwd);
    return k;
  };
  const auto k = keep("schedule = \"interleaved\"\nvirtual_stages = 2\n");
  ASSERT_EQ(k.size(), 2u);
  const double u0 = 5.0 / 2 / 4, u1 = 3.0 / 2 / 4;
  const double pair0 = (k[0] - u0) / (1 - u0), pair1 = (k[1] - u1) / (1 - u1);
  EXPECT_NEAR(pair0, pair1, 1e-12);
  EXPECT_GT(pair0, 0.0);
  EXPECT_LT(pair0, 1.0);
  // 1F1B: p − i warm-up micro-batches in flight, 2 on stage 0 and 1 on stage 1.
  const auto f = keep("schedule = \"1f1b\"\n");
  EXPECT_NEAR((f[0] - 2.0 / 4) / (1 - 2.0 / 4), (f[1] - 1.0 / 4) / (1 - 1.0 / 4), 1e-12);
  EXPECT_NEAR((f[0] - 2.0 / 4) / (1 - 2.0 / 4), pair0, 1e-12);  // the same pair, whatever the schedule
}

// A pipeline message stays in a node only when both stages' blocks lie in it: in Megatron's rank
// order (tp, dp, pp) blocks of 4 on nodes of 8 pair stages 0–1 and 2–3 over the fabric, while
// 1–2 cross the NICs (before 2026-12-06 every pair whose two blocks could fit a node was priced
// on the fabric).
TEST(Estimate, PipelineMessagesCrossTheNetworkWhereTheStagesSitOnTwoNodes) {
  const Scenario s = load("[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 8\nseq_len = 2048\n"
                          "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 4\n[parallel]\ntp = 4\npp = 8\ndp = 1\n"
                          "micro_batch = 1\n");
  ASSERT_TRUE(s.plan);
  const auto c = analytic::stage_costs(s, *s.plan).at(0);
  ASSERT_EQ(c.size(), 8u);
  EXPECT_EQ(c[0].send_next.v, c[2].send_next.v);
  EXPECT_EQ(c[1].send_next.v, c[3].send_next.v);
  EXPECT_GT(c[1].send_next.v, 3 * c[0].send_next.v);  // 50 GB/s of NIC against 367 of NVLink
}

// Dense layers before the first MoE layer (DeepSeek-V3's first 3): a stage prices each of its
// layers as its kind. 4 layers, the first dense, pp 2: stage 1 holds 2 MoE layers and costs what
// an all-MoE model's stage does; stage 0 (1 dense + 1 MoE) costs per layer the mean of a dense
// layer (the dense model of the same shape) and a MoE layer, with half the all-to-alls and one
// layer's experts.
TEST(Estimate, DenseLayersOfAMoeModelArePricedAsDense) {
  auto scenario = [](const std::string& extra) {
    return load("[model]\npreset = \"deepseek-v3\"\nlayers = 4\n" + extra +
                "[training]\nglobal_batch = 4\nseq_len = 4096\n[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n"
                "[parallel]\ntp = 2\npp = 2\ndp = 2\nep = 2\nmicro_batch = 1\n");
  };
  const Scenario mixed = scenario("first_dense_layers = 1\n");
  const Scenario all_moe = scenario("first_dense_layers = 0\n");
  ASSERT_TRUE(mixed.plan && all_moe.plan);
  Scenario dense = all_moe;
  dense.model = workload::dense_layer_model(all_moe.model);
  dense.plan->ep = 1;
  const auto cm = analytic::stage_costs(mixed, *mixed.plan).at(0);
  const auto ca = analytic::stage_costs(all_moe, *all_moe.plan).at(0);
  const auto cd = analytic::stage_costs(dense, *dense.plan).at(0);
  EXPECT_EQ(cm[1].layer_fwd.v, ca[1].layer_fwd.v);
  EXPECT_EQ(cm[1].layer_ep_fwd.v, ca[1].layer_ep_fwd.v);
  EXPECT_DOUBLE_EQ(cm[1].expert_params, ca[1].expert_params);
  EXPECT_NEAR(cm[0].layer_fwd.v, (ca[0].layer_fwd.v + cd[0].layer_fwd.v) / 2, 1e-12);
  EXPECT_NEAR(cm[0].layer_bwd.v, (ca[0].layer_bwd.v + cd[0].layer_bwd.v) / 2, 1e-12);
  EXPECT_NEAR(cm[0].layer_ep_fwd.v, ca[0].layer_ep_fwd.v / 2, 1e-15);
  EXPECT_DOUBLE_EQ(cm[0].expert_params, ca[0].expert_params / 2);
  EXPECT_LT(cd[0].layer_fwd.v, ca[0].layer_fwd.v);  // the 18432-wide MLP against 8 + 1 experts of 2048
  const auto pc = workload::count_params(mixed.model);
  EXPECT_NEAR(cm[0].params_layer * 2, (pc.per_layer - pc.per_layer_experts / 2 + pc.per_dense_layer) / 2, 1.0);
}

// grad_reduce_dtype = "bf16" (Megatron-Core's grad_reduce_in_fp32 = false) halves the bytes of the
// data-parallel reduce-scatter; the parameter all-gather and the optimizer are unchanged.
TEST(Estimate, Bf16GradientReduceMovesHalfTheBytes) {
  auto costs = [](const std::string& training) {
    const Scenario s = load("[model]\npreset = \"llama3-8b\"\nlayers = 4\n[training]\nglobal_batch = 16\nseq_len = 2048\n" +
                            training + "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n[parallel]\ntp = 1\npp = 1\ndp = 16\nzero = 1\n");
    EXPECT_TRUE(s.plan);
    return analytic::stage_costs(s, *s.plan).at(0).at(0);
  };
  const auto fp32 = costs("");
  const auto bf16 = costs("grad_reduce_dtype = \"bf16\"\n");
  EXPECT_NEAR(costs("grad_reduce_dtype = \"fp32\"\n").dp_reduce.v, fp32.dp_reduce.v, 1e-15);
  EXPECT_LT(bf16.dp_reduce.v, 0.6 * fp32.dp_reduce.v);  // half the bytes, the same latency
  EXPECT_GT(bf16.dp_reduce.v, 0.4 * fp32.dp_reduce.v);
  EXPECT_DOUBLE_EQ(bf16.dp_gather.v, fp32.dp_gather.v);
  EXPECT_DOUBLE_EQ(bf16.optimizer.v, fp32.optimizer.v);
}

TEST(Estimate, SelectiveOpRecomputesWhatThePolicyDoesNotKeep) {
  const std::string text =
      "[model]\nname = \"m\"\nlayers = 4\nhidden = 1024\nheads = 16\nkv_heads = 4\nffn_hidden = 2816\n"
      "vocab = 32000\nactivation = \"swiglu\"\nnorm = \"rmsnorm\"\npositions = \"rope\"\n"
      "[training]\nglobal_batch = 8\nseq_len = 2048\nfused_kernels = false\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n"
      "[parallel]\ntp = 1\npp = 1\ndp = 8\nmicro_batch = 1\nrecompute = \"selective_op\"\n";
  const Scenario s = load(text);
  ASSERT_TRUE(s.plan);
  const auto c = analytic::stage_costs(s, *s.plan)[0][0];
  workload::MicroBatchShape shape{1, 2048, 1, true, hw::Dtype::Bf16, true, true, false};
  const auto& dev = s.cluster.pools[0].device;
  double want = 0, attention = 0;
  for (const auto& op : workload::layer_ops(s.model, shape)) {
    const double f = cost::op_time(dev, hw::Dtype::Bf16, op, cost::Pass::Forward).v;
    if (op.name == "attention") attention = f;
    else if (op.name == "qkv") want += f * 256.0 / (1024 + 2 * 256);  // the K columns
    else if (op.name == "mlp_up") want += f / 2;                     // the up half of gate+up
    else if (op.name != "mlp_down") want += f;                       // out projection, everything else
  }
  EXPECT_NEAR(c.layer_recompute.v, want, 1e-12);
  EXPECT_GT(c.layer_recompute.v, 0);
  EXPECT_LT(c.layer_recompute.v, c.layer_fwd.v - attention);
  EXPECT_DOUBLE_EQ(c.logits.v, 12.0 * 2048 * 32000);
  std::string fused = text;
  fused.replace(fused.find("fused_kernels = false"), 21, "fused_kernels = true");
  const Scenario sf = load(fused);
  ASSERT_TRUE(sf.plan);
  EXPECT_DOUBLE_EQ(analytic::stage_costs(sf, *sf.plan)[0][0].logits.v, 6.0 * 2048 * 32000);
}

// Two replica groups on one pool of 16 H100: `a` replicas of tp 2 and `b` of tp 2, one stage of
// Llama 3 8B's 8 first layers each, and each group's micro-batches.
std::string two_groups(int zero, int a, int b, int mb_a = 2, int mb_b = 4) {
  return "[model]\npreset = \"llama3-8b\"\nlayers = 8\n[training]\nglobal_batch = " + std::to_string(a * mb_a + b * mb_b) +
         "\nseq_len = 2048\n[[cluster.pool]]\nname = \"h100\"\ndevice = \"h100-sxm5\"\nnodes = 2\n"
         "[parallel]\nmicro_batch = 1\nzero = " + std::to_string(zero) + "\n"
         "[[parallel.replicas]]\ncount = " + std::to_string(a) + "\nmicro_batches = " + std::to_string(mb_a) +
         "\nstages = [{pool = \"h100\", tp = 2, layers = 8}]\n"
         "[[parallel.replicas]]\ncount = " + std::to_string(b) + "\nmicro_batches = " + std::to_string(mb_b) +
         "\nstages = [{pool = \"h100\", tp = 2, layers = 8}]\n";
}

// ZeRO 2/3 over several replica groups is hybrid sharding (docs/cost-models.md#hybrid-sharding):
// each group's per-micro-batch collectives and state shard over its own replicas, as if it were
// alone, and once per step the groups all-reduce their shards, the group with fewer replicas
// moving more.
TEST(HybridSharding, EachGroupShardsWithinItselfAndAllReducesItsShardsAcrossGroups) {
  for (int zero : {2, 3}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    const Scenario s = load(two_groups(zero, 4, 2));
    const auto costs = analytic::stage_costs(s, *s.plan);
    const auto& a = costs.at(0).at(0);
    const auto& b = costs.at(1).at(0);
    EXPECT_EQ(a.shard_replicas, 4);
    EXPECT_EQ(b.shard_replicas, 2);
    EXPECT_EQ(a.memory.dp, 4);
    EXPECT_EQ(b.memory.dp, 2);
    // Group a's collectives are those of the same 4 replicas planned alone on the pool.
    const Scenario alone = load(
        "[model]\npreset = \"llama3-8b\"\nlayers = 8\n[training]\nglobal_batch = 8\nseq_len = 2048\n"
        "[[cluster.pool]]\nname = \"h100\"\ndevice = \"h100-sxm5\"\nnodes = 1\n"
        "[parallel]\ntp = 2\npp = 1\ndp = 4\nmicro_batch = 1\nzero = " + std::to_string(zero) + "\n");
    const analytic::StageCost one = analytic::stage_costs(alone, *alone.plan).at(0).at(0);
    EXPECT_DOUBLE_EQ(a.dp_reduce.v, one.dp_reduce.v);
    EXPECT_DOUBLE_EQ(a.dp_gather.v, one.dp_gather.v);
    EXPECT_DOUBLE_EQ(a.optimizer.v, one.optimizer.v);
    EXPECT_EQ(one.dp_cross.v, 0);
    // Across groups: a shard of 1/2 against 1/4 of the same parameters, over the NICs.
    EXPECT_GT(a.dp_cross.v, 0);
    EXPECT_NEAR(b.dp_cross.v / a.dp_cross.v, 2.0, 0.05);
    // More state per device where fewer replicas share it.
    const auto e = analytic::estimate(s, *s.plan);
    ASSERT_EQ(e.stages.size(), 2u);
    EXPECT_GT(e.stages[1].memory.total(), e.stages[0].memory.total());
    // Without overlap every collective is exposed, the shards' all-reduce once.
    const double gathers = zero >= 3 ? 2.0 * 4 : 1;
    EXPECT_NEAR(e.stages[1].dp_comm.v, b.dp_reduce.v * 4 + b.dp_gather.v * gathers + b.dp_cross.v, 1e-12);
  }
  // ZeRO 1 syncs once per step: one collective over all six replicas, nothing across.
  const Scenario z1 = load(two_groups(1, 4, 2));
  for (const auto& g : analytic::stage_costs(z1, *z1.plan)) {
    EXPECT_EQ(g.at(0).shard_replicas, 6);
    EXPECT_EQ(g.at(0).dp_cross.v, 0);
  }
  // A group of one replica shards nothing: no collective of its own, only the all-reduce.
  const Scenario lone = load(two_groups(2, 4, 1));
  const analytic::StageCost c = analytic::stage_costs(lone, *lone.plan).at(1).at(0);
  EXPECT_EQ(c.dp_reduce.v, 0);
  EXPECT_EQ(c.dp_gather.v, 0);
  EXPECT_GT(c.dp_cross.v, 0);
}

}  // namespace
}  // namespace hetsim
