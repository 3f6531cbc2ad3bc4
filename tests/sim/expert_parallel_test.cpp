// Expert parallelism in the task graph and the native engine (issue 15, item 4): each compute
// unit's dispatch and combine all-to-alls are their own task on their own stream, blocking the
// compute as the TP collectives do; the step is what it was when they rode in the TP task, to
// the nanosecond; the Chrome trace shows them as their own track.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "models/workload/layer_ops.hpp"
#include "models/workload/model_spec.hpp"
#include "sim/analytic/stage_cost.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/engine/summary.hpp"
#include "sim/report/simulation_report.hpp"
#include "sim/schedule/schedule.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

using schedule::Stream;
using schedule::TaskKind;

// Mixtral cut to 4 layers on 2 nodes of 8 H100: tp 2 · pp 2 · dp 4, ep 4 (EP ranks two apart).
std::string moe(const std::string& parallel, const std::string& model = "",
                const std::string& layout = "tp = 2\npp = 2\ndp = 4\nep = 4\n") {
  return "[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\n" + model +
         "[training]\nglobal_batch = 32\nseq_len = 2048\n"
         "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n"
         "[parallel]\n" + layout + "micro_batch = 1\n" + parallel;
}

using test::load;

// The graph as the schedule built it before the all-to-alls had their own task: each EP task
// folded into the unit's TP collective before it (its only blocking predecessor on the device),
// or, where the unit has no TP collective (tp 1), the EP task itself on the TP stream.
schedule::TaskGraph folded(const schedule::TaskGraph& g) {
  const auto n = static_cast<std::uint32_t>(g.size());
  std::vector<std::uint32_t> into(n);
  for (std::uint32_t i = 0; i < n; ++i) into[i] = i;
  std::vector<std::uint32_t> tp_before(n, schedule::kNoCollective);
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1]; ++k) {
      const auto& a = g.tasks[i];
      const auto& b = g.tasks[g.succ[k]];
      if (a.kind == TaskKind::TpCollective && b.kind == TaskKind::EpAllToAll && a.device == b.device &&
          a.chunk == b.chunk && a.micro_batch == b.micro_batch)
        tp_before[g.succ[k]] = i;
    }
  schedule::TaskGraph f;
  f.devices = g.devices;
  std::vector<std::uint32_t> id(n, schedule::kNoCollective);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (tp_before[i] != schedule::kNoCollective) {
      into[i] = tp_before[i];
      continue;
    }
    id[i] = static_cast<std::uint32_t>(f.tasks.size());
    f.tasks.push_back(g.tasks[i]);
    if (f.tasks.back().kind == TaskKind::EpAllToAll) {
      f.tasks.back().kind = TaskKind::TpCollective;
      f.tasks.back().stream = Stream::TpComm;
    }
  }
  for (std::uint32_t i = 0; i < n; ++i)
    if (into[i] != i) f.tasks[id[into[i]]].duration += g.tasks[i].duration;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1]; ++k) {
      const std::uint32_t a = id[into[i]], b = id[into[g.succ[k]]];
      if (a != b) edges.emplace_back(a, b);
    }
  f.collectives = g.collectives;
  for (auto& members : f.collectives)
    for (auto& m : members) m = id[into[m]];
  schedule::finalize(f, edges);
  return f;
}

