// Context parallelism (docs/cost-models.md#context-parallelism): each sequence split over cp
// ranks that sit next to the TP ranks, keys and values exchanged inside attention.

#include <gtest/gtest.h>

#include <string>

#include "models/cost/compute.hpp"
#include "sim/analytic/estimate.hpp"
#include "sim/analytic/stage_cost.hpp"
#include "sim/io/plan_json.hpp"
#include "sim/plan/planner.hpp"
#include "sim/report/estimate_report.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

// A dense model on one node of 8 devices whose fabric runs at `fabric` with no latency (the
// exchange's closed forms), device attention and GEMMs as the catalogue's generic part prices them.
std::string cp_scenario(const std::string& parallel, const std::string& fabric = "100GB/s", int seq = 8192) {
  return "[model]\nname = \"m\"\nlayers = 4\nhidden = 4096\nheads = 32\nkv_heads = 8\nffn_hidden = 14336\n"
         "vocab = 32000\nactivation = \"swiglu\"\nnorm = \"rmsnorm\"\npositions = \"rope\"\ntied_embeddings = false\n"
         "linear_bias = false\ndropout = false\n"
         "[training]\nglobal_batch = 8\nseq_len = " + std::to_string(seq) + "\n"
         "[[cluster.link]]\nname = \"fab\"\nkind = \"scale-up\"\nbandwidth = \"" + fabric +
         "\"\nlatency = \"0us\"\ncall_latency = \"0us\"\nefficiency = 1.0\n"
         "[[cluster.pool]]\nnodes = 1\n[cluster.pool.device]\nname = \"g\"\npeak = { bf16 = \"1000TFLOPS\" }\n"
         "memory = \"192GiB\"\nmemory_bandwidth = \"4TB/s\"\n"
         "node = { devices = 8, fabric = \"fab\", nics = 8, nic = \"fab\" }\n"
         "[parallel]\n" + parallel;
}

double cp_attention_flops(const analytic::StageCost& c, bool forward) {
  for (const auto& op : *c.layer_ops)
    if (op.kind == workload::OpKind::Attention) return (forward ? op.fwd_flops : op.bwd_flops).v;
  return 0;
}

// cp = 2 over the same 8 devices as dp 8: each rank holds half of each sequence, so its layer
// GEMMs and activations halve and its attention does half the whole sequence's causal work (its
// queries meet every key); the replicas count dp · cp blocks and the step processes the batch.
TEST(ContextParallel, EachRankHoldsItsShareOfTheSequence) {
  const Scenario one = test::load(cp_scenario("tp = 1\npp = 1\ndp = 8\n"));
  const Scenario two = test::load(cp_scenario("tp = 1\npp = 1\ndp = 4\ncp = 2\n"));
  ASSERT_TRUE(one.plan && two.plan);
  EXPECT_EQ(two.plan->groups[0].replicas, 8);
  EXPECT_EQ(two.plan->sequences_per_step(), 8);
  EXPECT_EQ(two.plan->groups[0].micro_batches, 2);  // 8 sequences over dp 4
  const auto c1 = analytic::stage_costs(one, *one.plan).at(0).at(0);
  const auto c2 = analytic::stage_costs(two, *two.plan).at(0).at(0);
  for (const auto& op : *c2.layer_ops) {
    if (op.name == "qkv") {
      EXPECT_DOUBLE_EQ(op.m, 4096);  // tokens: 8192 / 2
    }
  }
  EXPECT_NEAR(cp_attention_flops(c2, true), cp_attention_flops(c1, true) / 2, 1);
  EXPECT_NEAR(cp_attention_flops(c2, false), cp_attention_flops(c1, false) / 2, 1);
  EXPECT_NEAR(c2.act_per_layer.v, c1.act_per_layer.v / 2,
              c1.act_per_layer.v * 1e-9);
  // Both reduce their gradients over 8 ranks: the same DP sync.
  EXPECT_DOUBLE_EQ(c2.dp_reduce.v, c1.dp_reduce.v);
  EXPECT_EQ(c1.layer_cp_fwd.v, 0);
  const auto e2 = analytic::estimate(two, *two.plan);
  EXPECT_EQ(e2.step.get("cp comm").v, 0);  // 100 GB/s: the sends hide behind the attention kernels
  const Scenario slow = test::load(cp_scenario("tp = 1\npp = 1\ndp = 4\ncp = 2\n", "1GB/s"));
  EXPECT_GT(analytic::estimate(slow, *slow.plan).step.get("cp comm").v, 0);
  EXPECT_DOUBLE_EQ(e2.tokens_per_step, 8.0 * 8192);
  EXPECT_NE(report::plan_summary(two, *two.plan).find("4 × [g tp1 L4]"), std::string::npos)
      << report::plan_summary(two, *two.plan);
  EXPECT_NE(report::plan_summary(two, *two.plan).find("CP 2 (p2p ring)"), std::string::npos);
}

