// Sweeps (docs/scenario-format.md#sweep): the [sweep] grammar (lists, ranges, product, zip,
// cases) and its errors; points validated with the scenario reader's own messages; rows in point
// order equal to single runs of each point's scenario; results files checked for --resume.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "sim/api/api.hpp"
#include "sim/io/sweep_reader.hpp"
#include "sim/report/estimate_report.hpp"
#include "sim/sweep/plot.hpp"
#include "sim/sweep/rows.hpp"
#include "sim/sweep/sweep.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

// minimal() is 15 lines: [sweep] is line 16, its first key line 17.
std::string with_sweep(const std::string& sweep, const std::string& parallel = "tp = 2\npp = 2\ndp = 4\nmicro_batch = 1\n") {
  return test::minimal(parallel) + "[sweep]\n" + sweep;
}

io::SweepDocument sweep_of(const std::string& text) {
  auto d = io::parse_sweep(text, "sw.toml", test::catalog());
  if (!d) ADD_FAILURE() << test::all_errors(d.errors());
  return std::move(d).value();
}

std::string errors_of(const std::string& text) {
  auto d = io::parse_sweep(text, "sw.toml", test::catalog());
  if (d) return "";
  return test::all_errors(d.errors());
}

// Rows delivered whole (Encoding::row), for the tests that read their figures.
sweep::Encoding whole(const io::SweepDocument& d) {
  sweep::Encoding e;
  e.layout.spec = &d.spec();
  e.line = false;
  e.row = true;
  return e;
}

// The column values of every point, in point order.
std::vector<std::vector<std::string>> grid(const io::SweepDocument& d) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t i = 0; i < d.spec().points; ++i) out.push_back(d.values(i));
  return out;
}

using Values = std::vector<std::vector<std::string>>;

TEST(SweepGrammar, ProductVariesTheLastAxisFastestInTheFilesOrder) {
  // The keys are written b then a: toml++ keeps tables sorted, the sweep keeps the file's order.
  const auto d = sweep_of(with_sweep("\"training.seq_len\" = [256, 512]\n\"cluster.pool[0].nodes\" = [2, 3, 4]\n"));
  EXPECT_EQ(d.spec().columns, (std::vector<std::string>{"training.seq_len", "cluster.pool[0].nodes"}));
  EXPECT_EQ(d.spec().axes, 2u);
  EXPECT_EQ(d.spec().points, 6u);
  EXPECT_EQ(grid(d), (Values{{"256", "2"}, {"256", "3"}, {"256", "4"}, {"512", "2"}, {"512", "3"}, {"512", "4"}}));
}

TEST(SweepGrammar, ZipTakesTheIthValuesTogether) {
  const auto d = sweep_of(with_sweep("combine = \"zip\"\n\"cluster.pool[0].nodes\" = [2, 4]\n\"parallel.dp\" = [4, 8]\n"));
  EXPECT_TRUE(d.spec().zip);
  EXPECT_EQ(grid(d), (Values{{"2", "4"}, {"4", "8"}}));
  auto sc = d.scenario(1);
  ASSERT_TRUE(sc) << test::all_errors(sc.errors());
  EXPECT_EQ(sc->cluster.pools[0].nodes, 4);
  EXPECT_EQ(sc->plan->devices(), 32);
}

TEST(SweepGrammar, ZippedAxesOfDifferentLengthsAreAnError) {
  const std::string e = errors_of(with_sweep("combine = \"zip\"\n\"cluster.pool[0].nodes\" = [2, 4]\n\"parallel.dp\" = [4, 8, 16]\n"));
  EXPECT_NE(e.find("sw.toml:19:17"), std::string::npos) << e;
  EXPECT_NE(e.find("cluster.pool[0].nodes has 2, parallel.dp has 3"), std::string::npos) << e;
}

TEST(SweepGrammar, RangesLinearGeometricAndByCount) {
  const auto d = sweep_of(with_sweep(
      "combine = \"zip\"\n"
      "\"cluster.pool[0].nodes\" = { from = 2, to = 8, step = 2 }\n"      // 2 4 6 8
      "\"training.global_batch\" = { from = 16, to = 128, times = 2 }\n"  // 16 32 64 128
      "\"memory.fragmentation\" = { from = 0.0, to = 0.3, count = 4 }\n"  // 0 0.1 0.2 0.3
      "\"cluster.network.nic_bandwidth\" = { from = \"100Gbps\", to = \"800Gbps\", times = 2 }\n"
      "\"training.tokens\" = { from = 1, to = 1000, count = 4, scale = \"log\" }\n"));
  EXPECT_EQ(d.spec().points, 4u);
  EXPECT_EQ(grid(d), (Values{{"2", "16", "0.0", "100Gbps", "1"},
                             {"4", "32", "0.1", "200Gbps", "10"},
                             {"6", "64", "0.2", "400Gbps", "100"},
                             {"8", "128", "0.3", "800Gbps", "1000"}}));
}