// Micro-batches × chunks × passes: one EP task after every forward and every backward unit
// (recompute's all-to-alls ride with the backward's), each on the EP stream, blocking the
// device's next compute, named for its unit.
TEST(ExpertParallel, EveryComputeUnitHasItsAllToAllTask) {
  for (const std::string& parallel : {std::string("schedule = \"1f1b\"\n"),
                                      std::string("schedule = \"interleaved\"\nvirtual_stages = 2\nrecompute = \"full\"\n")}) {
    const Scenario s = load(moe(parallel));
    ASSERT_TRUE(s.plan);
    const auto g = schedule::build_schedule(s, *s.plan);
    auto r = engine::run_native(g);
    ASSERT_TRUE(r.ok());
    const int v = s.plan->virtual_stages, m = s.plan->groups[0].micro_batches, pp = 2;
    ASSERT_EQ(m, 8) << parallel;  // 32 sequences over dp 4
    int ep = 0;
    std::map<std::pair<std::int32_t, std::int32_t>, int> per_unit;  // (chunk, micro-batch) → tasks
    for (std::uint32_t i = 0; i < g.size(); ++i) {
      const auto& t = g.tasks[i];
      EXPECT_EQ(t.kind == TaskKind::EpAllToAll, t.stream == Stream::EpComm) << schedule::task_name(t);
      if (t.kind != TaskKind::EpAllToAll) continue;
      ++ep;
      ++per_unit[{t.chunk, t.micro_batch}];
      EXPECT_GT(t.duration, 0);
      EXPECT_EQ(schedule::task_name(t), "ep a2a L" + std::to_string(t.first_layer) +
                                            (t.layers > 1 ? "-" + std::to_string(t.first_layer + t.layers - 1) : "") +
                                            " mb" + std::to_string(t.micro_batch));
      if (v == 1 && t.device == 0 && t.micro_batch == 2) {
        EXPECT_EQ(schedule::task_name(t), "ep a2a L0-1 mb2");
      }
      // It follows its unit's TP collective (tp 2), and the device computes nothing more until
      // it ends (the tasks of a device are listed in the order it runs them).
      bool after_tp = false;
      for (std::uint32_t j = 0; j < g.size(); ++j)
        for (std::uint32_t k = g.succ_begin[j]; k < g.succ_begin[j + 1]; ++k)
          if (g.succ[k] == i && g.tasks[j].kind == TaskKind::TpCollective && g.tasks[j].chunk == t.chunk &&
              g.tasks[j].micro_batch == t.micro_batch)
            after_tp = true;
      EXPECT_TRUE(after_tp) << schedule::task_name(t);
      int later = 0;
      for (std::uint32_t j = i + 1; j < g.size(); ++j) {
        if (g.tasks[j].device != t.device || g.tasks[j].stream != Stream::Compute) continue;
        EXPECT_GE(r->start[j], r->end[i]) << schedule::task_name(t) << " / " << schedule::task_name(g.tasks[j]);
        ++later;
      }
      EXPECT_GT(later, 0) << schedule::task_name(t);  // at least the optimizer
    }
    EXPECT_EQ(ep, m * v * pp * 2) << parallel;  // micro-batches × chunks × (forward, backward)
    EXPECT_EQ(per_unit.size(), static_cast<std::size_t>(m * v * pp)) << parallel;
    for (const auto& [unit, n] : per_unit) EXPECT_EQ(n, 2) << "chunk " << unit.first << " mb " << unit.second;
    for (const auto& d : g.devices) EXPECT_EQ(d.ep, 4);
  }
  // A dense model, or ep 1: no EP task.
  for (const std::string& text : {moe("", "", "tp = 2\npp = 2\ndp = 4\n"), test::minimal()}) {
    const Scenario s = load(text);
    ASSERT_TRUE(s.plan);
    const auto g = schedule::build_schedule(s, *s.plan);
    EXPECT_EQ(std::count_if(g.tasks.begin(), g.tasks.end(), [](const auto& t) { return t.stream == Stream::EpComm; }), 0);
  }
}

// The tasks take the cost model's time: per forward unit the TP and EP tasks together last what
// the unit's TP collectives and 2 all-to-alls per MoE layer do (rounded once), the EP task the
// all-to-all part (to the nanosecond of that rounding).
TEST(ExpertParallel, TheTasksSplitTheUnitsCommunicationTime) {
  const Scenario s = load(moe(""));
  ASSERT_TRUE(s.plan);
  const auto g = schedule::build_schedule(s, *s.plan);
  const auto c = analytic::stage_costs(s, *s.plan).at(0).at(1);  // stage 1: no embedding
  ASSERT_GT(c.layer_ep_fwd.v, 0);
  // A device's tasks are listed in the order it runs them: the first of micro-batch 3 are its
  // forward's.
  schedule::SimTime tp = -1, ep = -1;
  for (const auto& t : g.tasks)
    if (t.device == 1 && t.micro_batch == 3) {
      if (t.kind == TaskKind::TpCollective && tp < 0) tp = t.duration;
      if (t.kind == TaskKind::EpAllToAll && ep < 0) ep = t.duration;
    }
  ASSERT_GE(tp, 0);
  ASSERT_GE(ep, 0);
  const int layers = 2;
  const schedule::SimTime both = schedule::to_ns((c.layer_tp_fwd + c.layer_ep_fwd) * layers +
                                                 (c.head_tp / 2));  // the last stage's forward: half the head's
  EXPECT_EQ(tp + ep, both);
  EXPECT_LE(std::abs(ep - schedule::to_ns(c.layer_ep_fwd * layers)), 1);
}

