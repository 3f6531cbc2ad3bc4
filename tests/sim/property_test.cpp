// Property test (issue 11): random clusters from every catalogue device and number format,
// random models and plans. Every outcome is a value or diagnostics of kind bad input or does
// not fit (the CLI's exit 2 or 3, never 1 or 4); estimate and simulate agree on whether a plan
// fits; the planner's answer fits. HETSIM_PROPERTY_CASES raises the count for a longer run.

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "sim/analytic/estimate.hpp"
#include "sim/plan/planner.hpp"
#include "sim/report/simulation_report.hpp"
#include "sim/schedule/schedule.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

int cases(int fallback) {
  const char* env = std::getenv("HETSIM_PROPERTY_CASES");
  return env ? std::max(1, std::atoi(env)) : fallback;
}

template <class T>
const T& pick(const std::vector<T>& v, std::mt19937_64& rng) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}

std::string random_scenario(std::mt19937_64& rng, bool with_plan) {
  const auto devices = test::catalog().device_names();
  const std::vector<std::string> precisions = {"fp32", "bf16", "fp16", "fp8"};
  const std::vector<std::string> models = {"tiny", "tiny", "llama3-8b", "gpt3-175b", "mixtral-8x7b"};
  auto n = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::string t = "[model]\npreset = \"" + pick(models, rng) + "\"\n";
  if (n(0, 2) == 0) t += "layers = " + std::to_string(n(1, 8)) + "\n";
  t += "[training]\nglobal_batch = " + std::to_string(1 << n(0, 8)) + "\nseq_len = " + std::to_string(256 << n(0, 4)) +
       "\nprecision = \"" + pick(precisions, rng) + "\"\n";
  const int pools = n(1, 3);
  for (int p = 0; p < pools; ++p)
    t += "[[cluster.pool]]\nname = \"p" + std::to_string(p) + "\"\ndevice = \"" + pick(devices, rng) +
         "\"\nnodes = " + std::to_string(n(1, 3)) + "\n";
  if (with_plan) {
    t += "[parallel]\ntp = " + std::to_string(1 << n(0, 3)) + "\npp = " + std::to_string(1 << n(0, 2)) +
         "\nmicro_batch = " + std::to_string(1 << n(0, 2)) + "\nzero = " + std::to_string(n(0, 3)) +
         "\nrecompute = \"" + pick(std::vector<std::string>{"none", "selective", "full", "selective_op"}, rng) + "\"\n";
  }
  return t;
}

void expect_user_kinds(const Diagnostics& d, const std::string& text) {
  for (const auto& x : d)
    EXPECT_TRUE(x.kind == ErrorKind::BadInput || x.kind == ErrorKind::DoesNotFit)
        << to_string(x) << "\nscenario:\n" << text;
}

TEST(Property, RandomClustersEstimateAndSimulateAgreeOnFitting) {
  std::mt19937_64 rng(20261203);
  int evaluated = 0, fitting = 0, not_fitting = 0;
  for (int i = 0; i < cases(400); ++i) {
    const std::string text = random_scenario(rng, true);
    auto s = test::parse(text, "random.toml");
    if (!s.ok()) {
      expect_user_kinds(s.errors(), text);
      continue;
    }
    ASSERT_TRUE(s->plan.has_value()) << text;
    const double bound = schedule::estimated_tasks(*s, *s->plan);
    if (bound > 2e5) continue;
    // The bound that refuses graphs too large to simulate is never below the graph's size.
    EXPECT_GE(bound, static_cast<double>(schedule::build_schedule(*s, *s->plan).size())) << text;
    const auto e = analytic::estimate(*s, *s->plan);
    EXPECT_TRUE(e.step_time.v > 0 && e.step_time.v < 1e300) << text;
    auto sim = report::run_simulation(*s, *s->plan);
    ASSERT_TRUE(sim.ok()) << (sim.ok() ? "" : to_string(sim.errors()[0])) << "\n" << text;
    ++evaluated;
    (e.fits ? fitting : not_fitting)++;
    EXPECT_EQ(sim->simulated.fits, e.fits) << "estimate and simulate disagree on fitting\n" << text;
  }
  // The generator reaches both verdicts, or the test tests little.
  EXPECT_GT(evaluated, 40);
  EXPECT_GT(fitting, 5);
  EXPECT_GT(not_fitting, 5);
}