TEST(SweepGrammar, KeyPathsWithDotsOrBracketsAndNestedTablesAreOneKey) {
  const auto a = sweep_of(with_sweep("\"cluster.pool.0.nodes\" = [2, 3]\n"));
  EXPECT_EQ(a.spec().columns, (std::vector<std::string>{"cluster.pool[0].nodes"}));
  // Unquoted dotted keys are nested tables in TOML: the same axis.
  const auto b = sweep_of(with_sweep("training.seq_len = [256, 512]\n"));
  EXPECT_EQ(b.spec().columns, (std::vector<std::string>{"training.seq_len"}));
  auto sc = b.scenario(1);
  ASSERT_TRUE(sc);
  EXPECT_EQ(sc->training.seq_len, 512);
}

TEST(SweepGrammar, CasesFollowTheGridAndShowTheScenariosOwnValueWhereUnset) {
  const auto d = sweep_of(with_sweep("\"training.global_batch\" = [16, 32]\n"
                                     "[[sweep.case]]\n\"training.global_batch\" = 64\n\"training.seq_len\" = 256\n"
                                     "[[sweep.case]]\n\"parallel.micro_batch\" = 2\n"));
  EXPECT_EQ(d.spec().columns,
            (std::vector<std::string>{"training.global_batch", "training.seq_len", "parallel.micro_batch"}));
  EXPECT_EQ(d.spec().grid_points, 2u);
  EXPECT_EQ(d.spec().points, 4u);
  EXPECT_EQ(grid(d), (Values{{"16", "512", "1"}, {"32", "512", "1"}, {"64", "256", "1"}, {"16", "512", "2"}}));
  auto sc = d.scenario(3);
  ASSERT_TRUE(sc) << test::all_errors(sc.errors());
  EXPECT_EQ(sc->plan->micro_batch, 2);
}

TEST(SweepGrammar, CommandEngineAndObjective) {
  EXPECT_EQ(sweep_of(with_sweep("\"training.seq_len\" = [256]\n")).spec().command, io::SweepCommand::Estimate);
  const auto s = sweep_of(with_sweep("command = \"simulate\"\nengine = \"simgrid\"\n\"training.seq_len\" = [256]\n"));
  EXPECT_EQ(s.spec().command, io::SweepCommand::Simulate);
  EXPECT_TRUE(s.spec().simgrid);
  const auto p = sweep_of(with_sweep("command = \"plan\"\nobjective = \"cost\"\n\"training.seq_len\" = [256]\n"));
  EXPECT_EQ(p.spec().command, io::SweepCommand::Plan);
  EXPECT_TRUE(p.spec().cost_objective);
  EXPECT_NE(errors_of(with_sweep("engine = \"simgrid\"\n\"training.seq_len\" = [256]\n"))
                .find("engine applies to command = \"simulate\""),
            std::string::npos);
}

struct GrammarError {
  const char* name;
  std::string sweep;
  const char* where;
  const char* says;
};

void PrintTo(const GrammarError& e, std::ostream* os) { *os << e.name; }

class SweepGrammarErrors : public testing::TestWithParam<GrammarError> {};

TEST_P(SweepGrammarErrors, SayWhereAndWhat) {
  const std::string e = errors_of(with_sweep(GetParam().sweep));
  EXPECT_NE(e.find(GetParam().where), std::string::npos) << e;
  EXPECT_NE(e.find(GetParam().says), std::string::npos) << e;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SweepGrammarErrors,
    testing::Values(
        GrammarError{"empty_list", "\"training.seq_len\" = []\n", "sw.toml:17:22", "has no values"},
        GrammarError{"scalar_axis", "\"training.seq_len\" = 512\n", "sw.toml:17:", "expected a list of values or a range"},
        GrammarError{"misspelt_setting", "comand = \"plan\"\n\"training.seq_len\" = [1]\n", "sw.toml:17:1",
                     "did you mean 'command'"},
        GrammarError{"two_kinds_of_range", "\"training.seq_len\" = { from = 1, to = 8, step = 1, times = 2 }\n",
                     "sw.toml:17:", "exactly one of step, times and count"},
        GrammarError{"step_the_wrong_way", "\"training.seq_len\" = { from = 8, to = 1, step = 1 }\n", "sw.toml:17:",
                     "never goes from 8 to 1"},
        GrammarError{"times_of_one", "\"training.seq_len\" = { from = 1, to = 8, times = 1 }\n", "sw.toml:17:",
                     "times = 1 never goes"},
        GrammarError{"units_differ", "\"cluster.network.nic_bandwidth\" = { from = \"1Gbps\", to = \"8GBps\", times = 2 }\n",
                     "sw.toml:17:", "different units"},
        GrammarError{"missing_to", "\"training.seq_len\" = { from = 1, step = 1 }\n", "sw.toml:17:",
                     "missing key 'to'"},
        GrammarError{"index_out_of_range", "\"cluster.pool[1].nodes\" = [1, 2]\n", "sw.toml:17:",
                     "'cluster.pool' has 1 entry (indices from 0), so no [1]"},
        GrammarError{"into_a_value", "\"training.seq_len.x\" = [1]\n", "sw.toml:17:",
                     "'training.seq_len' is an integer, not a table"},
        GrammarError{"not_a_path", "\"training..seq_len\" = [1]\n", "sw.toml:17:", "is not a key path"},
        GrammarError{"two_axes_one_key", "\"cluster.pool[0].nodes\" = [1]\n\"cluster.pool.0.nodes\" = [2]\n",
                     "sw.toml:18:", "has two axes"},
        GrammarError{"nothing_to_sweep", "command = \"estimate\"\n", "sw.toml:16:1", "no axes and no cases"},
        GrammarError{"too_many_points",
                     "\"training.seq_len\" = { from = 1, to = 1000, step = 1 }\n"
                     "\"training.global_batch\" = { from = 1, to = 1000, step = 1 }\n"
                     "\"training.tokens\" = { from = 1, to = 1000, step = 1 }\n",
                     "sw.toml:16:1", "more than 10000000"}),
    [](const testing::TestParamInfo<GrammarError>& i) { return std::string(i.param.name); });