// The native engine's step, and every task's times, are those of the graph whose TP task carries
// the all-to-alls too (the schedule before they had their own task): for 1F1B, interleaved with
// full recompute, interleaved under ZeRO 2 with routing skew, and tp 1 (no TP task to fold
// into). (overlap_ep_comm places a paired backward's all-to-alls after the next unit's compute,
// which that fold cannot express: ExpertParallel.OverlappedAllToAllsWaitAfterTheNextUnitsCompute.)
TEST(ExpertParallel, TheNativeStepIsUnchangedToTheNanosecond) {
  for (const std::string& text :
       {moe(""), moe("schedule = \"interleaved\"\nvirtual_stages = 2\nrecompute = \"full\"\n"),
        moe("zero = 2\nschedule = \"interleaved\"\nvirtual_stages = 2\n", "routing_skew = 1.2\n"),
        moe("", "", "tp = 1\npp = 2\ndp = 8\nep = 4\n")}) {
    const Scenario s = load(text);
    ASSERT_TRUE(s.plan) << text;
    const auto g = schedule::build_schedule(s, *s.plan);
    const auto f = folded(g);
    // (tp 1: no TP task to fold into; the EP tasks move to the TP stream.)
    const bool tp = std::any_of(g.tasks.begin(), g.tasks.end(), [](const auto& t) { return t.kind == TaskKind::TpCollective; });
    EXPECT_EQ(f.size() < g.size(), tp) << text;
    EXPECT_EQ(std::count_if(f.tasks.begin(), f.tasks.end(), [](const auto& t) { return t.kind == TaskKind::EpAllToAll; }), 0);
    auto now = engine::run_native(g);
    auto before = engine::run_native(f);
    ASSERT_TRUE(now.ok() && before.ok()) << text;
    EXPECT_EQ(now->makespan, before->makespan) << text;
    EXPECT_EQ(now->peak_bytes, before->peak_bytes) << text;
    // Every compute task starts and ends when it did.
    std::vector<schedule::SimTime> starts_now, starts_before;
    for (std::uint32_t i = 0; i < g.size(); ++i)
      if (g.tasks[i].stream == Stream::Compute) starts_now.push_back(now->start[i]);
    for (std::uint32_t i = 0; i < f.size(); ++i)
      if (f.tasks[i].stream == Stream::Compute) starts_before.push_back(before->start[i]);
    EXPECT_EQ(starts_now, starts_before) << text;
    // The summary moves the all-to-alls' busy time from the TP stream to the EP stream.
    const auto sn = engine::summarize(g, *now), sb = engine::summarize(f, *before);
    for (std::size_t d = 0; d < g.devices.size(); ++d) {
      const auto& un = sn.devices[d].stream_fraction;
      const auto& ub = sb.devices[d].stream_fraction;
      EXPECT_GT(un[4], 0) << text;
      EXPECT_EQ(ub[4], 0) << text;
      EXPECT_NEAR(un[1] + un[4], ub[1], 1e-12) << text;
      EXPECT_EQ(sn.devices[d].bubble, sb.devices[d].bubble) << text;
    }
    EXPECT_EQ(sn.exposed_comm, sb.exposed_comm) << text;
  }
}

// overlap_ep_comm keeps the cost model's exposed share: each EP task is its stage's `keep` of
// the all-to-alls it stands for (within the rounding of a nanosecond per task). The stages keep
// different shares: stage 0 has one more warm-up forward without a partner than stage 1.
TEST(ExpertParallel, OverlappedAllToAllsKeepTheCostModelsShare) {
  const Scenario a = load(moe("")), b = load(moe("overlap_ep_comm = true\n"));
  ASSERT_TRUE(a.plan && b.plan);
  const auto ca = analytic::stage_costs(a, *a.plan).at(0), cb = analytic::stage_costs(b, *b.plan).at(0);
  std::vector<double> keep;
  for (std::size_t si = 0; si < ca.size(); ++si) {
    keep.push_back(cb[si].layer_ep_fwd / ca[si].layer_ep_fwd);
    ASSERT_LT(keep.back(), 1.0);
    ASSERT_GT(keep.back(), 0.0);
  }
  ASSERT_EQ(keep.size(), 2u);
  EXPECT_GT(keep[0], keep[1]);
  const auto ga = schedule::build_schedule(a, *a.plan), gb = schedule::build_schedule(b, *b.plan);
  ASSERT_EQ(ga.size(), gb.size());
  int n = 0;
  for (std::uint32_t i = 0; i < ga.size(); ++i) {
    if (ga.tasks[i].kind != TaskKind::EpAllToAll) continue;
    ASSERT_EQ(gb.tasks[i].kind, TaskKind::EpAllToAll);
    const double k = keep.at(static_cast<std::size_t>(gb.devices[gb.tasks[i].device].stage));
    EXPECT_NEAR(static_cast<double>(gb.tasks[i].duration), k * static_cast<double>(ga.tasks[i].duration), 2.0);
    ++n;
  }
  EXPECT_GT(n, 0);
}

// The graph as the schedule built it before overlap_ep_comm placed tasks beside the next unit:
// each overlapped all-to-all blocking that unit's compute again (an edge to each of its compute
// tasks instead of one from its last).
schedule::TaskGraph blocking_again(const schedule::TaskGraph& g) {
  schedule::TaskGraph b;
  b.devices = g.devices;
  b.tasks = g.tasks;
  b.collectives = g.collectives;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 0; i < g.size(); ++i)
    for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1]; ++k) {
      const auto& x = g.tasks[g.succ[k]];
      const auto& y = g.tasks[i];
      if (!x.overlapped || y.micro_batch == x.micro_batch || y.kind != TaskKind::Forward) {
        edges.emplace_back(i, g.succ[k]);
        continue;
      }
      for (std::uint32_t j = 0; j < g.size(); ++j)
        if (g.tasks[j].device == y.device && g.tasks[j].kind == TaskKind::Forward &&
            g.tasks[j].micro_batch == y.micro_batch && g.tasks[j].chunk == y.chunk)
          edges.emplace_back(g.succ[k], j);
    }
  for (auto& t : b.tasks) t.overlapped = false;
  schedule::finalize(b, edges);
  return b;
}