// The exchange in closed form on a 1 GB/s fabric (slow enough that attention hides little; the
// generic device has no overlap slow-down). A rank's keys and values of one layer: 4096 tokens ·
// 2 · 1024 (8 KV heads of 128) · 2 bytes = 16 MiB. P2P: cp − 1 steps of one send each forward,
// keys, values and their gradients backward, each beside 1/cp of the attention kernel time.
// AllGather: the gather of cp blocks, (cp − 1)/cp of it received, forward and before the
// backward, plus the gradients' reduce-scatter. AllToAll: Q, K, V (32 + 16 heads of 128 wide) out
// and the output (32 heads) back, (cp − 1)/cp of each sent.
TEST(ContextParallel, TheExchangeCostsItsClosedForm) {
  const double kv = 4096.0 * 2 * 1024 * 2, bw = 1e9;
  auto costs = [&](const std::string& comm) {
    const Scenario s = test::load(cp_scenario("tp = 1\npp = 1\ndp = 4\ncp = 2\ncp_comm = \"" + comm + "\"\n", "1GB/s"));
    const auto c = analytic::stage_costs(s, *s.plan).at(0).at(0);
    double attn_f = 0, attn_b = 0;
    for (const auto& op : *c.layer_ops)
      if (op.kind == workload::OpKind::Attention) {
        attn_f = cost::op_time(s.cluster.pools[0].device, s.training.precision, op, cost::Pass::Forward).v;
        attn_b = cost::op_time(s.cluster.pools[0].device, s.training.precision, op, cost::Pass::Backward).v;
      }
    return std::make_tuple(c, attn_f, attn_b);
  };
  const auto [p2p, af, ab] = costs("p2p");
  ASSERT_GT(kv / bw, af / 2);  // the sends outlast the kernels beside them
  EXPECT_NEAR(p2p.layer_cp_fwd.v, kv / bw - af / 2, 1e-9);
  ASSERT_GT(kv / bw, ab / 2);
  EXPECT_NEAR(p2p.layer_cp_bwd.v, 2 * (kv / bw - ab / 2), 1e-9);  // K, V, then dK, dV: one beside each kernel
  EXPECT_EQ(p2p.layer_cp_recompute.v, 0);  // recompute = "none"
  const auto [ag, af2, ab2] = costs("all_gather");
  EXPECT_NEAR(ag.layer_cp_fwd.v, kv / bw, 1e-9);
  EXPECT_NEAR(ag.layer_cp_bwd.v, 2 * kv / bw, 1e-9);
  const auto [a2a, af3, ab3] = costs("a2a");
  const double in = 4096.0 * (4096 + 2 * 1024) * 2, out = 4096.0 * 4096 * 2;
  EXPECT_NEAR(a2a.layer_cp_fwd.v, (in + out) / 2 / bw, 1e-9);
  EXPECT_NEAR(a2a.layer_cp_bwd.v, (in + 2 * out) / 2 / bw, 1e-9);  // O and dO out, dQ, dK, dV back
}