TEST(SweepGrammar, AScenarioWithoutSweepIsAnError) {
  EXPECT_NE(errors_of(test::minimal()).find("no [sweep] table"), std::string::npos);
}

TEST(SweepPoints, AnInvalidPointIsReportedWithItsValuesAndTheReadersOwnMessage) {
  // global_batch 18 does not split over dp = 4; the device name is misspelt in point 1's column.
  const auto d = sweep_of(with_sweep("\"cluster.pool[0].device\" = [\"h100-sxm5\", \"h100-sxm\"]\n"
                                     "\"training.global_batch\" = [16, 18]\n"));
  const sweep::Validation v = sweep::validate(d, 2);
  EXPECT_EQ(v.invalid, 3u);  // points 1, 2 and 3
  const std::string e = test::all_errors(v.errors);
  EXPECT_NE(e.find("sweep point 1 (cluster.pool[0].device = h100-sxm5, training.global_batch = 18)"), std::string::npos) << e;
  EXPECT_NE(e.find("global_batch (18) is not divisible"), std::string::npos) << e;
  // The reader's message, at the axis that gave the value (the value has no line of its own).
  EXPECT_NE(e.find("sw.toml:17:28: error: sweep point 2 (cluster.pool[0].device = h100-sxm, training.global_batch = 16): "
                   "unknown device 'h100-sxm'"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("sweep point 0 "), std::string::npos) << e;
  // The same report whatever the number of threads.
  EXPECT_EQ(test::all_errors(sweep::validate(d, 1).errors), e);
}

TEST(SweepPoints, SharesOfTheValidationMergeIntoTheWholeOnes) {
  // 7 of 10 points invalid (a misspelt device; global_batch 18 and 34 do not split over dp = 4),
  // checked in three shares (points i % 3 == 0, 1, 2) as the ranks of an mpirun check them.
  const auto d = sweep_of(with_sweep("\"cluster.pool[0].device\" = [\"h100-sxm5\", \"h100-sxm\"]\n"
                                     "\"training.global_batch\" = [16, 18, 32, 34, 48]\n"));
  for (std::size_t reported : {3u, 20u}) {
    const sweep::Validation want = sweep::validate(d, 1, reported);
    ASSERT_EQ(want.invalid, 7u);
    std::vector<sweep::Validation> shares;
    for (std::size_t k : {2u, 0u, 1u}) shares.push_back(sweep::validate(d, 2, reported, {k, 3}));
    EXPECT_LT(shares[0].invalid, want.invalid);
    const sweep::Validation got = sweep::merge(shares, reported);
    EXPECT_EQ(got.invalid, want.invalid);
    EXPECT_EQ(test::all_errors(got.errors), test::all_errors(want.errors)) << reported;
    EXPECT_EQ(got.error_points, want.error_points) << reported;
    EXPECT_EQ(got.pools, want.pools);
    EXPECT_EQ(got.variability, want.variability);
  }
}

TEST(SweepPoints, AKeyTheReaderDoesNotKnowIsItsUnknownKeyMessageAtTheAxis) {
  const auto d = sweep_of(with_sweep("\"training.global_bach\" = [16]\n"));
  const std::string e = test::all_errors(sweep::validate(d, 1).errors);
  EXPECT_NE(e.find("sw.toml:17:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'global_bach' in [training]"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'global_batch'"), std::string::npos) << e;
}

TEST(SweepPoints, EstimateAndSimulateNeedAPlanEachPoint) {
  const auto d = sweep_of(test::minimal("").substr(0, test::minimal("").find("[parallel]")) +
                          "[sweep]\n\"training.seq_len\" = [256]\n");
  EXPECT_NE(test::all_errors(sweep::validate(d, 1).errors).find("needs a fixed plan"), std::string::npos);
}

// The scenario text of a point written by hand: minimal() with its values.
std::string point_text(int global_batch, int micro_batch, int dp, int nodes = 2) {
  std::string s = test::minimal("tp = 2\npp = 2\ndp = " + std::to_string(dp) + "\nmicro_batch = " + std::to_string(micro_batch) + "\n");
  s.replace(s.find("global_batch = 16"), 17, "global_batch = " + std::to_string(global_batch));
  s.replace(s.find("nodes = 2"), 9, "nodes = " + std::to_string(nodes));
  return s;
}

TEST(SweepRun, RowsComeInPointOrderAndEqualSingleRuns) {
  // A token target, so that the time and cost to train are figures, not zeros.
  auto with_tokens = [](std::string t) { return t.replace(t.find("seq_len = 512\n"), 14, "seq_len = 512\ntokens = 1e10\n"); };
  const auto d = sweep_of(with_tokens(with_sweep("\"training.global_batch\" = { from = 16, to = 64, step = 16 }\n"
                                                 "\"parallel.micro_batch\" = [1, 2, 4]\n"
                                                 "[[sweep.case]]\n\"parallel.dp\" = 2\n\"training.global_batch\" = 8\n\"cluster.pool[0].nodes\" = 1\n")));
  ASSERT_TRUE(sweep::validate(d, 2).errors.empty());
  std::vector<sweep::Row> rows;
  sweep::RunOptions opts;
  opts.jobs = 3;
  opts.encoding = whole(d);
  opts.on_row = [&](const sweep::Finished& r) { rows.push_back(*r.row); };
  EXPECT_EQ(sweep::run(d, opts), 13u);
  ASSERT_EQ(rows.size(), 13u);
  std::size_t i = 0;
  for (int gb : {16, 32, 48, 64})
    for (int mb : {1, 2, 4}) {
      const auto& r = rows[i];
      EXPECT_EQ(r.point, i);
      auto sc = test::parse(with_tokens(point_text(gb, mb, 4)));
      ASSERT_TRUE(sc) << test::all_errors(sc.errors());
      const auto e = api::estimate(*sc, *sc->plan);
      EXPECT_TRUE(r.ok) << r.error;
      EXPECT_EQ(r.values, (std::vector<std::string>{std::to_string(gb), std::to_string(mb), "4", "2"}));
      EXPECT_EQ(r.step_s, e.step_time.v);  // bit for bit: the same scenario, the same estimate
      EXPECT_EQ(r.tokens_per_s, e.tokens_per_s);
      EXPECT_EQ(r.mfu, e.mfu);
      EXPECT_EQ(r.devices, e.devices);
      EXPECT_EQ(r.plan, report::plan_summary(*sc, *sc->plan));
      EXPECT_GT(r.time_to_train_s, 0.0);
      EXPECT_EQ(r.time_to_train_s, e.time_to_train.v);
      EXPECT_EQ(r.goodput, e.goodput.fraction);
      EXPECT_EQ(r.effective_time_to_train_s, e.time_to_train.v / e.goodput.fraction);
      EXPECT_GT(r.cost_to_train_usd, 0.0);
      EXPECT_EQ(r.cost_to_train_usd, e.cost_to_train_usd);
      ASSERT_EQ(r.pools.size(), 1u);
      EXPECT_EQ(r.pools[0].peak_bytes, e.device_types[0].peak_memory.v);
      EXPECT_EQ(r.pools[0].capacity_bytes, e.device_types[0].capacity.v);
      EXPECT_EQ(r.pools[0].devices, e.device_types[0].count);
      EXPECT_EQ(r.pools[0].fits, e.device_types[0].fits);
      ++i;
    }
  auto sc = test::parse(with_tokens(point_text(8, 1, 2, 1)));
  ASSERT_TRUE(sc);
  EXPECT_EQ(rows[12].point, 12u);
  EXPECT_EQ(rows[12].step_s, api::estimate(*sc, *sc->plan).step_time.v);
}

TEST(SweepRun, TheSameLinesWhateverTheNumberOfThreads) {
  const auto d = sweep_of(with_sweep("\"training.global_batch\" = { from = 16, to = 256, step = 16 }\n"
                                     "\"parallel.micro_batch\" = [1, 2, 4]\n"));
  sweep::Layout l{&d.spec(), sweep::validate(d, 1).pools};
  auto lines = [&](int jobs, sweep::Format f) {
    std::string out = sweep::file_header(f, l);
    sweep::RunOptions o;
    o.jobs = jobs;
    o.encoding = {l, f, true, false, false};  // the lines made on the threads that ran the points
    o.on_row = [&](const sweep::Finished& r) { out += r.line; };
    (void)sweep::run(d, o);
    return out;
  };
  for (auto f : {sweep::Format::Csv, sweep::Format::Jsonl}) {
    const std::string one = lines(1, f);
    EXPECT_EQ(lines(4, f), one);
    EXPECT_EQ(std::count(one.begin(), one.end(), '\n'), 48 + (f == sweep::Format::Csv ? 2 : 1));
  }
}

TEST(SweepRun, APointThatDoesNotFitIsARowWithItsErrorAndTheSweepGoesOn) {
  // Llama 3 70B's weights and Adam state over tp 2 · pp 2 are some 280 GB per H100.
  const auto d = sweep_of(with_sweep("\"model.preset\" = [\"tiny\", \"llama3-70b\", \"llama3-8b\"]\n"));
  std::vector<sweep::Row> rows;
  sweep::RunOptions o;
  o.jobs = 2;
  o.encoding = whole(d);
  o.on_row = [&](const sweep::Finished& r) { rows.push_back(*r.row); };
  ASSERT_EQ(sweep::run(d, o), 3u);
  EXPECT_TRUE(rows[0].ok);
  EXPECT_FALSE(rows[1].ok);
  EXPECT_EQ(rows[1].kind, ErrorKind::DoesNotFit);
  EXPECT_EQ(rows[1].status(), "does_not_fit");
  EXPECT_NE(rows[1].error.find("does not fit in memory on pool"), std::string::npos) << rows[1].error;
  EXPECT_TRUE(rows[1].has_figures);
  EXPECT_FALSE(rows[1].pools[0].fits);
  EXPECT_TRUE(rows[2].ok);
}

TEST(SweepRun, SimulateRowsEqualTheSimulationOfEachPoint) {
  const auto d = sweep_of(with_sweep("command = \"simulate\"\n\"parallel.micro_batch\" = [1, 2]\n"));
  std::vector<sweep::Row> rows;
  sweep::RunOptions o;
  o.jobs = 2;
  o.encoding = whole(d);
  o.on_row = [&](const sweep::Finished& r) { rows.push_back(*r.row); };
  ASSERT_EQ(sweep::run(d, o), 2u);
  for (int mb : {1, 2}) {
    auto sc = test::parse(point_text(16, mb, 4));
    ASSERT_TRUE(sc);
    auto sim = api::simulate(*sc, *sc->plan);
    ASSERT_TRUE(sim);
    const auto& r = rows[static_cast<std::size_t>(mb - 1)];
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.step_s, sim->sim.simulated.step_time.v);
    EXPECT_NE(r.step_s, api::estimate(*sc, *sc->plan).step_time.v);  // the engine's, not the closed form's
  }
}

TEST(SweepRun, PlanRowsCarryTheSearchsBestPlan) {
  const auto d = sweep_of(with_sweep("command = \"plan\"\n\"cluster.pool[0].nodes\" = [1, 2]\n"));
  std::vector<sweep::Row> rows;
  sweep::RunOptions o;
  o.encoding = whole(d);
  o.on_row = [&](const sweep::Finished& r) { rows.push_back(*r.row); };
  ASSERT_EQ(sweep::run(d, o), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    auto sc = d.scenario(i);
    ASSERT_TRUE(sc);
    auto planned = api::plan(*sc, {});
    ASSERT_TRUE(planned);
    ASSERT_FALSE(planned->result.top.empty());
    EXPECT_TRUE(rows[i].ok) << rows[i].error;
    EXPECT_EQ(rows[i].plan, report::plan_summary(*sc, planned->result.top.front().plan));
    EXPECT_EQ(rows[i].devices, planned->result.top.front().estimate.devices);
  }
}

TEST(SweepRun, AStopEndsTheRunWithTheRowsBeforeInOrder) {
  const auto d = sweep_of(with_sweep("\"training.global_batch\" = { from = 16, to = 1600, step = 16 }\n"));
  std::stop_source stop;
  std::vector<std::size_t> seen;
  sweep::RunOptions o;
  o.jobs = 2;
  o.stop = stop.get_token();
  o.on_row = [&](const sweep::Finished& r) {
    seen.push_back(r.point);
    if (seen.size() == 10) stop.request_stop();
  };
  const std::size_t n = sweep::run(d, o);
  EXPECT_GE(n, 10u);
  EXPECT_LT(n, 100u);
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
  // --resume: the rest from where it stopped.
  o.first = n;
  o.stop = {};
  EXPECT_EQ(sweep::run(d, o), 100u - n);
  EXPECT_EQ(seen.size(), 100u);
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
}

TEST(SweepRun, RowsFinishedByAnEarlierRunAreDeliveredNotRunAgain) {
  const auto d = sweep_of(with_sweep("\"training.global_batch\" = { from = 16, to = 160, step = 16 }\n"));
  sweep::RunOptions o;
  o.jobs = 2;
  o.first = 2;
  sweep::Row kept = sweep::run_point(d, 6);
  kept.step_s = -1;  // a marker: this row, not a new run of point 6
  o.encoding = whole(d);
  o.finished.emplace(6, sweep::finish(o.encoding, kept));
  o.finished.emplace(1, sweep::finish(o.encoding, sweep::run_point(d, 1)));  // before `first`: ignored
  std::atomic<int> runs{0};
  o.runner = [&](std::size_t i) {
    ++runs;
    EXPECT_NE(i, 6u);
    return sweep::run_point(d, i);
  };
  std::vector<sweep::Row> rows;
  o.on_row = [&](const sweep::Finished& r) { rows.push_back(*r.row); };
  EXPECT_EQ(sweep::run(d, o), 8u);
  EXPECT_EQ(runs.load(), 7);
  ASSERT_EQ(rows.size(), 8u);
  for (std::size_t k = 0; k < rows.size(); ++k) EXPECT_EQ(rows[k].point, k + 2);
  EXPECT_EQ(rows[4].step_s, -1);
}

TEST(SweepRun, RowsThatWaitForAnEarlierPointAreHandedOverMeanwhile) {
  // Point 0 finishes only once three later points have been handed to on_waiting (which the CLI
  // keeps in FILE.pending): without that hand-over it gives up after 20 s and the test fails.
  const auto d = sweep_of(with_sweep("\"training.global_batch\" = { from = 16, to = 160, step = 16 }\n"));
  std::mutex mu;
  std::vector<std::size_t> waiting;
  std::size_t handed_before_0 = 0;
  auto handed = [&] {
    std::lock_guard lock(mu);
    return waiting.size();
  };
  sweep::RunOptions o;
  o.jobs = 3;
  o.runner = [&](std::size_t i) {
    if (i == 0)
      for (int k = 0; k < 20000 && handed() < 3; ++k) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return sweep::run_point(d, i);
  };
  o.on_waiting = [&](const sweep::Finished& r) {
    std::lock_guard lock(mu);
    waiting.push_back(r.point);
  };
  o.on_row = [&](const sweep::Finished& r) {
    std::lock_guard lock(mu);
    if (r.point == 0) handed_before_0 = waiting.size();
  };
  EXPECT_EQ(sweep::run(d, o), 10u);
  EXPECT_GE(handed_before_0, 3u);
  for (auto i : waiting) EXPECT_NE(i, 0u);
  EXPECT_EQ(std::set<std::size_t>(waiting.begin(), waiting.end()).size(), waiting.size());  // each once
}

TEST(SweepRun, EveryRowIsFollowedByABurstsEndBeforeTheRunReturns) {
  // The CLI flushes its files at on_burst: no row handed over may be left unflushed at the end,
  // and rows come in bursts (fewer flushes than rows when several are ready at once).
  const auto d = sweep_of(with_sweep("\"training.global_batch\" = { from = 16, to = 640, step = 16 }\n"));
  std::size_t unflushed = 0, rows = 0, bursts = 0, waiting = 0;
  sweep::RunOptions o;
  o.jobs = 3;
  o.on_row = [&](const sweep::Finished&) {
    ++rows;
    ++unflushed;
  };
  o.on_waiting = [&](const sweep::Finished&) {
    ++waiting;
    ++unflushed;
  };
  o.on_burst = [&] {
    ++bursts;
    unflushed = 0;
  };
  EXPECT_EQ(sweep::run(d, o), 40u);
  EXPECT_EQ(rows, 40u);
  EXPECT_EQ(unflushed, 0u);
  EXPECT_GE(bursts, 1u);
  EXPECT_LE(bursts, rows + waiting);
}

TEST(SweepFiles, ResumeKeepsTheRowsOfTheSameSweepAndDropsACutLine) {
  const auto d = sweep_of(with_sweep("\"training.global_batch\" = [16, 32, 48]\n"));
  sweep::Layout l{&d.spec(), {"h100-sxm5"}};
  for (auto f : {sweep::Format::Csv, sweep::Format::Jsonl}) {
    std::string file = sweep::file_header(f, l);
    const std::size_t header = file.size();
    auto r0 = sweep::run_point(d, 0), r1 = sweep::run_point(d, 1);
    file += sweep::row_line(f, l, r0);
    const std::size_t one = file.size();
    const std::string second = sweep::row_line(f, l, r1);
    auto e = sweep::check_existing(f, l, file + second.substr(0, 10), "out");
    ASSERT_TRUE(e) << test::all_errors(e.errors());
    EXPECT_EQ(e->rows, 1u);
    EXPECT_EQ(e->keep_bytes, one);
    e = sweep::check_existing(f, l, file + second, "out");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->rows, 2u);
    e = sweep::check_existing(f, l, file.substr(0, header), "out");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->rows, 0u);
    // Rows out of order are not this sweep's file.
    e = sweep::check_existing(f, l, file + second + second, "out");
    ASSERT_FALSE(e);
    EXPECT_NE(test::all_errors(e.errors()).find("is not the row of point 2"), std::string::npos);
  }
}