// overlap_ep_comm places each paired backward's all-to-all task of the first stage (the cost
// model pairs backward u with the forward after it: all but a stage's last in-flight backwards)
// after that forward's compute: its exchange runs beside that compute (the replay starts it when
// its own unit ends), the task is the exposed wait. The other stages' tasks (their backwards send
// a gradient the stage before waits for) and every forward's stay where they were. 8 micro-batches
// on pp 2: stage 0 (two in flight) pairs backwards 0-5. Tasks and durations are the blocking
// graph's, and the native step is what it was: the forward after the overlapped task starts
// earlier, and what it sends leaves when it did.
TEST(ExpertParallel, OverlappedAllToAllsWaitAfterTheNextUnitsCompute) {
  const Scenario a = load(moe("")), b = load(moe("overlap_ep_comm = true\n"));
  ASSERT_TRUE(a.plan && b.plan);
  const auto ga = schedule::build_schedule(a, *a.plan), gb = schedule::build_schedule(b, *b.plan);
  ASSERT_EQ(ga.size(), gb.size());
  auto tb = engine::run_native(gb);
  ASSERT_TRUE(tb.ok());
  std::map<int, int> per_stage;
  for (std::uint32_t i = 0; i < gb.size(); ++i) {
    const auto& t = gb.tasks[i];
    EXPECT_FALSE(ga.tasks[i].overlapped);
    ASSERT_EQ(t.kind, ga.tasks[i].kind);
    if (!t.overlapped) continue;
    ASSERT_EQ(t.kind, TaskKind::EpAllToAll);
    ++per_stage[gb.devices[t.device].stage];
    // A backward's: its predecessors are its own unit's TP collective, the previous all-to-all,
    // and the next unit's compute (another micro-batch's forward), which it follows.
    int own = 0, next = 0;
    for (std::uint32_t p = 0; p < gb.size(); ++p)
      for (std::uint32_t k = gb.succ_begin[p]; k < gb.succ_begin[p + 1]; ++k) {
        if (gb.succ[k] != i) continue;
        const auto& u = gb.tasks[p];
        ASSERT_EQ(u.device, t.device);
        if (u.micro_batch == t.micro_batch && u.chunk == t.chunk && u.kind != TaskKind::EpAllToAll) ++own;
        if (u.micro_batch != t.micro_batch && (u.kind == TaskKind::Forward || u.kind == TaskKind::Backward)) {
          EXPECT_EQ(u.kind, TaskKind::Forward) << schedule::task_name(u);
          ++next;
          EXPECT_LE(tb->end[p], tb->start[i]);
        }
      }
    EXPECT_EQ(own, 1) << schedule::task_name(t);
    EXPECT_EQ(next, 1) << schedule::task_name(t);
    // Whatever follows it waits for it: the unit's send, the compute after the next unit's.
    for (std::uint32_t k = gb.succ_begin[i]; k < gb.succ_begin[i + 1]; ++k) EXPECT_GE(tb->start[gb.succ[k]], tb->end[i]);
  }
  EXPECT_EQ(per_stage[0], 6);
  EXPECT_EQ(per_stage.count(1), 0u);
  auto before = engine::run_native(blocking_again(gb));
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(tb->makespan, before->makespan);
  // Deeper and shallower pipelines (pp 1: one stage, 8 micro-batches of which 7 paired): the
  // first stage only, the native step that of the same tasks blocking, ZeRO 3's per-layer tasks
  // too; interleaved, the first stage's first chunk only (its later chunks send their gradients
  // to the last stage).
  for (const char* layout : {"tp = 2\npp = 4\ndp = 2\nep = 2\n", "tp = 2\npp = 1\ndp = 8\nep = 4\nzero = 3\n",
                             "tp = 2\npp = 2\ndp = 4\nep = 4\nschedule = \"interleaved\"\nvirtual_stages = 2\n"}) {
    SCOPED_TRACE(layout);
    const Scenario d = load(moe("overlap_ep_comm = true\n", "", layout));
    ASSERT_TRUE(d.plan);
    const auto gd = schedule::build_schedule(d, *d.plan);
    auto td = engine::run_native(gd);
    ASSERT_TRUE(td.ok());
    std::map<int, int> stages;
    for (const auto& t : gd.tasks)
      if (t.overlapped) {
        ++stages[gd.devices[t.device].stage];
        EXPECT_EQ(t.chunk, 0) << schedule::task_name(t);
      }
    ASSERT_EQ(stages.size(), 1u);
    EXPECT_EQ(stages.begin()->first, 0);
    EXPECT_GT(stages.begin()->second, 0);
    auto blocking = engine::run_native(blocking_again(gd));
    ASSERT_TRUE(blocking.ok());
    EXPECT_EQ(td->makespan, blocking->makespan);
  }
  // GPipe overlaps nothing (the cost model hides nothing there): no task is overlapped.
  const Scenario g = load(moe("overlap_ep_comm = true\nschedule = \"gpipe\"\n"));
  ASSERT_TRUE(g.plan);
  const auto gg = schedule::build_schedule(g, *g.plan);
  EXPECT_TRUE(std::none_of(gg.tasks.begin(), gg.tasks.end(), [](const schedule::Task& t) { return t.overlapped; }));
}

