// [variability]: stragglers and jitter applied by the native engine to each device's compute
// (docs/simulation.md#variability). Zero spread gives today's step exactly; one straggler moves
// the step as the pipeline's closed form says; the same seed gives the same bytes; bad input
// names file:line:col and the key.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/api/api.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/engine/variability.hpp"
#include "sim/io/variability_reader.hpp"
#include "sim/report/simulation_report.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/io/sweep_reader.hpp"
#include "sim/sweep/plot.hpp"
#include "sim/sweep/rows.hpp"
#include "sim/sweep/sweep.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

using schedule::SimTime;
using schedule::TaskKind;

// As in schedule_engine_test: memory-bound work, launches and the fabric cost nothing, so that
// stages are uniform and sends take 0 ns; `dp` replicas of `stages` stages.
std::string ideal_dp(int stages, int micro_batches, int dp, const std::string& variability) {
  return "[model]\npreset = \"tiny\"\nlayers = 8\nvocab = 8\n"
         "[training]\nglobal_batch = " + std::to_string(micro_batches * dp) + "\nseq_len = 1024\n"
         "[[cluster.link]]\nname = \"ideal\"\nkind = \"scale-up\"\nbandwidth = \"1000000000TB/s\"\nlatency = \"0us\"\n"
         "[[cluster.pool]]\nnodes = 1\nfabric = \"ideal\"\nnic = \"ideal\"\n"
         "[cluster.pool.device]\nname = \"ideal-gpu\"\npeak = { bf16 = \"100TFLOPS\", fp32 = \"1000000TFLOPS\" }\n"
         "memory = \"80GiB\"\nmemory_bandwidth = \"1000000000TB/s\"\n"
         "node = { devices = " + std::to_string(stages * dp) + ", fabric = \"ideal\", nics = 1, nic = \"ideal\" }\n"
         "efficiency = { gemm = 1.0, gemm_half_dim = 0, attention = 1.0, memory = 1.0, launch_overhead = \"0us\" }\n"
         "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n"
         "[parallel]\ntp = 1\npp = " + std::to_string(stages) + "\ndp = " + std::to_string(dp) +
         "\nmicro_batch = 1\nschedule = \"1f1b\"\n[variability]\n" + variability;
}

using test::load;

SimTime duration_on(const schedule::TaskGraph& g, TaskKind k, std::uint32_t device) {
  for (const auto& t : g.tasks)
    if (t.kind == k && t.device == device) return t.duration;
  return -1;
}

TEST(Variability, ZeroSpreadGivesTodaysStepExactly) {
  // Stragglers that are not slower, no spread, no jitter: every factor is exactly 1.
  const Scenario s = load(ideal_dp(4, 8, 2, "slow_fraction = 0.5\nslow_factor = 1\nsteps = 7\n"));
  ASSERT_TRUE(s.variability && s.variability->none());
  const auto g = schedule::build_schedule(s, *s.plan);
  auto nominal = engine::run_native(g);
  ASSERT_TRUE(nominal.ok());
  engine::FactorSampler sampler(g, *s.variability);
  const auto& f = sampler.next_step();
  ASSERT_EQ(f.size(), g.devices.size());
  for (double x : f) EXPECT_EQ(x, 1.0);
  auto same = engine::run_native(g, {}, f);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->start, nominal->start);
  EXPECT_EQ(same->end, nominal->end);
  auto d = engine::sample_steps(g, *s.variability, nominal->makespan);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->steps_s.size(), 7u);
  for (double x : d->steps_s) EXPECT_EQ(x, static_cast<double>(nominal->makespan) * 1e-9);

  // A bundled scenario through the API: the nominal figures do not move, p50 = p99 = the step.
  auto def = api::load(std::string(HETSIM_SOURCE_DIR) + "/scenarios/default.toml");
  ASSERT_TRUE(def.ok());
  auto plain = api::simulate(*def, *def->plan);
  Scenario v = *def;
  v.variability = VariabilitySpec{};
  v.variability->seed = 3;
  v.variability->steps = 3;
  v.variability->slow_fraction = 0.1;
  auto with = api::simulate(v, *v.plan);
  ASSERT_TRUE(plain.ok() && with.ok());
  EXPECT_EQ(with->sim.trace.makespan, plain->sim.trace.makespan);
  ASSERT_TRUE(with->sim.variability.has_value());
  EXPECT_EQ(with->sim.variability->p50_s, with->sim.variability->nominal_s);
  EXPECT_EQ(with->sim.variability->p99_s, static_cast<double>(plain->sim.trace.makespan) * 1e-9);
  EXPECT_FALSE(plain->sim.variability.has_value());
}

