// The SimGrid flows and the replay read the same bytes from the graph (issue 14): for every
// communication task of several plan families, the bytes the task's flows carry and the buffers
// the replay moves for it agree with the task's calls (schedule::CommCall), and a real replay
// moves exactly what the replay's sizing functions (exec/replay/payload.hpp) say.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/replay/communicators.hpp"
#include "exec/replay/dp_groups.hpp"
#include "exec/replay/payload.hpp"
#include "exec/replay/replay.hpp"
#include "models/cost/compute.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/schedule/unfold.hpp"
#include "sim/simgrid/flows.hpp"
#include "sim/simgrid/platform.hpp"
#include "tests/support/flaky_backend.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

using schedule::TaskKind;

const std::string kModel =
    "[model]\npreset = \"tiny\"\nlayers = 4\nhidden = 128\nheads = 4\nkv_heads = 4\nffn_hidden = 512\nvocab = 512\n";

std::string pools(int count, int devices) {
  std::string out;
  for (int k = 0; k < count; ++k)
    out += "[[cluster.pool]]\nname = \"p" + std::to_string(k) + "\"\nnodes = 1\n[cluster.pool.device]\nname = \"core-" +
           std::to_string(k) + "\"\npeak = { fp32 = \"20GFLOPS\" }\nmemory = \"1GiB\"\nmemory_bandwidth = \"10GB/s\"\n"
           "node = { devices = " + std::to_string(devices) + ", fabric = \"shm\", nics = 1, nic = \"shm\" }\n";
  return out;
}

// A tiny model on cpu-like devices: `npools` pools of `devices` each, the plan `parallel`.
std::string scenario(const std::string& parallel, int npools = 1, int devices = 8, const std::string& model_extra = "") {
  std::string model = kModel;
  model.replace(model.find("kv_heads = 4\n"), 13, "kv_heads = 4\n" + model_extra);
  return model + "[training]\nglobal_batch = 8\nseq_len = 64\nprecision = \"fp32\"\n"
                 "[[cluster.link]]\nname = \"shm\"\nkind = \"scale-up\"\nbandwidth = \"10GB/s\"\nlatency = \"1us\"\n" +
         pools(npools, devices) +
         "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n[parallel]\n" + parallel;
}

struct Family {
  const char* name;
  std::string text;
  bool moe = false;
};

std::vector<Family> families() {
  const std::string two_groups = "micro_batch = 1\n[[parallel.replicas]]\ncount = 2\nmicro_batches = 2\n"
                                 "stages = [{pool = \"p0\", tp = 2, layers = 4}]\n[[parallel.replicas]]\ncount = 1\n"
                                 "micro_batches = 4\nstages = [{pool = \"p1\", tp = 1, layers = 1}, {pool = \"p1\", tp = 1, layers = 3}]\n";
  return {
      {"single pool, sequence parallel", scenario("tp = 2\npp = 2\ndp = 2\nzero = 0\nmicro_batch = 1\nsequence_parallel = true\n")},
      {"single pool, scatter-gather", scenario("tp = 2\npp = 2\ndp = 2\nzero = 1\nmicro_batch = 1\nsequence_parallel = false\n")},
      {"two replica groups of tp 2 and 1, ZeRO 0", scenario("zero = 0\n" + two_groups, 2, 4)},
      {"two replica groups of tp 2 and 1, ZeRO 1", scenario("zero = 1\n" + two_groups, 2, 4)},
      {"hybrid sharding (two groups, ZeRO 2)", scenario("zero = 2\n" + two_groups, 2, 4)},
      {"mixed TP pipeline", scenario("micro_batch = 1\nsequence_parallel = true\n[[parallel.replicas]]\ncount = 2\n"
                                     "micro_batches = 4\nstages = [{pool = \"p0\", tp = 2, layers = 2}, "
                                     "{pool = \"p0\", tp = 1, layers = 2}]\n")},
      {"ZeRO 2", scenario("tp = 1\npp = 2\ndp = 2\nzero = 2\nmicro_batch = 1\n", 1, 4)},
      {"ZeRO 3", scenario("tp = 2\npp = 1\ndp = 2\nzero = 3\nmicro_batch = 1\n", 1, 4)},
      {"interleaved", scenario("tp = 2\npp = 2\ndp = 1\nmicro_batch = 1\nschedule = \"interleaved\"\nvirtual_stages = 2\n", 1, 4)},
      {"MoE, ep 2", scenario("tp = 2\npp = 1\ndp = 2\nep = 2\nzero = 1\nmicro_batch = 1\n", 1, 4, "experts = 4\ntop_k = 2\n"),
       true},
      // MoE parallel folding: expert_tp below tp.
      {"MoE folded, tp 2 · dp 2, ep 2, expert_tp 1, ZeRO 1",
       scenario("tp = 2\npp = 1\ndp = 2\nep = 2\nexpert_tp = 1\nzero = 1\nmicro_batch = 1\n", 1, 4, "experts = 4\ntop_k = 2\n"),
       true},
      {"MoE folded, tp 4 · dp 1, ep 2, expert_tp 1",
       scenario("tp = 4\npp = 1\ndp = 1\nep = 2\nexpert_tp = 1\nmicro_batch = 1\n", 1, 4, "experts = 4\ntop_k = 2\n"), true},
      {"MoE folded, tp 4 · dp 2, ep 2, expert_tp 2",
       scenario("tp = 4\npp = 1\ndp = 2\nep = 2\nexpert_tp = 2\nmicro_batch = 1\n", 1, 8, "experts = 4\ntop_k = 2\n"), true},
      // (No all-to-all without expert parallelism: `moe` false.)
      {"MoE folded, tp 4 · dp 1, ep 1, expert_tp 2",
       scenario("tp = 4\npp = 1\ndp = 1\nep = 1\nexpert_tp = 2\nmicro_batch = 1\n", 1, 4, "experts = 4\ntop_k = 2\n")},
  };
}