TEST(SweepFiles, ResumeRefusesAnotherSweepsFile) {
  const auto a = sweep_of(with_sweep("\"training.global_batch\" = [16, 32, 48]\n"));
  const auto b = sweep_of(with_sweep("\"training.global_batch\" = [16, 32, 64]\n"));
  EXPECT_NE(a.spec().hash, b.spec().hash);
  sweep::Layout la{&a.spec(), {"h100-sxm5"}}, lb{&b.spec(), {"h100-sxm5"}};
  const std::string file = sweep::file_header(sweep::Format::Csv, la) + sweep::row_line(sweep::Format::Csv, la, sweep::run_point(a, 0));
  auto e = sweep::check_existing(sweep::Format::Csv, lb, file, "out.csv");
  ASSERT_FALSE(e);
  EXPECT_NE(test::all_errors(e.errors()).find("written by a different sweep"), std::string::npos);
  // A CSV file is not a JSON-lines one.
  EXPECT_FALSE(sweep::check_existing(sweep::Format::Jsonl, la, file, "out.jsonl"));
}

TEST(SweepFiles, ResumeTakesTheSameSweepReadFromAnotherPath) {
  const std::string text = with_sweep("\"training.global_batch\" = [16, 32, 48]\n");
  auto a = io::parse_sweep(text, "sw.toml", test::catalog());
  auto b = io::parse_sweep(text, "/elsewhere/sw.toml", test::catalog());
  ASSERT_TRUE(a && b);
  for (auto f : {sweep::Format::Csv, sweep::Format::Jsonl}) {
    sweep::Layout la{&a->spec(), {"h100-sxm5"}}, lb{&b->spec(), {"h100-sxm5"}};
    const std::string file = sweep::file_header(f, la) + sweep::row_line(f, la, sweep::run_point(*a, 0));
    auto e = sweep::check_existing(f, lb, file, "out");
    ASSERT_TRUE(e) << test::all_errors(e.errors());
    EXPECT_EQ(e->rows, 1u);
    EXPECT_EQ(e->keep_bytes, file.size());
    ASSERT_EQ(sweep::read_rows(f, lb, file).size(), 1u);
    EXPECT_EQ(sweep::read_rows(f, lb, file)[0].step_s, sweep::run_point(*a, 0).step_s);
  }
}