// 1F1B over p stages with no communication time, stage i taking c_i = t_f,i + t_b,i per
// micro-batch; one straggler at factor f on stage k, c_k = ⌊f·t_f⌉ + ⌊f·t_b⌉ the largest.
// On the last stage (k = p − 1) the straggler never waits once its first micro-batch arrives:
//     step = Σ_{i<k} c_i + m·c_k + t_opt,k
// (the fill, its m micro-batches, its optimizer; f = 1 gives the uniform (m + p − 1)·c + m·Δ).
// Elsewhere 1F1B's order makes it wait for the stages after it now and then: the step lies
// between that and the bottleneck bound Σ_i c_i + (m − 1)·c_k.
TEST(Variability, OneStragglerMovesThePipelineAsTheClosedFormSays) {
  const int p = 4, m = 8;
  const double f = 1.5;
  std::vector<bool> seen(p, false);
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const Scenario s = load(ideal_dp(p, m, 1, "seed = " + std::to_string(seed) +
                                               "\nslow_devices = 1\nslow_factor = 1.5\nsteps = 1\n"));
    const auto g = schedule::build_schedule(s, *s.plan);
    ASSERT_EQ(g.devices.size(), static_cast<std::size_t>(p));
    engine::FactorSampler sampler(g, *s.variability);
    const auto factors = sampler.next_step();
    EXPECT_EQ(sampler.stragglers(), 1);
    ASSERT_EQ(std::count(factors.begin(), factors.end(), f), 1);
    const auto k = static_cast<std::uint32_t>(std::find(factors.begin(), factors.end(), f) - factors.begin());
    seen[k] = true;
    auto c = [&](std::uint32_t i) {
      return engine::scaled(duration_on(g, TaskKind::Forward, i), factors[i]) +
             engine::scaled(duration_on(g, TaskKind::Backward, i), factors[i]);
    };
    SimTime lower = m * c(k) + engine::scaled(duration_on(g, TaskKind::Optimizer, k), f), upper = lower - c(k);
    for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(p); ++i) {
      if (i < k) lower += c(i);
      upper += c(i);
    }
    auto t = engine::run_native(g, {}, factors);
    ASSERT_TRUE(t.ok());
    if (k == static_cast<std::uint32_t>(p - 1)) {
      EXPECT_EQ(t->makespan, lower) << "seed " << seed;
    } else {
      EXPECT_GT(t->makespan, lower) << "seed " << seed << ", straggler on stage " << k;
      EXPECT_LE(t->makespan, upper) << "seed " << seed << ", straggler on stage " << k;
    }
  }
  // The seeds put the straggler on every stage.
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), p);
}