double rounds(cost::Collective k) { return k == cost::Collective::AllReduce ? 2.0 : 1.0; }
double wire(const schedule::CommCall& c) { return c.bytes * c.count * c.exposed; }

// The bytes a task's flows should carry, from its calls alone: a collective call over n ranks
// puts rounds·B·(n − 1) on the wire whatever its algorithm (a ring's n edges rounds·B·(n − 1)/n
// each; a tree's 4(n − 1) edges B/2; a hierarchical pattern's node and cross-node rings), an
// all-to-all B·(n − 1) (n ranks, B/n to each of n − 1 peers), a pipeline message the activation
// once per replica when split over the ranks, once per receiving rank when not.
double expected_flow_bytes(const schedule::TaskGraph& g, std::uint32_t i) {
  const auto& t = g.tasks[i];
  const auto& dev = g.devices[t.device];
  const auto calls = g.calls_of(i);
  double sum = 0;
  switch (t.kind) {
    case TaskKind::TpCollective:
      for (const auto& c : calls) {
        const int n = c.ranks > 0 ? c.ranks : dev.tp;
        sum += (dev.count / n) * rounds(c.kind) * wire(c) * (n - 1);
      }
      return sum;
    case TaskKind::EpAllToAll: {
      const int groups = dev.count / dev.ep;
      for (const auto& c : calls) sum += groups * wire(c) * (dev.ep - 1);
      return sum;
    }
    case TaskKind::SendActivation:
    case TaskKind::SendGradient: {
      std::uint32_t to = t.device;
      for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1] && to == t.device; ++k) to = g.tasks[g.succ[k]].device;
      const double whole = g.payload_bytes(i);
      return dev.replicas * whole * (t.split ? 1 : g.devices[to].tp);
    }
    case TaskKind::GradReduce:
    case TaskKind::ParamGather: {
      const auto members = g.members_of(i);
      if (members.front() != i) return 0;  // carried by the collective's first member
      if (t.across_groups) {
        long long cut = 1;  // the lcm of the groups' pieces
        for (auto m : members) cut = std::lcm(cut, schedule::dp_pieces(g.devices[g.tasks[m].device]));
        for (const auto& c : calls)
          sum += rounds(c.kind) * schedule::dp_chunk_bytes(g, i, c, cut) * static_cast<double>(cut) *
                 static_cast<double>(members.size() - 1);
        return sum;
      }
      const long long chunks = g.dp_chunks(i);
      int n = 0, real = 0;  // every replica of every member holds each chunk once
      for (auto m : members) {
        n += g.devices[g.tasks[m].device].replicas;
        real += g.devices[g.tasks[m].device].count;
      }
      const bool folded = schedule::folds_experts(g, members);
      for (const auto& c : calls) {
        if (c.experts && folded) {  // once over each expert-data-parallel group: expert_tp · ep of them
          const int groups = dev.expert_tp_or_tp() * dev.ep;
          sum += rounds(c.kind) * schedule::expert_dp_bytes(g, i, c) * c.exposed * (real - groups);
          continue;
        }
        const int parts = c.experts ? dev.ep : 1;  // the routed experts' part: among replicas alike mod ep
        sum += rounds(c.kind) * schedule::dp_chunk_bytes(g, i, c, chunks) * c.exposed * static_cast<double>(chunks) * (n - parts);
      }
      return sum;
    }
    default:
      return 0;
  }
}

bool communicates(TaskKind k) {
  return k == TaskKind::TpCollective || k == TaskKind::EpAllToAll || k == TaskKind::SendActivation ||
         k == TaskKind::SendGradient || k == TaskKind::GradReduce || k == TaskKind::ParamGather;
}