// Mixture-of-experts plans: random expert counts, top-k and group-limited routing, expert
// parallelism over nodes of any size (so EP groups that fill nodes unevenly, or span them), both
// dispatchers, fp8 dispatch and the overlap, folded expert tensor parallelism, on switched and
// full-mesh fabrics (a random inline link with per_peer). The same properties: a value or a
// user's diagnostic, never an internal error; estimate and simulate agree on fitting; the times
// are finite.
std::string random_moe_scenario(std::mt19937_64& rng) {
  auto n = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int experts = pick(std::vector<int>{2, 4, 6, 8, 16, 32, 64}, rng);
  const int top_k = n(1, std::min(experts, 8));
  const int pp = n(1, 2);
  std::string t = "[model]\npreset = \"" + pick(std::vector<std::string>{"mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b"}, rng) +
                  "\"\nlayers = " + std::to_string(pp * n(1, 3)) + "\nfirst_dense_layers = " + std::to_string(n(0, 1)) +
                  "\nexperts = " + std::to_string(experts) + "\ntop_k = " + std::to_string(top_k) + "\n";
  // Group-limited routing: off, or a divisor of the experts with enough groups picked for top_k.
  const int groups = pick(std::vector<int>{0, 1, 2, 4}, rng);
  if (groups > 0 && experts % groups == 0) {
    const int least = (top_k + experts / groups - 1) / (experts / groups);
    t += "expert_groups = " + std::to_string(groups) + "\nexpert_group_topk = " + std::to_string(n(least, groups)) + "\n";
  } else {
    t += "expert_groups = 0\nexpert_group_topk = 0\n";
  }
  t += "[training]\nglobal_batch = " + std::to_string(192 << n(0, 2)) + "\nseq_len = " + std::to_string(256 << n(0, 3)) +
       "\nprecision = \"" + pick(std::vector<std::string>{"bf16", "fp8"}, rng) + "\"\n";
  const int per_node = pick(std::vector<int>{2, 4, 6, 8}, rng);
  const bool mesh = n(0, 1) == 1;
  t += "[[cluster.link]]\nname = \"fab\"\nkind = \"scale-up\"\nbandwidth = \"" + std::to_string(n(50, 900)) + "GB/s\"\n" +
       (mesh ? "per_peer = \"" + std::to_string(n(5, 50)) + "GB/s\"\n" : std::string()) + "latency = \"" +
       std::to_string(n(0, 5)) + "us\"\n";
  t += "[[cluster.pool]]\nnodes = " + std::to_string(pp * n(1, 3)) + "\n[cluster.pool.device]\nname = \"dev\"\n"
       "peak = { bf16 = \"1000TFLOPS\", fp8 = \"2000TFLOPS\" }\nmemory = \"" + std::to_string(n(16, 512)) + "GiB\"\n"
       "memory_bandwidth = \"4TB/s\"\nnode = { devices = " + std::to_string(per_node) +
       ", fabric = \"fab\", nics = " + std::to_string(n(1, per_node)) + ", nic = \"ib-ndr-400\" }\n";
  // ep among the divisors of the experts (whether it divides the replicas is the reader's to
  // say), and sometimes a folded expert_tp (1 or 2: not always a divisor of tp, also the reader's).
  std::string t_expert_tp;
  std::vector<int> eps;
  for (int e = 1; e <= experts; ++e)
    if (experts % e == 0) eps.push_back(e);
  const int tp = pick(std::vector<int>{1, 2, 4}, rng);
  if (n(0, 1) == 1) t_expert_tp = "expert_tp = " + std::to_string(pick(std::vector<int>{1, 2}, rng)) + "\n";
  t += "[parallel]\ntp = " + std::to_string(tp) + "\n" + t_expert_tp + "pp = " + std::to_string(pp) +
       "\nep = " + std::to_string(pick(eps, rng)) + "\nmicro_batch = 1\nzero = " + std::to_string(n(0, 3)) +
       "\nrecompute = \"" + pick(std::vector<std::string>{"none", "selective", "full"}, rng) + "\"\n" +
       "ep_dispatch = \"" + pick(std::vector<std::string>{"all-to-all", "hierarchical"}, rng) + "\"\n" +
       "fp8_dispatch = " + (n(0, 1) ? "true" : "false") + "\noverlap_ep_comm = " + (n(0, 1) ? "true" : "false") + "\n";
  return t;
}

TEST(Property, RandomExpertParallelPlansEstimateAndSimulateAgreeOnFitting) {
  std::mt19937_64 rng(20261206);
  int evaluated = 0, fitting = 0, with_ep = 0;
  for (int i = 0; i < cases(300); ++i) {
    const std::string text = random_moe_scenario(rng);
    auto s = test::parse(text, "random.toml");
    if (!s.ok()) {
      expect_user_kinds(s.errors(), text);
      continue;
    }
    ASSERT_TRUE(s->plan.has_value()) << text;
    if (schedule::estimated_tasks(*s, *s->plan) > 1e5) continue;
    const auto e = analytic::estimate(*s, *s->plan);
    EXPECT_TRUE(e.step_time.v > 0 && e.step_time.v < 1e300) << text;
    auto sim = report::run_simulation(*s, *s->plan);
    ASSERT_TRUE(sim.ok()) << (sim.ok() ? "" : to_string(sim.errors()[0])) << "\n" << text;
    EXPECT_EQ(sim->simulated.fits, e.fits) << "estimate and simulate disagree on fitting\n" << text;
    ++evaluated;
    fitting += e.fits ? 1 : 0;
    with_ep += s->plan->ep > 1 ? 1 : 0;
  }
  EXPECT_GT(evaluated, 40);
  EXPECT_GT(fitting, 5);
  EXPECT_GT(with_ep, 20);
}

TEST(Property, RandomClustersPlanToAnAnswerThatFits) {
  std::mt19937_64 rng(7);
  int answered = 0;
  for (int i = 0; i < cases(60); ++i) {
    const std::string text = random_scenario(rng, false);
    auto s = test::parse(text, "random.toml");
    if (!s.ok()) {
      expect_user_kinds(s.errors(), text);
      continue;
    }
    bool usable = false;
    for (const auto& pool : s->cluster.pools) usable = usable || pool.device.peak_for(s->training.precision).has_value();
    if (!usable) continue;  // the CLI refuses it (exit 2) before searching
    planner::Options o;
    o.top = 2;
    o.verify = 2;
    const auto r = planner::search(*s, o);
    if (r.top.empty()) continue;  // exit 3
    ++answered;
    EXPECT_TRUE(r.top[0].estimate.fits) << text;
    auto sim = report::run_simulation(*s, r.top[0].plan);
    ASSERT_TRUE(sim.ok()) << text;
  }
  EXPECT_GT(answered, 10);
}

}  // namespace
}  // namespace hetsim