// Data parallelism alone (pp = 1, four replicas folded into one simulated device) on an ideal
// fabric: the nominal step is the device's compute, Σ t over its compute tasks, and the
// gradient all-reduce waits for the slowest replica, so one straggler stretches every one of
// them: step = Σ ⌊f·t⌉.
TEST(Variability, OneStragglerHoldsBackEveryReplica) {
  const Scenario s = load(ideal_dp(1, 4, 4, "slow_devices = 1\nslow_factor = 1.25\nsteps = 2\n"));
  const auto g = schedule::build_schedule(s, *s.plan);
  ASSERT_EQ(g.devices.size(), 1u);
  ASSERT_EQ(g.devices[0].count, 4);
  const double f = 1.25;
  SimTime compute = 0, expected = 0;
  for (const auto& t : g.tasks)
    if (t.stream == schedule::Stream::Compute) {
      compute += t.duration;
      expected += engine::scaled(t.duration, f);
    }
  auto nominal = engine::run_native(g);
  ASSERT_TRUE(nominal.ok());
  ASSERT_EQ(nominal->makespan, compute);
  auto d = engine::sample_steps(g, *s.variability, nominal->makespan);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->stragglers, 1);
  ASSERT_EQ(d->steps_s.size(), 2u);
  for (double x : d->steps_s) EXPECT_EQ(x, static_cast<double>(expected) * 1e-9);
  EXPECT_NEAR(d->p50_s / d->nominal_s, f, 1e-6);
}

// Two replicas of a two-stage pipeline, a straggler on stage 0 of one and on stage 1 of the
// other: each replica is slowed on one stage only. The folded device of each stage takes the
// slower factor, i.e. both stages slow (an upper bound); the runs per replica give the step of
// the same plan unfolded into two one-replica groups with those very factors. Seeds are tried
// until the two stragglers land so (FactorSampler::runs: two runs of one slow stage each).
TEST(Variability, StragglersOfDifferentReplicasAreRunApart) {
  const double f = 1.5;
  bool found = false;
  for (std::uint64_t seed = 1; seed <= 64 && !found; ++seed) {
    const Scenario s = load(ideal_dp(2, 4, 2, "seed = " + std::to_string(seed) +
                                                  "\nslow_devices = 2\nslow_factor = 1.5\nsteps = 1\n"));
    const auto g = schedule::build_schedule(s, *s.plan);
    ASSERT_EQ(g.devices.size(), 2u);
    engine::FactorSampler sampler(g, *s.variability);
    const auto folded = sampler.next_step();
    const auto& runs = sampler.runs();
    if (runs.size() != 2) continue;
    found = true;
    EXPECT_EQ(folded, (std::vector<double>{f, f}));
    EXPECT_NE(std::find(runs.begin(), runs.end(), std::vector<double>{f, 1.0}), runs.end());
    EXPECT_NE(std::find(runs.begin(), runs.end(), std::vector<double>{1.0, f}), runs.end());
    auto d = engine::sample_steps(g, *s.variability, engine::run_native(g)->makespan);
    ASSERT_TRUE(d.ok());
    // The same two replicas as two groups, each a device of its own: replica 0 slow on stage
    // 0, replica 1 on stage 1.
    std::string two = ideal_dp(2, 4, 2, "");
    for (const char* key : {"tp = 1\n", "pp = 2\n", "dp = 2\n"}) two.replace(two.find(key), std::string(key).size(), "");
    const std::string replica =
        "[[parallel.replicas]]\nmicro_batches = 4\nstages = [{ pool = \"ideal-gpu\", layers = 4 }, { pool = \"ideal-gpu\", layers = 4 }]\n";
    two.replace(two.find("[variability]\n"), 14, replica + replica);
    const Scenario u = load(two);
    ASSERT_TRUE(u.plan);
    const auto gu = schedule::build_schedule(u, *u.plan);
    ASSERT_EQ(gu.devices.size(), 4u);
    std::vector<double> real(4, 1.0);
    for (std::uint32_t k = 0; k < 4; ++k)
      if ((gu.devices[k].group == 0 && gu.devices[k].stage == 0) || (gu.devices[k].group == 1 && gu.devices[k].stage == 1))
        real[k] = f;
    const auto exact = engine::run_native(gu, {}, real);
    const auto both = engine::run_native(g, {}, folded);
    ASSERT_TRUE(exact.ok() && both.ok());
    EXPECT_EQ(d->steps_s[0], static_cast<double>(exact->makespan) * 1e-9);
    EXPECT_LT(exact->makespan, both->makespan);
  }
  EXPECT_TRUE(found) << "no seed of 1..64 put the stragglers on different replicas and stages";
}