// An array value (recompute_modules) is a column of compact JSON, and a JSON array in a row's
// values, which a JSONL row read back (resume) turns into the same column.
TEST(SweepFiles, AnArrayAxisIsAJsonArrayInTheRowsAndReadsBack) {
  const auto d = sweep_of(with_sweep("\"parallel.recompute_modules\" = [[\"core_attn\"], [\"mlp\", \"core_attn\"]]\n",
                                     "tp = 2\npp = 2\ndp = 4\nmicro_batch = 1\nrecompute = \"selective\"\n"));
  EXPECT_EQ(grid(d), (Values{{"[\"core_attn\"]"}, {"[\"mlp\",\"core_attn\"]"}}));
  sweep::Layout l{&d.spec(), {"h100-sxm5"}};
  const sweep::Row r = sweep::run_point(d, 1);
  EXPECT_TRUE(r.error.empty()) << r.error;
  const auto j = sweep::row_json(l, r);
  EXPECT_EQ(j["values"]["parallel.recompute_modules"], nlohmann::ordered_json::parse("[\"mlp\", \"core_attn\"]"));
  // (A JSONL row's values read back as their dump: sweep::read_rows.)
  EXPECT_EQ(nlohmann::json::parse(j.dump())["values"]["parallel.recompute_modules"].dump(), r.values[0]);
}