// The attention kernels each exchange runs: the ring, cp per pass over one block of keys, whose
// partial outputs merge; the all-gather, the rank's two chunks against the gathered keys; Ulysses,
// one over the whole sequence with heads/cp. The same FLOPs in all three.
TEST(ContextParallel, EachExchangeRunsItsOwnAttentionKernels) {
  auto ops = [](const std::string& comm) {
    const Scenario s = test::load(cp_scenario("tp = 1\npp = 1\ndp = 2\ncp = 4\ncp_comm = \"" + comm + "\"\n"));
    return *analytic::stage_costs(s, *s.plan).at(0).at(0).layer_ops;
  };
  auto find = [](const std::vector<workload::Op>& list, const char* name) -> const workload::Op* {
    for (const auto& op : list)
      if (op.name == name) return &op;
    return nullptr;
  };
  const auto ring = ops("p2p"), gathered = ops("all_gather"), heads = ops("a2a");
  const auto *r = find(ring, "attention"), *g = find(gathered, "attention"), *h = find(heads, "attention");
  ASSERT_TRUE(r && g && h);
  EXPECT_EQ(r->fwd_kernels, 4);
  EXPECT_EQ(r->bwd_kernels, 12);
  EXPECT_DOUBLE_EQ(r->seq, 2048);
  ASSERT_NE(find(ring, "cp_merge"), nullptr);
  EXPECT_EQ(find(ring, "cp_merge")->fwd_kernels, 3);
  EXPECT_EQ(g->fwd_kernels, 2);
  EXPECT_EQ(find(gathered, "cp_merge"), nullptr);
  EXPECT_EQ(h->fwd_kernels, 1);
  EXPECT_DOUBLE_EQ(h->seq, 8192);
  EXPECT_EQ(find(heads, "cp_merge"), nullptr);
  EXPECT_DOUBLE_EQ(r->fwd_flops.v, h->fwd_flops.v);
  EXPECT_DOUBLE_EQ(g->fwd_flops.v, h->fwd_flops.v);
}

// Several replica groups under cp: the batch splits over data-parallel replicas, not over the cp
// blocks (planner::split_batch, which the GUI's what-if uses when the global batch changes).
TEST(ContextParallel, TheBatchSplitsOverDataParallelReplicas) {
  const Scenario s = test::load(cp_scenario(
      "cp = 2\n[[parallel.replicas]]\ncount = 1\nmicro_batches = 4\nstages = [{ tp = 2, layers = 4 }]\n"
      "[[parallel.replicas]]\ncount = 2\nmicro_batches = 2\nstages = [{ tp = 1, layers = 4 }]\n"));
  ASSERT_TRUE(s.plan);
  EXPECT_EQ(s.plan->sequences_per_step(), 8);
  Scenario bigger = s;
  bigger.training.global_batch = 16;
  plan::Plan p = *s.plan;
  ASSERT_TRUE(planner::split_batch(bigger, p));
  EXPECT_EQ(p.sequences_per_step(), 16);
  EXPECT_TRUE(io::validate_plan(bigger, p, {"t", 1, 1}).empty());
}

// A rank's share of the recompute re-runs the exchange with the attention: all of it under full
// recompute, none under "none".
TEST(ContextParallel, RecomputingAttentionExchangesAgain) {
  const Scenario s = test::load(cp_scenario("tp = 1\npp = 1\ndp = 4\ncp = 2\nrecompute = \"full\"\n", "1GB/s"));
  const auto c = analytic::stage_costs(s, *s.plan).at(0).at(0);
  EXPECT_GT(c.layer_cp_fwd.v, 0);
  EXPECT_DOUBLE_EQ(c.layer_cp_recompute.v, c.layer_cp_fwd.v);
}

// Replica groups given as [[parallel.replicas]]: `count` data-parallel replicas of cp blocks each.
TEST(ContextParallel, ReplicaGroupsCountDataParallelReplicas) {
  const Scenario s = test::load(cp_scenario("cp = 2\n[[parallel.replicas]]\ncount = 2\nstages = [{ tp = 2, layers = 4 }]\n"));
  ASSERT_TRUE(s.plan);
  EXPECT_EQ(s.plan->groups[0].replicas, 4);
  EXPECT_EQ(s.plan->devices(), 8);
  EXPECT_EQ(s.plan->groups[0].micro_batches, 4);  // 8 sequences over 2 replicas
  EXPECT_EQ(s.plan->sequences_per_step(), 8);
}