TEST(Variability, SameSeedSameBytesAnotherSeedOthers) {
  auto def = api::load(std::string(HETSIM_SOURCE_DIR) + "/scenarios/default.toml");
  ASSERT_TRUE(def.ok());
  auto json = [&](std::uint64_t seed) {
    Scenario v = *def;
    VariabilitySpec& x = v.variability.emplace();
    x.seed = seed;
    x.steps = 20;
    x.slow_fraction = 0.02;
    x.slow_factor = 1.3;
    x.sigma = 0.01;
    x.jitter = 0.03;
    auto r = api::simulate(v, *v.plan);
    EXPECT_TRUE(r.ok());
    return r.ok() ? report::simulate_json(v, *v.plan, r->sim) : std::string();
  };
  const std::string a = json(11), b = json(11), c = json(12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a.find("\"p90_step_time_s\""), std::string::npos);
}

TEST(Variability, JitterSpreadsTheStepAndPercentilesAreNearestRank) {
  const Scenario s = load(ideal_dp(2, 4, 2, "jitter = 0.05\nsteps = 200\n"));
  const auto g = schedule::build_schedule(s, *s.plan);
  auto nominal = engine::run_native(g);
  auto d = engine::sample_steps(g, *s.variability, nominal->makespan);
  ASSERT_TRUE(d.ok());
  EXPECT_LT(d->min_s, d->p50_s);
  EXPECT_LE(d->p50_s, d->p90_s);
  EXPECT_LE(d->p90_s, d->p99_s);
  EXPECT_LT(d->p99_s, d->max_s + 1e-12);
  // The slowest of 4 devices with lognormal jitter: the median step above nominal.
  EXPECT_GT(d->p50_s, d->nominal_s);
  std::vector<double> sorted = {5, 1, 4, 2, 3};
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(engine::percentile(sorted, 50), 3);  // ⌈2.5⌉ = 3rd
  EXPECT_EQ(engine::percentile(sorted, 90), 5);  // ⌈4.5⌉ = 5th
  EXPECT_EQ(engine::percentile(sorted, 20), 1);  // ⌈1⌉ = 1st
}

TEST(Variability, SlowFractionDrawsEachDevice) {
  const Scenario all = load(ideal_dp(2, 2, 4, "slow_fraction = 1\nslow_factor = 2\nsteps = 1\n"));
  const auto g = schedule::build_schedule(all, *all.plan);
  engine::FactorSampler s1(g, *all.variability);
  EXPECT_EQ(s1.stragglers(), 8);
  for (double x : s1.next_step()) EXPECT_EQ(x, 2.0);
  const Scenario three = load(ideal_dp(2, 2, 4, "slow_devices = 3\nslow_factor = 2\nsteps = 1\n"));
  engine::FactorSampler s3(g, *three.variability);
  EXPECT_EQ(s3.stragglers(), 3);
}

TEST(Variability, RankByNamesNominalOrAPercentile) {
  EXPECT_EQ(io::parse_rank_by("nominal"), 0);
  EXPECT_EQ(io::parse_rank_by("p90"), 90);
  EXPECT_EQ(io::parse_rank_by("p100"), 100);
  EXPECT_EQ(io::parse_rank_by("p1"), 1);
  for (const char* bad : {"p0", "p101", "90", "p", "P90", "p9x", "mean", ""}) EXPECT_EQ(io::parse_rank_by(bad), -1) << bad;
}