// The Chrome trace: an "ep comm" track (tid 4) on the devices that have all-to-alls, with their
// events; a dense scenario's trace has no such track.
TEST(ExpertParallel, TheChromeTraceShowsTheAllToAllsAsTheirOwnTrack) {
  const Scenario s = load(moe(""));
  ASSERT_TRUE(s.plan);
  auto sim = report::run_simulation(s, *s.plan);
  ASSERT_TRUE(sim.ok());
  const auto j = nlohmann::json::parse(report::chrome_trace(s, sim->graph, sim->trace));
  int tracks = 0, events = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("name") == "thread_name" && e.at("args").at("name") == "ep comm") {
      EXPECT_EQ(e.at("tid"), 4);
      ++tracks;
    }
    if (e.at("ph") == "X" && e.at("cat") == "ep all-to-all") {
      EXPECT_EQ(e.at("tid"), 4);
      EXPECT_EQ(e.at("name").get<std::string>().rfind("ep a2a L", 0), 0u);
      ++events;
    }
  }
  EXPECT_EQ(tracks, static_cast<int>(sim->graph.devices.size()));
  EXPECT_EQ(events, 2 * 2 * 8);  // stages × (forward, backward) × micro-batches
  // The text report gains an "ep" column; JSON lists five stream fractions.
  EXPECT_NE(report::simulate_text(s, *s.plan, *sim).find("ep      bubble"), std::string::npos);
  const auto js = nlohmann::json::parse(report::simulate_json(s, *s.plan, *sim));
  EXPECT_GT(js.at("simulated_devices").at(0).at("stream_busy_fraction").at(4).get<double>(), 0);
  EXPECT_GT(js.at("critical_path_s").value("ep all-to-all", 0.0), 0);

  const Scenario d = load(test::minimal());
  ASSERT_TRUE(d.plan);
  auto dense = report::run_simulation(d, *d.plan);
  ASSERT_TRUE(dense.ok());
  const std::string trace = report::chrome_trace(d, dense->graph, dense->trace);
  EXPECT_EQ(trace.find("ep comm"), std::string::npos);
  EXPECT_EQ(report::simulate_text(d, *d.plan, *dense).find("ep      bubble"), std::string::npos);
}

// Distinct nodes a token's experts sit on (workload::moe_nodes_per_token), by hand: 8 experts,
// top-2, uniform routing.
TEST(ExpertDispatch, NodesPerTokenByHand) {
  workload::ModelSpec m;
  m.experts = 8;
  m.top_k = 2;
  EXPECT_DOUBLE_EQ(workload::moe_nodes_per_token(m, 1), 1.0);
  // Two nodes of 4 experts: a node gets no pick with C(4,2)/C(8,2) = 6/28.
  EXPECT_NEAR(workload::moe_nodes_per_token(m, 2), 2 * (1 - 6.0 / 28), 1e-12);
  // One group of a node's 4 experts per token: always one node.
  m.expert_groups = 2;
  m.expert_group_topk = 1;
  EXPECT_NEAR(workload::moe_nodes_per_token(m, 2), 1.0, 1e-12);
  // Four nodes, each group spanning two: the 2 picks among the drawn group's 4 experts, 2 on
  // each of its nodes, miss one node with C(2,2)/C(4,2) = 1/6.
  EXPECT_NEAR(workload::moe_nodes_per_token(m, 4), 2 * (1 - 1.0 / 6), 1e-12);
  // DeepSeek-V3's node-limited routing: 8 groups on 8 nodes, a token's 8 experts from at most 4.
  const auto ds = workload::preset("deepseek-v3");
  ASSERT_TRUE(ds.has_value());
  EXPECT_EQ(ds->expert_groups, 8);
  EXPECT_EQ(ds->expert_group_topk, 4);
  const double d = workload::moe_nodes_per_token(*ds, 8);
  EXPECT_GT(d, 3.5);
  EXPECT_LE(d, 4.0);
  workload::ModelSpec free = *ds;
  free.expert_groups = free.expert_group_topk = 0;
  EXPECT_GT(workload::moe_nodes_per_token(free, 8), 5.0);  // 8·(1 − C(224,8)/C(256,8)) ≈ 5.3
}

// A preset's group-limited routing belongs to its expert count: the deepseek-v3 preset keeps 8
// groups and 4 a token; another expert count drops them unless the file sets them again.
TEST(ExpertDispatch, APresetsGroupLimitGoesWithItsExperts) {
  auto model = [](const std::string& keys) {
    return load("[model]\npreset = \"deepseek-v3\"\nlayers = 4\nfirst_dense_layers = 1\n" + keys +
                "[training]\nglobal_batch = 8\nseq_len = 1024\n"
                "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n"
                "[parallel]\ntp = 8\npp = 1\ndp = 1\nmicro_batch = 1\n")
        .model;
  };
  const auto preset = model("");
  EXPECT_EQ(preset.expert_groups, 8);
  EXPECT_EQ(preset.expert_group_topk, 4);
  const auto other = model("experts = 12\n");
  EXPECT_EQ(other.expert_groups, 0);
  EXPECT_EQ(other.expert_group_topk, 0);
  const auto again = model("experts = 16\nexpert_groups = 4\nexpert_group_topk = 2\n");
  EXPECT_EQ(again.expert_groups, 4);
  EXPECT_EQ(again.expert_group_topk, 2);
  const auto off = model("expert_groups = 0\nexpert_group_topk = 0\n");
  EXPECT_EQ(off.expert_groups, 0);
}