TEST(ContextParallel, PlanFilesKeepCpAndItsExchange) {
  const Scenario s = test::load(cp_scenario("tp = 1\npp = 1\ndp = 4\ncp = 2\ncp_comm = \"all_gather\"\n"));
  const std::string json = io::plan_to_json(s, *s.plan);
  EXPECT_NE(json.find("\"cp\": 2"), std::string::npos);
  auto back = io::parse_plan_json(json, "p.json", s);
  ASSERT_TRUE(back.ok()) << test::all_errors(back.errors());
  EXPECT_EQ(back->cp, 2);
  EXPECT_EQ(back->cp_comm, plan::Plan::CpComm::AllGather);
  EXPECT_EQ(back->groups[0].replicas, 8);
  // A plan file whose groups are not whole blocks of cp is refused, naming the key.
  std::string bad = json;
  bad.replace(bad.find("\"replicas\": 8"), 13, "\"replicas\": 7");
  auto refused = io::parse_plan_json(bad, "p.json", s);
  EXPECT_FALSE(refused.ok() && io::validate_plan(s, *refused, {"p.json", 1, 1}).empty());
}

TEST(ContextParallel, WhatItCannotDoIsRefusedWithTheKey) {
  auto refused = [](const std::string& text, const std::string& says) {
    auto s = test::parse(text);
    ASSERT_FALSE(s.ok()) << "accepted";
    const std::string all = test::all_errors(s.errors());
    EXPECT_NE(all.find(says), std::string::npos) << all;
  };
  refused(cp_scenario("tp = 1\npp = 1\ndp = 4\ncp = 2\n", "100GB/s", 8190), "4 equal chunks (two a rank");
  refused(cp_scenario("tp = 1\npp = 1\ndp = 4\ncp = 2\n", "100GB/s", 8190), "parallel.cp");
  refused(cp_scenario("tp = 1\npp = 1\ndp = 3\ncp = 2\n"), "tp·cp·pp·dp = 1·2·1·3 = 6");
  refused(cp_scenario("tp = 8\npp = 1\ncp = 2\n"), "not a multiple of tp·cp·pp = 16");
  refused(cp_scenario("tp = 1\npp = 1\ndp = 4\ncp = 2\ncp_comm = \"ring\"\n"), "cp_comm");
  // Ulysses splits each rank's heads over cp: 2 KV heads at tp 2 leave 1 a rank.
  std::string two_kv = cp_scenario("tp = 2\npp = 1\ndp = 2\ncp = 2\ncp_comm = \"a2a\"\n");
  two_kv.replace(two_kv.find("kv_heads = 8"), 12, "kv_heads = 2");
  refused(two_kv, "a2a");
  std::string one_kv = cp_scenario("tp = 2\npp = 1\ndp = 2\ncp = 2\ncp_comm = \"a2a\"\n");
  one_kv.replace(one_kv.find("kv_heads = 8"), 12, "kv_heads = 1");  // one replicated key-value head a rank
  refused(one_kv, "a2a");
  refused(cp_scenario("cp = 2\n[[parallel.replicas]]\ncount = 1048576\nstages = [{ tp = 1, layers = 4 }]\n"),
          "count · cp");
  std::string moe = test::minimal("tp = 2\npp = 1\ndp = 4\ncp = 2\n");
  moe.replace(moe.find("preset = \"tiny\""), 15, "preset = \"mixtral-8x7b\"\nlayers = 2");
  refused(moe, "mixture-of-experts");
  std::string unfused = cp_scenario("tp = 1\npp = 1\ndp = 4\ncp = 2\n");
  unfused.replace(unfused.find("[training]\n"), 11, "[training]\nflash_attention = false\n");
  refused(unfused, "fused attention");
}

}  // namespace
}  // namespace hetsim