TEST(Variability, SimgridRefusesIt) {
  Scenario s = load(ideal_dp(2, 2, 1, "jitter = 0.01\n"));
  api::SimulateOptions o;
  o.engine = api::Engine::SimGrid;
  auto r = api::simulate(s, *s.plan, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].kind, ErrorKind::BadInput);
  EXPECT_EQ(r.errors()[0].key, "variability");
  EXPECT_NE(r.errors()[0].hint.find("--engine native"), std::string::npos);
}

// `hetsim plan --rank-by p90`: every verified candidate's steps are sampled and the top plans
// are in the order of that percentile; ranking by the nominal step finds what a scenario
// without [variability] finds.
TEST(Variability, PlanRanksByAPercentileOfTheSampledSteps) {
  const std::string base = "schema = 1\n[model]\npreset = \"tiny\"\n"
                           "[training]\nglobal_batch = 16\nseq_len = 512\nprecision = \"bf16\"\n"
                           "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n"
                           "[[cluster.pool]]\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n";
  const std::string var = "[variability]\nslow_fraction = 0.2\nslow_factor = 1.5\njitter = 0.05\nsteps = 20\n";
  auto plain = api::load_text(base, "p.toml", {.plan = false});
  auto sampled = api::load_text(base + var, "p.toml", {.plan = false});
  ASSERT_TRUE(plain.ok() && sampled.ok());
  planner::Options o;
  o.top = 5;
  auto nominal = api::plan(*plain, o);
  auto by_nominal = api::plan(*sampled, o);  // rank_by defaults to nominal
  o.rank_percentile = 90;
  auto by_p90 = api::plan(*sampled, o);
  ASSERT_TRUE(nominal.ok() && by_nominal.ok() && by_p90.ok());
  ASSERT_EQ(nominal->result.top.size(), by_nominal->result.top.size());
  for (std::size_t i = 0; i < nominal->result.top.size(); ++i) {
    EXPECT_EQ(nominal->result.top[i].simulated_step_s, by_nominal->result.top[i].simulated_step_s);
    EXPECT_EQ(by_nominal->result.top[i].ranked_step_s, 0);
  }
  const auto& r = by_p90->result;
  EXPECT_EQ(r.rank_percentile, 90);
  EXPECT_GT(r.sampled, 0u);
  ASSERT_GE(r.top.size(), 2u);
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    ASSERT_GT(r.top[i].ranked_step_s, 0) << i;
    EXPECT_GE(r.top[i].ranked_step_s, r.top[i].simulated_step_s * 0.8) << i;
    if (i > 0) {
      EXPECT_LE(r.top[i - 1].ranked_step_s, r.top[i].ranked_step_s) << i;
    }
  }
  // The percentile is the one sampled for that plan by `hetsim simulate`.
  Scenario again = *sampled;
  auto sim = api::simulate(again, r.top[0].plan);
  ASSERT_TRUE(sim.ok() && sim->sim.variability);
  EXPECT_EQ(sim->sim.variability->p90_s, r.top[0].ranked_step_s);
  // Ranking by a percentile needs [variability].
  auto refused = api::plan(*plain, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.errors()[0].key, "variability");
}