TEST(SweepFiles, ARowReadBackFromJsonIsTheSameRow) {
  const auto d = sweep_of(with_sweep("\"model.preset\" = [\"tiny\", \"llama3-70b\"]\n"));
  sweep::Layout l{&d.spec(), {"h100-sxm5"}};
  for (std::size_t i = 0; i < 2; ++i) {
    const sweep::Row r = sweep::run_point(d, i);
    sweep::Row back = sweep::row_from_json(nlohmann::json::parse(sweep::row_json(l, r).dump()));
    back.point = r.point;
    back.values = r.values;
    EXPECT_EQ(sweep::row_line(sweep::Format::Csv, l, back), sweep::row_line(sweep::Format::Csv, l, r));
  }
}

}  // namespace
}  // namespace hetsim

namespace hetsim {
namespace {

std::vector<sweep::Row> all_rows(const io::SweepDocument& d) {
  std::vector<sweep::Row> rows;
  sweep::RunOptions o;
  o.encoding = whole(d);
  o.on_row = [&](const sweep::Finished& r) { rows.push_back(*r.row); };
  (void)sweep::run(d, o);
  return rows;
}

TEST(SweepPlot, LinesOfTheFigureAgainstTheFirstAxisOnePerValueOfTheSecond) {
  const auto d = sweep_of(with_sweep("\"training.global_batch\" = [16, 32, 64]\n\"parallel.micro_batch\" = [1, 2]\n"
                                     "[[sweep.case]]\n\"training.global_batch\" = 8\n\"parallel.dp\" = 2\n\"cluster.pool[0].nodes\" = 1\n"));
  const auto rows = all_rows(d);
  sweep::Layout l{&d.spec(), {"h100-sxm5"}};
  auto c = sweep::make_chart(l, rows, {"tokens_per_s", "", "", false});
  ASSERT_TRUE(c) << test::all_errors(c.errors());
  EXPECT_FALSE(c->heatmap);
  EXPECT_EQ(c->x_label, "training.global_batch (sequences)");
  EXPECT_EQ(c->y_label, "throughput (tokens/s)");
  EXPECT_TRUE(c->x_numeric);
  EXPECT_FALSE(c->x_log);  // 16 … 64 spans less than 100×
  EXPECT_EQ(c->x, (std::vector<double>{16, 32, 64}));  // the case (global_batch 8) is left out
  ASSERT_EQ(c->series.size(), 2u);
  EXPECT_EQ(c->series[1].name, "parallel.micro_batch = 2");
  // Series b, point x is grid point 2x + b.
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t x = 0; x < 3; ++x) EXPECT_EQ(*c->series[b].y[x], rows[2 * x + b].tokens_per_s);
}

TEST(SweepPlot, HeatMapScalesItsFigureAndHoldsOtherAxesAtPointZero) {
  const auto d = sweep_of(with_sweep("\"training.seq_len\" = [256, 512]\n"
                                     "\"training.global_batch\" = [16, 32, 64]\n\"parallel.micro_batch\" = [1, 2]\n"));
  const auto rows = all_rows(d);
  sweep::Layout l{&d.spec(), {"h100-sxm5"}};
  auto c = sweep::make_chart(l, rows, {"mfu", "parallel.micro_batch", "training.global_batch", true});
  ASSERT_TRUE(c) << test::all_errors(c.errors());
  EXPECT_TRUE(c->heatmap);
  EXPECT_EQ(c->subtitle, "at training.seq_len = 256");
  EXPECT_EQ(c->x_text, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(c->y_label, "training.global_batch (sequences)");
  EXPECT_EQ(c->value_label, "MFU (%)");
  ASSERT_EQ(c->series.size(), 3u);
  EXPECT_EQ(c->series[2].name, "64");
  // global_batch 64, micro_batch 2, seq_len 256 is point 5; MFU in per cent.
  EXPECT_EQ(*c->series[2].y[1], rows[5].mfu * 100);
}

TEST(SweepPlot, AFailedPointIsAGapAndBadOptionsAreErrors) {
  const auto d = sweep_of(with_sweep("\"model.preset\" = [\"tiny\", \"llama3-70b\"]\n"));
  const auto rows = all_rows(d);
  sweep::Layout l{&d.spec(), {"h100-sxm5"}};
  auto c = sweep::make_chart(l, rows, {"step_s", "", "", false});
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->x_numeric);
  EXPECT_TRUE(c->series[0].y[0].has_value());
  EXPECT_FALSE(c->series[0].y[1].has_value());  // does not fit: no step time to draw
  // Peak memory is drawn for a plan that does not fit too: it says by how much.
  auto m = sweep::make_chart(l, rows, {"h100-sxm5.peak_GiB", "", "", false});
  ASSERT_TRUE(m);
  EXPECT_GT(*m->series[0].y[1], 80.0);
  EXPECT_NE(test::all_errors(sweep::make_chart(l, rows, {"speed", "", "", false}).errors()).find("one of step_s"),
            std::string::npos);
  EXPECT_NE(test::all_errors(sweep::make_chart(l, rows, {"step_s", "model.name", "", false}).errors())
                .find("'model.name' is not an axis"),
            std::string::npos);
  EXPECT_NE(test::all_errors(sweep::make_chart(l, rows, {"step_s", "", "", true}).errors()).find("needs two axes"),
            std::string::npos);
}

}  // namespace
}  // namespace hetsim