// An EP group whose ranks do not fill the nodes evenly (8 devices a node at tp 2 hold 4 of an
// ep 6 group) is priced as nodes of the largest divisor of ep that fits (3), not an assertion.
TEST(ExpertDispatch, EpGroupsThatDoNotFillNodesEvenlyArePriced) {
  EXPECT_EQ(analytic::group_ranks_per_node(8, 2, 6), 3);
  EXPECT_EQ(analytic::group_ranks_per_node(8, 1, 16), 8);
  EXPECT_EQ(analytic::group_ranks_per_node(10, 1, 16), 8);
  EXPECT_EQ(analytic::group_ranks_per_node(8, 8, 4), 1);
  for (const std::string dispatch : {"all-to-all", "hierarchical"}) {
    const Scenario s = load("[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\nexperts = 12\n"
                            "[training]\nglobal_batch = 24\nseq_len = 2048\n"
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 3\n"
                            "[parallel]\ntp = 2\npp = 1\ndp = 12\nep = 6\nmicro_batch = 1\nep_dispatch = \"" +
                            dispatch + "\"\n");
    EXPECT_GT(analytic::stage_costs(s, *s.plan)[0][0].layer_ep_fwd.v, 0) << dispatch;
  }
}

// ep_dispatch = "hierarchical" (DeepEP): across nodes a token crosses the network once per other
// node its experts are on instead of once per expert, and over the fabric once per other rank
// that holds any of its experts. 16 experts, top-2, ep 16 over two nodes of 8 H100 (tp 1): both
// NIC-bound, so the bandwidth parts (the difference of two sequence lengths: latencies cancel)
// stand as D·(N−1)/N = 2(1 − 28/120)/2 copies against the all-to-all's top_k·(n − k)/n = 1.
// Inside one node (ep 8, two experts a rank): 8·(1 − C(14,2)/C(16,2)) = 1.933 distinct ranks a
// token against top_k = 2 copies, all but the own rank's either way; on the H100 the dispatch
// kernels' own rate (dispatch_bandwidth, over all 1.933 copies a token, the own one included)
// binds before NVLink's, so there it is slower than NCCL's all-to-all of 2 copies; on a device
// without such a rate (the A100 here) it is faster.
TEST(ExpertDispatch, HierarchicalDispatchCrossesEachNodeOnce) {
  auto ep_time = [](const std::string& dispatch, int seq, const std::string& layout,
                    const std::string& device = "h100-sxm5") {
    const Scenario s = load("[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\nexperts = 16\n"
                            "[training]\nglobal_batch = 16\nseq_len = " + std::to_string(seq) + "\n"
                            "[[cluster.pool]]\ndevice = \"" + device + "\"\nnodes = 2\n"
                            "[parallel]\n" + layout + "micro_batch = 1\nep_dispatch = \"" + dispatch + "\"\n");
    return analytic::stage_costs(s, *s.plan)[0][0].layer_ep_fwd.v;
  };
  const hw::DeviceSpec& h100 = *test::catalog().find_device("h100-sxm5");
  const double nvlink = test::catalog().find_link(h100.node.fabric)->effective().v;
  const double kernel = h100.efficiency.dispatch_bandwidth.v;
  ASSERT_GT(kernel, 0);
  const std::string two_nodes = "tp = 1\npp = 1\ndp = 16\nep = 16\n";
  auto bandwidth = [&](const std::string& dispatch) {
    return ep_time(dispatch, 8192, two_nodes) - ep_time(dispatch, 4096, two_nodes);
  };
  const double remote = 2 * (1 - 28.0 / 120) / 2;
  EXPECT_NEAR(bandwidth("hierarchical") / bandwidth("all-to-all"), remote / 1.0, 1e-9);
  EXPECT_LT(ep_time("hierarchical", 4096, two_nodes), ep_time("all-to-all", 4096, two_nodes));
  // Inside one node (ep 8 of the 8 ranks a node holds).
  const std::string one_node = "tp = 1\npp = 1\ndp = 16\nep = 8\n";
  auto fabric = [&](const std::string& dispatch) {
    return ep_time(dispatch, 8192, one_node) - ep_time(dispatch, 4096, one_node);
  };
  const double ranks = 8 * (1 - 91.0 / 120);  // distinct ranks a token, its own included
  const double a2a = 2 * 7.0 / 8 / nvlink;
  EXPECT_NEAR(fabric("hierarchical") / fabric("all-to-all"), std::max(ranks * 7 / 8 / nvlink, ranks / kernel) / a2a,
              1e-9);
  EXPECT_GT(ranks / kernel, ranks * 7 / 8 / nvlink);  // the kernels' rate binds on the H100
  EXPECT_GT(ep_time("hierarchical", 4096, one_node), ep_time("all-to-all", 4096, one_node));
  EXPECT_LT(ep_time("hierarchical", 4096, one_node, "a100-sxm4-80gb"),
            ep_time("all-to-all", 4096, one_node, "a100-sxm4-80gb"));
}