// A sweep over variability.seed: each row carries its point's percentiles (equal to a single
// `hetsim simulate` of that point), another seed draws other steps, and the CSV's percentile
// columns read back as written.
TEST(Variability, SweepRowsCarryEachSeedsPercentiles) {
  const std::string text = test::minimal() +
                           "[variability]\nslow_fraction = 0.1\nslow_factor = 1.5\njitter = 0.05\nsteps = 10\n"
                           "[sweep]\ncommand = \"simulate\"\n\"variability.seed\" = [1, 2, 3]\n";
  auto d = io::parse_sweep(text, "sw.toml", test::catalog());
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  const auto v = sweep::validate(*d, 1);
  ASSERT_EQ(v.invalid, 0u);
  EXPECT_TRUE(v.variability);
  const sweep::Layout l{&d->spec(), v.pools, v.variability};
  std::vector<sweep::Row> rows;
  std::string csv = sweep::file_header(sweep::Format::Csv, l);
  sweep::RunOptions o;
  o.encoding = {l, sweep::Format::Csv, true, false, true};
  o.on_row = [&](const sweep::Finished& r) {
    rows.push_back(*r.row);
    csv += r.line;
  };
  ASSERT_EQ(sweep::run(*d, o), 3u);
  const auto cols = sweep::csv_columns(l);
  const auto at = std::find(cols.begin(), cols.end(), "step_s") - cols.begin();
  ASSERT_LT(static_cast<std::size_t>(at + 3), cols.size());
  EXPECT_EQ(cols[static_cast<std::size_t>(at) + 2], "step_p90_s");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(rows[i].ok && rows[i].sampled) << rows[i].error;
    auto sc = d->scenario(i);
    ASSERT_TRUE(sc.ok());
    EXPECT_EQ(sc->variability->seed, i + 1);
    auto sim = api::simulate(*sc, *sc->plan);
    ASSERT_TRUE(sim.ok());
    EXPECT_EQ(rows[i].step_p50_s, sim->sim.variability->p50_s);
    EXPECT_EQ(rows[i].step_p90_s, sim->sim.variability->p90_s);
    EXPECT_EQ(rows[i].step_p99_s, sim->sim.variability->p99_s);
    EXPECT_EQ(rows[i].step_s, sim->sim.variability->nominal_s);
  }
  EXPECT_TRUE(rows[0].step_p90_s != rows[1].step_p90_s || rows[1].step_p90_s != rows[2].step_p90_s);
  const auto back = sweep::read_rows(sweep::Format::Csv, l, csv);
  ASSERT_EQ(back.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(back[i].sampled);
    EXPECT_NEAR(back[i].step_p90_s, rows[i].step_p90_s, 1e-9 * rows[i].step_p90_s);
  }
  // --plot-y step_p90_s draws them.
  auto chart = sweep::make_chart(l, back, {"step_p90_s", "", "", false});
  ASSERT_TRUE(chart.ok()) << test::all_errors(chart.errors());
  ASSERT_EQ(chart->series.size(), 1u);
  ASSERT_EQ(chart->series[0].y.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(chart->series[0].y[i], back[i].step_p90_s);
  const auto names = sweep::plot_figures(l);
  EXPECT_NE(std::find(names.begin(), names.end(), "step_p99_s"), names.end());
  // A JSON row carries them too (the MPI ranks' and SimGrid children's transport).
  const auto j = sweep::row_from_json(sweep::row_json(l, rows[0]));
  EXPECT_TRUE(j.sampled);
  EXPECT_EQ(j.step_p99_s, rows[0].step_p99_s);
}

// `hetsim estimate` with [variability]: the closed form again over each sampled step's factors
// (engine::sample_closed_form, through api::sample_estimate).
TEST(EstimateVariability, ZeroSpreadGivesTheEstimatesStepExactly) {
  auto def = api::load(std::string(HETSIM_SOURCE_DIR) + "/scenarios/default.toml");
  ASSERT_TRUE(def.ok());
  EXPECT_FALSE(api::sample_estimate(*def, *def->plan, api::estimate(*def, *def->plan)));  // no table, no samples
  Scenario v = *def;
  VariabilitySpec& x = v.variability.emplace();
  x.steps = 9;
  x.slow_fraction = 0.5;  // stragglers that are not slower
  const auto e = api::estimate(v, *v.plan);
  const auto d = api::sample_estimate(v, *v.plan, e);
  ASSERT_TRUE(d);
  ASSERT_EQ(d->steps_s.size(), 9u);
  for (double s : d->steps_s) EXPECT_EQ(s, e.step_time.v);
  EXPECT_EQ(d->nominal_s, e.step_time.v);
  EXPECT_EQ(d->p99_s, e.step_time.v);
}