TEST(Payload, TheFlowsCarryEveryCommunicationTasksCalls) {
  for (const auto& f : families()) {
    SCOPED_TRACE(f.name);
    auto s = test::parse(f.text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto g = schedule::build_schedule(*s, *s->plan);
    const auto p = platform::build(s->cluster);
    auto d = platform::decompose(g, s->cluster, p);
    ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
    std::set<TaskKind> seen;
    for (std::uint32_t i = 0; i < g.size(); ++i) {
      const auto& t = g.tasks[i];
      if (!communicates(t.kind)) {
        EXPECT_TRUE(g.calls_of(i).empty()) << schedule::task_name(t);
        continue;
      }
      ASSERT_FALSE(g.calls_of(i).empty()) << schedule::task_name(t);
      seen.insert(t.kind);
      double carried = 0;
      for (const auto& fl : d->work[i].flows) carried += fl.bytes;
      const double expected = expected_flow_bytes(g, i);
      EXPECT_NEAR(carried, expected, expected * 1e-9 + 1e-6) << schedule::task_name(t);
    }
    EXPECT_TRUE(seen.count(TaskKind::TpCollective) || seen.count(TaskKind::GradReduce));
    if (f.moe) {
      EXPECT_TRUE(seen.count(TaskKind::EpAllToAll));
    }
  }
}

// The replay's expert groups as real device lists: the communicators replay() makes
// (exec/replay/communicators.hpp) over cpu devices, each group's members found by the real
// devices that hold its communicators.
struct ExpertGroups {
  std::vector<std::vector<int>> ep, etp;           // per real device: its group (empty: none)
  std::vector<std::map<int, std::vector<int>>> edp;  // per real device, per DpLayout group
};
ExpertGroups replay_expert_groups(const Scenario& s, const schedule::TaskGraph& g, const exec::DpLayout& layout) {
  auto backend = exec::make_cpu_backend(layout.real_devices);
  std::vector<std::unique_ptr<exec::Device>> devices;
  for (int d = 0; d < layout.real_devices; ++d) devices.push_back(backend->open(d));
  std::vector<std::string> notes;
  auto comms = exec::make_communicators({devices, *backend, nullptr, -1, notes}, g, *s.plan, layout,
                                        s.model.moe() && s.plan->ep > 1, std::vector<int>(g.devices.size(), 1));
  EXPECT_TRUE(comms.ok()) << test::all_errors(comms.errors());
  ExpertGroups out;
  const auto n = static_cast<std::size_t>(layout.real_devices);
  out.ep.resize(n);
  out.etp.resize(n);
  out.edp.resize(n);
  if (!comms) return out;
  // Each communicator's group (its index in `owners`), then each group's real devices.
  auto members = [&](const std::vector<exec::Communicators>& owners, auto&& each) {
    std::map<const exec::Communicator*, std::size_t> group;
    for (std::size_t k = 0; k < owners.size(); ++k)
      for (const auto& c : owners[k]) group[c.get()] = k;
    std::vector<std::vector<int>> reals(owners.size());
    each([&](int r, const exec::Communicator* c) { reals[group.at(c)].push_back(r); });
    return std::pair{group, reals};
  };
  const auto [ep_group, ep_reals] = members(comms->ep, [&](auto add) {
    for (std::size_t r = 0; r < n; ++r)
      if (comms->ep_of[r] != nullptr) add(static_cast<int>(r), comms->ep_of[r]);
  });
  const auto [etp_group, etp_reals] = members(comms->etp, [&](auto add) {
    for (std::size_t r = 0; r < n; ++r)
      if (comms->etp_of[r] != nullptr) add(static_cast<int>(r), comms->etp_of[r]);
  });
  const auto [edp_group, edp_reals] = members(comms->edp, [&](auto add) {
    std::set<std::pair<int, const exec::Communicator*>> once;  // a member may key one communicator twice
    for (std::size_t r = 0; r < n; ++r)
      for (const auto& [gi, c] : comms->edp_of[r])
        if (once.insert({static_cast<int>(r), c}).second) add(static_cast<int>(r), c);
  });
  for (std::size_t r = 0; r < n; ++r) {
    if (comms->ep_of[r] != nullptr) out.ep[r] = ep_reals[ep_group.at(comms->ep_of[r])];
    if (comms->etp_of[r] != nullptr) out.etp[r] = etp_reals[etp_group.at(comms->etp_of[r])];
    for (const auto& [gi, c] : comms->edp_of[r]) out.edp[r][gi] = edp_reals[edp_group.at(c)];
  }
  return out;
}

// The SimGrid flows and the replay join the same real devices in every data-parallel collective
// (both draw the members from schedule/unfold.hpp): every flow of a DP task runs between two
// members of one of the replay's groups for it (dp_layout's, on the hosts the flows place the
// real devices at), every member of those groups sends or receives in the flows, and each group
// a member joins holds it.
TEST(Payload, TheFlowsAndTheReplayJoinTheSameDevicesInEveryDataParallelCollective) {
  auto plans = families();
  plans.push_back({"MoE, ep 2 over 4 replicas",
                   scenario("tp = 1\npp = 1\ndp = 4\nep = 2\nzero = 1\nmicro_batch = 1\n", 1, 4, "experts = 4\ntop_k = 2\n"),
                   true});
  for (const auto& f : plans) {
    SCOPED_TRACE(f.name);
    auto s = test::parse(f.text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto g = schedule::build_schedule(*s, *s->plan);
    const auto p = platform::build(s->cluster);
    auto d = platform::decompose(g, s->cluster, p);
    ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
    auto layout = exec::dp_layout(g);
    ASSERT_TRUE(layout.ok()) << test::all_errors(layout.errors());
    std::vector<int> host(static_cast<std::size_t>(layout->real_devices));  // of each real device
    for (std::size_t dv = 0; dv < g.devices.size(); ++dv)
      for (int m = 0; m < g.devices[dv].count; ++m)
        host[static_cast<std::size_t>(layout->first_real[dv] + m)] = d->first_host[dv] + m;
    const ExpertGroups experts = replay_expert_groups(*s, g, *layout);
    int checked = 0, collectives = 0;
    for (std::uint32_t i = 0; i < g.size(); ++i) {
      const auto& t = g.tasks[i];
      if (t.kind != TaskKind::GradReduce && t.kind != TaskKind::ParamGather) continue;
      ++collectives;
      const auto members = g.members_of(i);
      if (members.front() != i || d->work[i].flows.empty()) continue;  // carried by the first member
      std::vector<std::set<int>> groups;  // the replay's groups of every member task, on hosts
      std::set<int> in_groups;
      for (const auto m : members) {
        const auto& dev = g.devices[g.tasks[m].device];
        const auto& joins = t.across_groups ? layout->pieces_of[m] : layout->member_of[m];
        for (std::size_t k = 0; k < joins.size(); ++k)  // per member (across groups), else per tp rank
          for (const int gi : joins[k]) {
            const auto& reals = layout->groups[static_cast<std::size_t>(gi)];
            // The groups a member joins hold it (within groups: rank k of every replica).
            const int first = layout->first_real[g.tasks[m].device] + static_cast<int>(k);
            for (int r = 0; r < (t.across_groups ? 1 : dev.replicas); ++r)
              EXPECT_EQ(std::count(reals.begin(), reals.end(), first + r * dev.tp), 1) << schedule::task_name(t);
            std::set<int> on;
            for (const int r : reals) on.insert(host[static_cast<std::size_t>(r)]);
            if (on.size() > 1) in_groups.insert(on.begin(), on.end());
            groups.push_back(std::move(on));
          }
        // The routed experts' part (expert parallelism): each member's expert-data-parallel group.
        for (int member = 0; member < dev.count && !t.across_groups; ++member) {
          const int real = layout->first_real[g.tasks[m].device] + member;
          for (const int gi : joins[static_cast<std::size_t>(member % dev.tp)])
            if (const auto e = experts.edp[static_cast<std::size_t>(real)].find(gi);
                e != experts.edp[static_cast<std::size_t>(real)].end()) {
              EXPECT_EQ(std::count(e->second.begin(), e->second.end(), real), 1) << schedule::task_name(t);
              std::set<int> on;
              for (const int r : e->second) on.insert(host[static_cast<std::size_t>(r)]);
              in_groups.insert(on.begin(), on.end());
              groups.push_back(std::move(on));
            }
        }
      }
      std::set<int> touched;
      for (const auto& fl : d->work[i].flows) {
        touched.insert({fl.src, fl.dst});
        EXPECT_TRUE(std::any_of(groups.begin(), groups.end(),
                                [&](const std::set<int>& on) { return on.count(fl.src) > 0 && on.count(fl.dst) > 0; }))
            << schedule::task_name(t) << ": a flow " << fl.src << " -> " << fl.dst << " outside the replay's groups";
      }
      EXPECT_EQ(touched, in_groups) << schedule::task_name(t);
      ++checked;
    }
    EXPECT_EQ(checked > 0, collectives > 0);  // (a plan without data parallelism has none)
  }
}

// Plans whose pipelines send messages, for the pipeline tests: uniform PP (split by sequence
// parallelism, by scatter-gather, or whole), mixed tp between stages (resharded when split, read
// from rank k mod tp when whole), two replica groups of different depths and tp, interleaved.
std::vector<Family> pipeline_families() {
  const auto whole = [](std::string text) {  // messages not split over the tp ranks
    return text.replace(text.find("precision = \"fp32\"\n"), 19, "precision = \"fp32\"\npipeline_scatter_gather = false\n");
  };
  const std::string mixed = "micro_batch = 1\n[[parallel.replicas]]\ncount = 2\nmicro_batches = 4\n"
                            "stages = [{pool = \"p0\", tp = 1, layers = 1}, {pool = \"p0\", tp = 2, layers = 2}, "
                            "{pool = \"p0\", tp = 4, layers = 1}]\n";
  const std::string two_depths =
      "micro_batch = 1\n[[parallel.replicas]]\ncount = 1\nmicro_batches = 4\n"
      "stages = [{pool = \"p0\", tp = 2, layers = 3}, {pool = \"p0\", tp = 1, layers = 1}]\n"
      "[[parallel.replicas]]\ncount = 2\nmicro_batches = 2\n"
      "stages = [{pool = \"p1\", tp = 1, layers = 1}, {pool = \"p1\", tp = 1, layers = 1}, {pool = \"p1\", tp = 2, layers = 2}]\n";
  return {
      {"uniform PP, sequence parallel", scenario("tp = 2\npp = 2\ndp = 2\nmicro_batch = 1\nsequence_parallel = true\n")},
      {"uniform PP, scatter-gather", scenario("tp = 2\npp = 2\ndp = 2\nmicro_batch = 1\nsequence_parallel = false\n")},
      {"uniform PP, whole messages", whole(scenario("tp = 2\npp = 4\ndp = 1\nmicro_batch = 1\nsequence_parallel = false\n"))},
      {"mixed tp 1-2-4, sequence parallel", scenario("sequence_parallel = true\n" + mixed, 1, 16)},
      {"mixed tp 1-2-4, whole messages", whole(scenario("sequence_parallel = false\n" + mixed, 1, 16))},
      {"two groups of depth 2 and 3, mixed tp, ZeRO 1", scenario("zero = 1\nsequence_parallel = true\n" + two_depths, 2, 8)},
      {"two groups of depth 2 and 3, whole messages",
       whole(scenario("zero = 0\nsequence_parallel = false\n" + two_depths, 2, 8))},
      {"interleaved", scenario("tp = 2\npp = 2\ndp = 2\nmicro_batch = 1\nschedule = \"interleaved\"\nvirtual_stages = 2\n", 1, 8)},
  };
}

// The SimGrid flows and the replay join the same real devices with the same bytes in every
// pipeline message (both draw the parts from schedule/unfold.hpp): for each send task, the flows
// (on the real devices their hosts stand for), what every member of the sender sends in the
// replay (message_sends) and what every member of the receiver receives there
// (message_receipts) are the same parts, each part in one replica of one group, from the
// sender's device to the device of its successor elsewhere; in bytes, the flow's rounded to the
// replay's fp32 values.
TEST(Payload, TheFlowsAndTheReplayJoinTheSameDevicesInEveryPipelineMessage) {
  for (const auto& f : pipeline_families()) {
    SCOPED_TRACE(f.name);
    auto s = test::parse(f.text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto g = schedule::build_schedule(*s, *s->plan);
    const auto p = platform::build(s->cluster);
    auto d = platform::decompose(g, s->cluster, p);
    ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
    const auto layout = schedule::unfold(g);
    std::map<int, int> real_of;  // host → real device
    for (std::size_t dv = 0; dv < g.devices.size(); ++dv)
      for (int m = 0; m < g.devices[dv].count; ++m) real_of[d->first_host[dv] + m] = layout.first[dv] + m;
    ASSERT_EQ(real_of.size(), static_cast<std::size_t>(layout.count));  // every real device on a host of its own
    using Part = std::tuple<int, int, std::size_t>;                      // sender, receiver, fp32 values
    int sends = 0;
    std::set<int> groups;
    bool resharded = false;
    for (std::uint32_t i = 0; i < g.size(); ++i) {
      const auto& t = g.tasks[i];
      if (t.kind != TaskKind::SendActivation && t.kind != TaskKind::SendGradient) continue;
      ++sends;
      // The receiver: the device of the task's successor elsewhere (the next or previous stage).
      std::uint32_t to = t.device;
      for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1] && to == t.device; ++k) to = g.tasks[g.succ[k]].device;
      ASSERT_NE(to, t.device) << schedule::task_name(t);
      const auto& from_dev = g.devices[t.device];
      const auto& to_dev = g.devices[to];
      EXPECT_EQ(from_dev.group, to_dev.group) << schedule::task_name(t);
      groups.insert(from_dev.group);
      resharded = resharded || (t.split && from_dev.tp != to_dev.tp);
      std::multiset<Part> flows, sent, received, sent_all, received_all;
      for (const auto& fl : d->work[i].flows) flows.insert({real_of.at(fl.src), real_of.at(fl.dst), exec::payload_floats(fl.bytes)});
      for (int m = 0; m < from_dev.count; ++m) {
        const int from = layout.first[t.device] + m;
        for (const auto& part : exec::message_sends(g, layout.first, i, m)) {
          // Within its replica, to a member of the receiver.
          EXPECT_EQ(part.real, layout.first[to] + part.member) << schedule::task_name(t);
          EXPECT_EQ(part.member / to_dev.tp, m / from_dev.tp) << schedule::task_name(t) << ": member " << m;
          sent_all.insert({from, part.real, part.floats});  // empty parts too: they order the receiver
          if (part.floats > 0) sent.insert({from, part.real, part.floats});
        }
      }
      for (int m = 0; m < to_dev.count; ++m) {
        const int at = layout.first[to] + m;
        for (const auto& part : exec::message_receipts(g, layout.first, i, m)) {
          EXPECT_EQ(part.real, layout.first[t.device] + part.member) << schedule::task_name(t);
          received_all.insert({part.real, at, part.floats});
          if (part.floats > 0) received.insert({part.real, at, part.floats});
        }
      }
      EXPECT_FALSE(flows.empty()) << schedule::task_name(t);
      EXPECT_EQ(flows, sent) << schedule::task_name(t);
      EXPECT_EQ(sent, received) << schedule::task_name(t);
      EXPECT_EQ(sent_all, received_all) << schedule::task_name(t);  // every receipt awaited is sent
      // Every member of both ends takes part (each replica's ranks send, and read, something).
      std::set<int> senders, receivers;
      for (const auto& [a, b, n] : sent) {
        senders.insert(a);
        receivers.insert(b);
      }
      EXPECT_EQ(receivers.size(), static_cast<std::size_t>(to_dev.count)) << schedule::task_name(t);
      if (t.split) {
        EXPECT_EQ(senders.size(), static_cast<std::size_t>(from_dev.count)) << schedule::task_name(t);
      }
    }
    EXPECT_GT(sends, 0);
    if (f.text.find("[[parallel.replicas]]\ncount = 2\nmicro_batches = 2") != std::string::npos) {
      EXPECT_EQ(groups.size(), 2u);  // both groups' pipelines send
    }
    if (f.text.find("tp = 4, layers") != std::string::npos && f.text.find("pipeline_scatter_gather = false") == std::string::npos) {
      EXPECT_TRUE(resharded);
    }
  }
}

// The SimGrid flows and the replay join the same real devices in every expert collective (both
// draw them from schedule/unfold.hpp): every flow of an EP task runs between two members of one
// of the replay's EP groups (ep of them, in Megatron-Core's expert rank order), and every member
// exchanges; where a device folds its experts onto 1 < expert_tp < tp ranks, the TP tasks'
// flows run within the replica's tp ranks and some within the replay's expert_tp groups.
TEST(Payload, TheFlowsAndTheReplayJoinTheSameDevicesInEveryExpertCollective) {
  int folded = 0;
  for (const auto& f : families()) {
    if (!f.moe) continue;
    SCOPED_TRACE(f.name);
    auto s = test::parse(f.text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto g = schedule::build_schedule(*s, *s->plan);
    const auto p = platform::build(s->cluster);
    auto d = platform::decompose(g, s->cluster, p);
    ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
    auto layout = exec::dp_layout(g);
    ASSERT_TRUE(layout.ok()) << test::all_errors(layout.errors());
    const ExpertGroups experts = replay_expert_groups(*s, g, *layout);
    std::vector<int> real_of_host(static_cast<std::size_t>(layout->real_devices));
    for (std::size_t dv = 0; dv < g.devices.size(); ++dv)
      for (int m = 0; m < g.devices[dv].count; ++m)
        real_of_host[static_cast<std::size_t>(d->first_host[dv] + m)] = layout->first_real[dv] + m;
    auto together = [&](const std::vector<std::vector<int>>& of, int src, int dst) {
      const auto& grp = of[static_cast<std::size_t>(real_of_host[static_cast<std::size_t>(src)])];
      return std::count(grp.begin(), grp.end(), real_of_host[static_cast<std::size_t>(dst)]) == 1;
    };
    int ep_tasks = 0;
    for (std::uint32_t i = 0; i < g.size(); ++i) {
      const auto& t = g.tasks[i];
      const auto& dev = g.devices[t.device];
      const int et = dev.expert_tp_or_tp();
      if (t.kind == TaskKind::EpAllToAll) {
        ++ep_tasks;
        std::set<int> touched;
        for (const auto& fl : d->work[i].flows) {
          touched.insert({fl.src, fl.dst});
          EXPECT_TRUE(together(experts.ep, fl.src, fl.dst)) << fl.src << " -> " << fl.dst << " outside the replay's EP groups";
        }
        EXPECT_EQ(touched.size(), static_cast<std::size_t>(dev.count)) << schedule::task_name(t);
        for (int m = 0; m < dev.count; ++m)
          EXPECT_EQ(experts.ep[static_cast<std::size_t>(layout->first_real[t.device] + m)].size(),
                    static_cast<std::size_t>(dev.ep));
      }
      if (t.kind == TaskKind::TpCollective && et > 1 && et < dev.tp) {
        ++folded;
        bool in_etp = false;
        for (const auto& fl : d->work[i].flows) {
          EXPECT_EQ((fl.src - d->first_host[t.device]) / dev.tp, (fl.dst - d->first_host[t.device]) / dev.tp);
          in_etp = in_etp || together(experts.etp, fl.src, fl.dst);
        }
        EXPECT_TRUE(in_etp) << schedule::task_name(t);
      }
    }
    EXPECT_GT(ep_tasks, 0);
  }
  EXPECT_GT(folded, 0);
}

// Hybrid sharding's all-reduce across groups whose piece counts do not divide one another (a
// group of tp 2 over 2 replicas: 4 pieces; one of tp 1 over 3: 3 pieces): the layer is cut into
// their lcm, 12 chunks, as the replay cuts it (dp_layout), so each member of a device sends its
// own piece's share, the same for every member. (Cut into the larger count, 4, a 3-piece
// device's first member would carry two of the four chunks and its others one each.)
TEST(Payload, HybridShardingFlowsCarryEveryPieceAlike) {
  std::string text = scenario("zero = 2\nmicro_batch = 1\n[[parallel.replicas]]\ncount = 2\nmicro_batches = 2\n"
                              "stages = [{pool = \"p0\", tp = 2, layers = 4}]\n[[parallel.replicas]]\ncount = 3\n"
                              "micro_batches = 2\nstages = [{pool = \"p1\", tp = 1, layers = 4}]\n",
                              2, 4);
  text.replace(text.find("global_batch = 8"), 16, "global_batch = 10");
  auto s = test::parse(text);
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto g = schedule::build_schedule(*s, *s->plan);
  const auto p = platform::build(s->cluster);
  auto d = platform::decompose(g, s->cluster, p);
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  int checked = 0;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    if (!t.across_groups || d->owner[i] != i || d->work[i].flows.empty()) continue;
    for (const auto m : g.members_of(i)) {
      const auto dev = g.tasks[m].device;
      std::map<int, double> sent;  // per member of the device
      for (int k = 0; k < g.devices[dev].count; ++k) sent[d->first_host[dev] + k] = 0;
      for (const auto& fl : d->work[i].flows)
        if (sent.count(fl.src) > 0) sent[fl.src] += fl.bytes;
      for (const auto& [host, bytes] : sent)
        EXPECT_NEAR(bytes, sent.begin()->second, sent.begin()->second * 1e-9)
            << schedule::task_name(g.tasks[m]) << ": host " << host;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// The buffers the replay moves for each task, per the functions it sizes them by, summed over
// the task's real members: for a TP task, each member's runs (tp_runs); for a DP task, each
// member's collectives (one per chunk it joins, dp_layout); for a pipeline message, each sender
// rank's message to each rank it feeds. In bytes (4 per fp32 value).
struct Moved {
  std::map<std::uint32_t, double> per_task;
  std::map<std::uint32_t, double> tp_per_device;  // a device's TP tasks together (fractions carry)
  double counted = 0;  // what the counting backend sees: values into all-reduces, reduce-scatters, all-gathers
  double copied = 0;   // bytes copied as pipeline messages
};

Moved replay_moves(const schedule::TaskGraph& g, const exec::DpLayout& layout) {
  Moved m;
  std::map<std::uint32_t, exec::TpOwed> owed;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    const auto& dev = g.devices[t.device];
    switch (t.kind) {
      case TaskKind::TpCollective:
        for (const auto& run : exec::tp_runs(g, i, dev.tp, owed[t.device])) {
          if (run.ranks < 2) continue;  // a MoE block's calls at expert_tp 1: nothing to move
          const double bytes = 4.0 * static_cast<double>(run.floats) * run.times * dev.count;
          m.per_task[i] += bytes;
          m.tp_per_device[t.device] += bytes;
          // The backend counts an all-gather's shard, the others' buffer.
          m.counted += (run.kind == cost::Collective::AllGather ? static_cast<double>(run.floats) / run.ranks
                                                                : static_cast<double>(run.floats)) *
                       run.times * dev.count;
        }
        break;
      case TaskKind::GradReduce:
      case TaskKind::ParamGather:
        for (int member = 0; member < dev.count; ++member) {
          const auto& joins = t.across_groups ? layout.pieces_of[i][static_cast<std::size_t>(member)]
                                              : layout.member_of[i][static_cast<std::size_t>(member % dev.tp)];
          const bool folded = !t.across_groups && schedule::folds_experts(g, g.members_of(i));
          for (const int gi : joins)
            for (const auto& c : g.calls_of(i)) {
              // (No MoE family here runs several groups: its experts' part has ep-ranked peers;
              // folded, the members at one offset of the expert_tp · ep blocks, once.)
              if (c.experts && folded && gi != joins.front()) continue;
              const int ranks = c.experts && folded
                                    ? dev.count / (dev.expert_tp_or_tp() * dev.ep)
                                    : static_cast<int>(layout.groups[static_cast<std::size_t>(gi)].size()) / (c.experts ? dev.ep : 1);
              if (ranks < 2) continue;
              const auto floats = static_cast<double>(c.experts && folded ? exec::expert_dp_floats(g, i, c, ranks)
                                                                          : exec::dp_call_floats(g, i, c, layout.chunks[i], ranks));
              m.per_task[i] += 4.0 * floats;
              m.counted += c.kind == cost::Collective::AllGather ? floats / ranks : floats;
            }
        }
        break;
      case TaskKind::SendActivation:
      case TaskKind::SendGradient: {
        for (int member = 0; member < dev.count; ++member)
          for (const auto& part : exec::message_sends(g, layout.first_real, i, member)) {
            const double bytes = 4.0 * static_cast<double>(part.floats);
            m.per_task[i] += bytes;
            m.copied += bytes;
          }
        break;
      }
      default:
        break;
    }
  }
  return m;
}

// What the task's calls ask the replay to move, summed over its real members: its own buffers
// (`own`: a DP member its shard of the layer); a DP collective's chunks are the largest member's
// (schedule::dp_chunk_bytes: norms are whole on every tp rank), of which a member of degree t
// holds C/t (across groups, C/dp_pieces).
double expected_replay_bytes(const schedule::TaskGraph& g, std::uint32_t i, bool own) {
  const auto& t = g.tasks[i];
  const auto& dev = g.devices[t.device];
  if (t.kind == TaskKind::SendActivation || t.kind == TaskKind::SendGradient) return expected_flow_bytes(g, i);
  double sum = 0;
  const bool folded = !t.across_groups && schedule::folds_experts(g, g.members_of(i));
  for (const auto& c : g.calls_of(i)) {
    if (t.kind == TaskKind::TpCollective && c.ranks == 1) continue;  // over one rank: nothing moves
    if (own || (t.kind != TaskKind::GradReduce && t.kind != TaskKind::ParamGather)) {
      sum += c.bytes * c.count;
      continue;
    }
    if (c.experts && folded) {  // the whole expert part once (schedule::expert_dp_bytes)
      sum += schedule::expert_dp_bytes(g, i, c);
      continue;
    }
    long long chunks = g.dp_chunks(i), held = chunks / dev.tp;
    if (t.across_groups) {
      chunks = 1;
      for (auto m : g.members_of(i)) chunks = std::lcm(chunks, schedule::dp_pieces(g.devices[g.tasks[m].device]));
      held = chunks / schedule::dp_pieces(dev);
    }
    sum += schedule::dp_chunk_bytes(g, i, c, chunks) * static_cast<double>(held);
  }
  return sum * dev.count;
}

TEST(Payload, TheReplayMovesEveryCommunicationTasksCalls) {
  for (const auto& f : families()) {
    SCOPED_TRACE(f.name);
    auto s = test::parse(f.text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto g = schedule::build_schedule(*s, *s->plan);
    auto layout = exec::dp_layout(g);
    ASSERT_TRUE(layout.ok()) << test::all_errors(layout.errors());
    const Moved m = replay_moves(g, *layout);
    std::map<std::uint32_t, double> tp_expected;
    for (std::uint32_t i = 0; i < g.size(); ++i) {
      const auto& t = g.tasks[i];
      if (t.kind == TaskKind::EpAllToAll) continue;  // sized by the real routing (docs/executor.md)
      if (!communicates(t.kind)) continue;
      const double expected = expected_replay_bytes(g, i, false);
      if (t.kind == TaskKind::TpCollective) {
        tp_expected[t.device] += expected;
        continue;
      }
      const double moved = m.per_task.count(i) ? m.per_task.at(i) : 0;
      // fp32 values rounded to whole ones and up to a multiple of the group: a few bytes per call.
      EXPECT_NEAR(moved, expected, expected * 1e-6 + 64.0 * static_cast<double>(g.devices[t.device].count))
          << schedule::task_name(t);
      // And that is the task's own payload, give or take the norms a larger member holds whole.
      const double own = expected_replay_bytes(g, i, true);
      EXPECT_GE(moved, own - 64.0 * static_cast<double>(g.devices[t.device].count)) << schedule::task_name(t);
      EXPECT_LE(moved, own * 1.001) << schedule::task_name(t);
    }
    // A device's TP tasks carry the calls' fractions from one to the next: all of them together move
    // the calls' bytes.
    for (const auto& [dev, expected] : tp_expected)
      EXPECT_NEAR(m.tp_per_device.at(dev), expected, expected * 1e-6 + 64.0 * g.devices[dev].count) << "device " << dev;
  }
}

// A real replay (one step on cpu devices, a backend that counts what its communicators and copies
// move) moves exactly what the sizing functions say: it derives no size of its own.
TEST(Payload, ARealReplayMovesWhatItsSizingFunctionsSay) {
  for (const auto& f : families()) {
    SCOPED_TRACE(f.name);
    auto s = test::parse(f.text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto g = schedule::build_schedule(*s, *s->plan);  // the replay's own graph (replay.cpp)
    auto layout = exec::dp_layout(g);
    ASSERT_TRUE(layout.ok());
    const Moved m = replay_moves(g, *layout);
    test::FlakyBackend counting(exec::make_cpu_backend(layout->real_devices), 1 << 30);
    auto r = exec::replay(*s, *s->plan, counting, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    ASSERT_EQ(r->graph.size(), g.size());
    double counted = 0;
    for (const auto& [size, values] : counting.reduced_by_size()) counted += static_cast<double>(values);
    EXPECT_NEAR(counted, m.counted, 0.5);
    EXPECT_NEAR(static_cast<double>(counting.copied_bytes()), m.copied, 0.5);
  }
}

// Compute tasks carry their ops (TaskGraph::ops_of): the op lists the cost model priced them by,
// so that on a device without a per-kernel host floor a task's duration is its ops' time, each
// list as many times as the task says (a recompute task each op's recompute share of its
// forward): the executor's replay runs these lists and predicts its per-class parts from them.
TEST(Payload, EveryComputeTaskCarriesTheOpsItsTimeIsMadeOf) {
  auto all = families();
  all.push_back({"MoE with a dense first layer, full recompute",
                 scenario("tp = 1\npp = 2\ndp = 2\nep = 2\nmicro_batch = 1\nrecompute = \"full\"\n", 1, 4,
                          "experts = 4\ntop_k = 2\nfirst_dense_layers = 1\ndense_ffn_hidden = 512\n"),
                 true});
  all.push_back({"selective recompute, ZeRO 3 without copy-out",
                 scenario("tp = 2\npp = 1\ndp = 2\nzero = 3\nmicro_batch = 1\nrecompute = \"selective\"\n", 1, 4)});
  for (const auto& f : all) {
    SCOPED_TRACE(f.name);
    auto s = test::parse(f.text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    s->training.zero3_copy_out = false;  // (its weight copies are priced beside the ops)
    const auto g = schedule::build_schedule(*s, *s->plan);
    std::set<schedule::OpRole> roles;
    int compute = 0;
    for (std::uint32_t i = 0; i < g.size(); ++i) {
      const auto& t = g.tasks[i];
      const bool computes = t.kind == TaskKind::Forward || t.kind == TaskKind::Backward || t.kind == TaskKind::Recompute;
      if (!computes) {
        EXPECT_TRUE(g.ops_of(i).empty()) << schedule::task_name(t);
        continue;
      }
      ++compute;
      const auto& dev = s->cluster.pools[static_cast<std::size_t>(g.devices[t.device].pool)].device;
      ASSERT_EQ(dev.efficiency.host_overhead.v, 0);
      const auto pass = t.kind == TaskKind::Backward ? cost::Pass::Backward : cost::Pass::Forward;
      double seconds = 0, layers = 0;
      for (const auto& use : g.ops_of(i)) {
        roles.insert(use.role);
        if (use.role == schedule::OpRole::Layer || use.role == schedule::OpRole::DenseLayer) layers += use.times;
        for (const auto& op : g.op_lists[use.list]) {
          const double share = t.kind == TaskKind::Recompute && s->plan->recompute != cost::Recompute::Full
                                   ? cost::recompute_share(op, s->plan->recompute)
                                   : 1.0;
          seconds += cost::op_time(dev, s->training.precision, op, pass).v * use.times * share;
        }
      }
      EXPECT_NEAR(layers, t.layers, 1e-9) << schedule::task_name(t);
      // (Each task's time rounds to the nanosecond.)
      EXPECT_NEAR(seconds * 1e9, static_cast<double>(t.duration), 1.0) << schedule::task_name(t);
    }
    EXPECT_GT(compute, 0);
    EXPECT_TRUE(roles.count(schedule::OpRole::Layer) && roles.count(schedule::OpRole::Embedding) &&
                roles.count(schedule::OpRole::Head));
    if (std::string(f.name).find("dense first layer") != std::string::npos) {
      EXPECT_TRUE(roles.count(schedule::OpRole::DenseLayer));
    }
  }
}

}  // namespace
}  // namespace hetsim