// DeepEP's rank-wise dispatch under Automodel's force-balanced gate, which gives a token one
// aligned block of top_k experts (expert_groups = experts / top_k, one group a token): a block
// sits on one rank, so a token crosses the fabric at most once (7/8 of a copy at ep 8) where the
// all-to-all sends top_k = 8 copies (7 of them over NVLink); the DeepEP kernels move that one
// copy a token at their own rate (dispatch_bandwidth, the own rank's copies included), slower
// than NVLink's.
TEST(ExpertDispatch, DeepEpSendsATokenOncePerRank) {
  auto ep_time = [](const std::string& dispatch, int seq) {
    const Scenario s = load("[model]\npreset = \"qwen3-30b-a3b\"\nlayers = 2\nexpert_groups = 16\nexpert_group_topk = 1\n"
                            "[training]\nglobal_batch = 8\nseq_len = " + std::to_string(seq) + "\n"
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n"
                            "[parallel]\ntp = 1\npp = 1\ndp = 8\nep = 8\nmicro_batch = 1\nep_dispatch = \"" + dispatch + "\"\n");
    EXPECT_TRUE(s.plan);
    return analytic::stage_costs(s, *s.plan)[0][0].layer_ep_fwd.v;
  };
  const double one = ep_time("hierarchical", 8192) - ep_time("hierarchical", 4096);
  const double all = ep_time("all-to-all", 8192) - ep_time("all-to-all", 4096);
  const hw::DeviceSpec& h100 = *test::catalog().find_device("h100-sxm5");
  const double nvlink = test::catalog().find_link(h100.node.fabric)->effective().v;
  EXPECT_NEAR(one / all, std::max(7.0 / 8 / nvlink, 1.0 / h100.efficiency.dispatch_bandwidth.v) / (7 / nvlink), 1e-9);
}

// fp8_dispatch: the dispatch-way all-to-all of each pass moves 1 + 4/128 bytes a value instead
// of 2; the combine-way one keeps 2. Bandwidth parts (the difference between two sequence
// lengths, which cancels the latencies): (1.03125 + 2) / (2 + 2) of the 16-bit exchange, in the
// forward, the backward and a full recompute alike, flat or by node.
TEST(ExpertDispatch, Fp8DispatchSendsTheDispatchWayRoundsInFp8) {
  auto ep = [](const std::string& extra, int seq, const std::string& recompute) {
    const Scenario s = load("[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\nexperts = 16\n"
                            "[training]\nglobal_batch = 16\nseq_len = " + std::to_string(seq) + "\n"
                            "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n"
                            "[parallel]\ntp = 1\npp = 1\ndp = 16\nep = 16\nmicro_batch = 1\nrecompute = \"" + recompute +
                            "\"\n" + extra);
    return analytic::stage_costs(s, *s.plan)[0][0];
  };
  const double ratio = (1 + 4.0 / 128 + 2) / (2 + 2);
  for (const std::string dispatch : {"", "ep_dispatch = \"hierarchical\"\n"}) {
    auto band = [&](const std::string& fp8, auto part) {
      return part(ep(dispatch + fp8, 8192, "full")) - part(ep(dispatch + fp8, 4096, "full"));
    };
    const auto fwd = [](const analytic::StageCost& c) { return c.layer_ep_fwd.v; };
    const auto bwd = [](const analytic::StageCost& c) { return c.layer_ep_bwd.v; };
    const auto rec = [](const analytic::StageCost& c) { return c.layer_ep_recompute.v; };
    EXPECT_NEAR(band("fp8_dispatch = true\n", fwd) / band("", fwd), ratio, 1e-9) << dispatch;
    EXPECT_NEAR(band("fp8_dispatch = true\n", bwd) / band("", bwd), ratio, 1e-9) << dispatch;
    EXPECT_NEAR(band("fp8_dispatch = true\n", rec) / band("", rec), ratio, 1e-9) << dispatch;
  }
  // Off (the default) is the 16-bit exchange both ways: dispatch and combine cost the same.
  EXPECT_EQ(ep("fp8_dispatch = false\n", 4096, "none").layer_ep_fwd, ep("", 4096, "none").layer_ep_fwd);
}