TEST(EstimateVariability, OneStragglerInOneStageReplicasSlowsTheStepByItsCompute) {
  // pp 1, dp 4, m 4: one replica holds the straggler; its pipeline is m·c' with
  // c' = c + (f − 1)·compute, and its optimizer takes f× as long:
  //   step' = step + m·(f − 1)·compute + (f − 1)·optimizer.
  const Scenario s = load(ideal_dp(1, 4, 4, "slow_devices = 1\nslow_factor = 1.25\nsteps = 3\n"));
  const auto e = api::estimate(s, *s.plan);
  ASSERT_EQ(e.stages.size(), 1u);
  const auto& mb = e.stages[0].per_micro_batch;
  const double compute = (mb.get("forward") + mb.get("backward") + mb.get("recompute")).v;
  ASSERT_GT(compute, 0);
  const double want = e.step_time.v + 4 * 0.25 * compute + 0.25 * e.stages[0].optimizer.v;
  const auto d = api::sample_estimate(s, *s.plan, e);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->stragglers, 1);
  for (double x : d->steps_s) EXPECT_NEAR(x, want, 1e-12 * want);
}

TEST(EstimateVariability, EveryDeviceSlowScalesEachStageOfThePipeline) {
  // pp 4, dp 2, m 8, every device 1.5× slow: each stage's c_i' = c_i + 0.5·compute_i and the
  // pipeline is m·max c' + Σ c' − max c' (docs/cost-models.md#pipeline).
  const Scenario s = load(ideal_dp(4, 8, 2, "slow_fraction = 1\nslow_factor = 1.5\nsteps = 2\n"));
  const auto e = api::estimate(s, *s.plan);
  ASSERT_EQ(e.stages.size(), 4u);
  double cmax = 0, csum = 0, cmax0 = 0, csum0 = 0, opt = 0;
  for (const auto& st : e.stages) {
    const auto& mb = st.per_micro_batch;
    const double c0 = mb.total().v;
    const double c = c0 + 0.5 * (mb.get("forward") + mb.get("backward") + mb.get("recompute")).v;
    cmax = std::max(cmax, c);
    csum += c;
    cmax0 = std::max(cmax0, c0);
    csum0 += c0;
    opt = std::max(opt, st.optimizer.v);
  }
  const double moved = (8 * cmax + csum - cmax) - (8 * cmax0 + csum0 - cmax0) + 0.5 * opt;
  const auto d = api::sample_estimate(s, *s.plan, e);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->stragglers, 8);
  for (double x : d->steps_s) EXPECT_NEAR(x, e.step_time.v + moved, 1e-12 * x);
  EXPECT_GT(moved, 0.3 * e.step_time.v);  // most of the ideal step is compute
}

TEST(EstimateVariability, SameSeedSameStepsJitterSpreadsThem) {
  const Scenario s = load(ideal_dp(2, 4, 2, "jitter = 0.05\nsteps = 200\n"));
  const auto e = api::estimate(s, *s.plan);
  const auto a = api::sample_estimate(s, *s.plan, e), b = api::sample_estimate(s, *s.plan, e);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->steps_s, b->steps_s);
  EXPECT_LT(a->min_s, a->p50_s);
  EXPECT_LE(a->p50_s, a->p90_s);
  EXPECT_LE(a->p90_s, a->p99_s);
  EXPECT_GT(a->p50_s, a->nominal_s);  // the slowest of each stage's devices sets the pace
  Scenario other = s;
  other.variability->seed = 2;
  EXPECT_NE(api::sample_estimate(other, *other.plan, e)->steps_s, a->steps_s);
  // The report says how the steps were sampled.
  EXPECT_EQ(report::variability_json(s, *a, report::SampledBy::ClosedForm)["sampled_by"], "closed_form");
  EXPECT_NE(report::variability_text(s, *a, report::SampledBy::ClosedForm).find("of the closed-form estimate"),
            std::string::npos);
}