// Expert tensor parallelism (MoE parallel folding): Mixtral cut to 4 layers, tp 2 · dp 4 on one
// node of 8 H100, ep 8 with expert_tp 1 (ep does not divide dp = 4: the TP ranks fold into
// expert parallelism) against ep 4 with the default expert_tp = tp.
TEST(ExpertTensorParallel, FoldingTheTpRanksIntoExpertParallelism) {
  const std::string layout = "tp = 2\npp = 1\ndp = 4\n";
  auto scenario = [&](const std::string& parallel, const std::string& model = "") {
    return load("[model]\npreset = \"mixtral-8x7b\"\nlayers = 4\n" + model +
                "[training]\nglobal_batch = 16\nseq_len = 4096\n"
                "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n[parallel]\n" + layout + "micro_batch = 1\n" + parallel);
  };
  const Scenario plain = scenario("ep = 4\n"), folded_ep = scenario("ep = 8\nexpert_tp = 1\n");
  const auto pc = workload::count_params(plain.model);
  const auto cp = analytic::stage_costs(plain, *plain.plan)[0][0];
  const auto cf = analytic::stage_costs(folded_ep, *folded_ep.plan)[0][0];
  // A device holds 8/ep experts, split over expert_tp: 2 of 8 split in two, or 1 whole.
  EXPECT_NEAR(cp.expert_params, pc.per_layer_experts / 4 / 2 * 4, 1);
  EXPECT_NEAR(cf.expert_params, pc.per_layer_experts / 8 / 1 * 4, 1);
  EXPECT_EQ(cf.expert_fold, 2);
  // The same expert work per device in taller, wider GEMMs: the expert GEMMs' FLOPs agree.
  auto expert_flops = [](const Scenario& s) {
    const auto shape = analytic::micro_batch_shape(s, *s.plan, s.plan->groups[0].stages[0]);
    double f = 0;
    for (const auto& op : workload::layer_ops(s.model, shape))
      if (op.name == "expert_up" || op.name == "expert_down") f += op.fwd_flops.v;
    return f;
  };
  EXPECT_NEAR(expert_flops(folded_ep) / expert_flops(plain), 1.0, 1e-12);
  // No shared experts: the MoE block's TP collectives run over expert_tp = 1, i.e. not at all;
  // the attention block keeps its own.
  const Scenario folded_tp2 = scenario("ep = 4\nexpert_tp = 2\n");  // expert_tp = tp: as plain
  EXPECT_EQ(analytic::stage_costs(folded_tp2, *folded_tp2.plan)[0][0].layer_tp_fwd, cp.layer_tp_fwd);
  EXPECT_GT(cf.layer_tp_fwd.v, 0);
  EXPECT_LT(cf.layer_tp_fwd.v, cp.layer_tp_fwd.v * 0.75);
  // The experts' ZeRO state shards over tp·dp/(ep·expert_tp) ranks: 2·4/(4·1) = 2 at ep 4 folded
  // (the replicas alone would give 4/4 = 1).
  const Scenario folded4 = scenario("ep = 4\nexpert_tp = 1\n");
  const auto c4 = analytic::stage_costs(folded4, *folded4.plan)[0][0];
  EXPECT_DOUBLE_EQ(analytic::sharded_params(c4, 4, 4), (c4.params - c4.expert_params) / 4 + c4.expert_params / 2);
  // With a shared expert the MoE block still gathers over all tp ranks.
  const Scenario shared = scenario("ep = 8\nexpert_tp = 1\n", "shared_experts = 1\n");
  const Scenario shared_plain = scenario("ep = 4\n", "shared_experts = 1\n");
  const auto cs = analytic::stage_costs(shared, *shared.plan)[0][0];
  const auto csp = analytic::stage_costs(shared_plain, *shared_plain.plan)[0][0];
  EXPECT_EQ(cs.layer_tp_fwd, csp.layer_tp_fwd);
  // The schedule carries expert_tp; estimate and the native simulation agree on the folded plan.
  const auto g = schedule::build_schedule(folded_ep, *folded_ep.plan);
  EXPECT_EQ(g.devices[0].expert_tp, 1);
  EXPECT_EQ(g.devices[0].ep, 8);
  auto run = engine::run_native(g);
  ASSERT_TRUE(run.ok());
  EXPECT_NEAR(static_cast<double>(run->makespan) * 1e-9 / analytic::estimate(folded_ep, *folded_ep.plan).step_time.v, 1.0, 0.03);
}

// One replica (dp 1) with the TP ranks folded: tp 4, ep 2, expert_tp 1 leaves 4/2 = 2 ranks
// holding the same experts, which reduce their gradients between them even with no data-parallel
// replica: the cost model prices it, the schedule runs it, and the two agree.
TEST(ExpertTensorParallel, FoldedRanksSyncTheirExpertsWithoutReplicas) {
  const Scenario s = load("[model]\npreset = \"mixtral-8x7b\"\nlayers = 2\n[training]\nglobal_batch = 16\nseq_len = 2048\n"
                          "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\ndevices_per_node = 4\n"
                          "[parallel]\ntp = 4\npp = 1\ndp = 1\nep = 2\nexpert_tp = 1\nmicro_batch = 1\n");
  const auto c = analytic::stage_costs(s, *s.plan)[0][0];
  EXPECT_EQ(c.expert_fold, 4);
  EXPECT_GT(c.dp_reduce.v, 0);
  const auto g = schedule::build_schedule(s, *s.plan);
  EXPECT_TRUE(std::any_of(g.tasks.begin(), g.tasks.end(), [](const auto& t) { return t.kind == TaskKind::GradReduce; }));
  auto run = engine::run_native(g);
  ASSERT_TRUE(run.ok());
  EXPECT_NEAR(static_cast<double>(run->makespan) * 1e-9 / analytic::estimate(s, *s.plan).step_time.v, 1.0, 0.03);
}

}  // namespace
}  // namespace hetsim