TEST(EstimateVariability, EstimateSweepRowsCarryTheSampledPercentiles) {
  const std::string text = test::minimal() + "[variability]\nslow_fraction = 0.1\nslow_factor = 1.5\njitter = 0.05\n"
                                             "[sweep]\n\"variability.seed\" = [1, 2, 3]\n";
  auto d = io::parse_sweep(text, "sw.toml", test::catalog());
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  ASSERT_EQ(d->spec().command, io::SweepCommand::Estimate);
  const auto v = sweep::validate(*d, 1);
  std::vector<sweep::Row> rows;
  sweep::RunOptions o;
  o.encoding = {{&d->spec(), v.pools, v.variability}, sweep::Format::Csv, false, false, true};
  o.on_row = [&](const sweep::Finished& r) { rows.push_back(*r.row); };
  ASSERT_EQ(sweep::run(*d, o), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    auto sc = d->scenario(i);
    ASSERT_TRUE(sc.ok());
    const auto e = api::estimate(*sc, *sc->plan);
    const auto want = api::sample_estimate(*sc, *sc->plan, e);
    ASSERT_TRUE(want);
    ASSERT_TRUE(rows[i].sampled) << rows[i].error;
    EXPECT_EQ(rows[i].step_s, e.step_time.v);
    EXPECT_EQ(rows[i].step_p50_s, want->p50_s);
    EXPECT_EQ(rows[i].step_p99_s, want->p99_s);
  }
}

struct Bad {
  std::string lines;
  const char* where;
  const char* key;
  const char* says;
  const char* hint;
};

TEST(Variability, BadInputNamesTheLineTheKeyAndAHint) {
  // The [variability] table's first key is on line 35 of ideal_dp()'s text.
  const std::vector<Bad> cases = {
      {"jitter = -0.1\n", "v.toml:35:10", "variability.jitter", "jitter = -0.1 is negative", "0 to 1"},
      {"sigma = 3\n", "v.toml:35:9", "variability.sigma", "beyond any measured spread", "0 to 1"},
      {"slow_fraction = 1.5\nslow_factor = 2\n", "v.toml:35:17", "variability.slow_fraction", "not a probability",
       "0 to 1"},
      {"slow_fraction = 0.1\nslow_factor = 0.8\n", "v.toml:36:15", "variability.slow_factor",
       "would make stragglers faster", "1 or more"},
      {"slow_fraction = 0.1\n", "v.toml:35:17", "variability.slow_fraction", "without a slow_factor", "slow_factor ="},
      {"steps = 0\n", "v.toml:35:9", "variability.steps", "steps = 0", "1 to 100000"},
      {"steps = 10000000\n", "v.toml:35:9", "variability.steps", "steps = 10000000", "sweep variability.seed"},
      {"slow_devices = 99\nslow_factor = 2\n", "v.toml:35:16", "variability.slow_devices", "the cluster has 2 devices",
       ""},
      {"slow_devices = 1\nslow_fraction = 0.1\nslow_factor = 2\n", "v.toml:35:16", "variability.slow_devices",
       "both say how many", "give one"},
      {"jiter = 0.1\n", "v.toml:35:1", "variability.jiter", "unknown key 'jiter'", "did you mean 'jitter'"},
      {"rank_by = \"p900\"\n", "v.toml:35:11", "variability.rank_by", "not a percentile", "p90"},
  };
  for (const auto& c : cases) {
    auto r = test::parse(ideal_dp(2, 2, 1, c.lines), "v.toml");
    ASSERT_FALSE(r.ok()) << c.lines;
    const Diagnostic& d = r.errors()[0];
    const std::string at = d.where.file + ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.col);
    EXPECT_EQ(at, c.where) << c.lines;
    EXPECT_EQ(d.key, c.key) << c.lines;
    EXPECT_NE(d.message.find(c.says), std::string::npos) << d.message;
    EXPECT_NE(d.hint.find(c.hint), std::string::npos) << d.hint;
  }
}

}  // namespace
}  // namespace hetsim
