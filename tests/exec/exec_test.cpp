// The executor: replay runs exactly the planned tasks in the planned order on real buffers of the
// planned sizes; compare and calibration compute what they claim; bad plans fail clearly.

#include <gtest/gtest.h>

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <mutex>
#include <tuple>
#include <unistd.h>
#include <set>
#include <thread>

#include "exec/calibrate/calibrate.hpp"
#include "exec/comm/shm_group.hpp"
#include "exec/compare/compare.hpp"
#include "exec/cpu/cpu_backend.hpp"
#include "exec/replay/communicators.hpp"
#include "exec/replay/dp_groups.hpp"
#include "exec/replay/replay.hpp"
#include "exec/replay/routing.hpp"
#include "exec/replay/scale.hpp"
#include "models/cost/compute.hpp"
#include "sim/analytic/stage_cost.hpp"
#include "sim/schedule/schedule.hpp"
#include "tests/support/flaky_backend.hpp"
#include "tests/support/replay_checks.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

std::string small(const std::string& parallel, int devices = 2) {
  return "[model]\npreset = \"tiny\"\nlayers = 4\nhidden = 128\nheads = 4\nkv_heads = 4\nffn_hidden = 512\nvocab = 512\n"
         "[training]\nglobal_batch = 4\nseq_len = 64\nprecision = \"fp32\"\n"
         "[[cluster.link]]\nname = \"shm\"\nkind = \"scale-up\"\nbandwidth = \"10GB/s\"\nlatency = \"1us\"\n"
         "[[cluster.pool]]\nnodes = 1\n"
         "[cluster.pool.device]\nname = \"core\"\npeak = { fp32 = \"20GFLOPS\" }\nmemory = \"1GiB\"\n"
         "memory_bandwidth = \"10GB/s\"\nnode = { devices = " + std::to_string(devices) +
         ", fabric = \"shm\", nics = 1, nic = \"shm\" }\n"
         "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n"
         "[parallel]\n" + parallel;
}

// A multi-head latent attention model (keys 48 a head: 32 + 16 RoPE; values 32) replays under
// selective recompute of its up projections and attention core: every task runs in order on
// buffers of the planned sizes (check_order_and_dependencies: the measured peak is the
// predicted one). The attention kernel's value width is checked in
// CpuDevice.AttentionMatchesTheNaiveFormulas.
TEST(Replay, LatentAttentionModelsReplayUnderTheirRecomputeModules) {
  auto text = small("tp = 1\npp = 2\ndp = 1\nmicro_batch = 1\nrecompute = \"selective\"\n"
                    "recompute_modules = [\"mla_up_proj\", \"core_attn\"]\n");
  text.replace(text.find("kv_heads = 4"), 12,
               "kv_heads = 4\nhead_dim = 48\nq_lora_rank = 64\nkv_lora_rank = 32\nqk_rope_dim = 16\nv_head_dim = 32\n");
  auto s = test::parse(text);
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto backend = exec::make_cpu_backend(2);
  auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  test::check_order_and_dependencies(*r);
}

TEST(Replay, RunsExactlyThePlannedTasksInOrder) {
  // (Also as two pipeline runs a step, each filling and draining: the same tasks, run after run.)
  for (const char* runs : {"", "pipeline_runs = 2\n"}) {
    auto s = test::parse(small(std::string("tp = 1\npp = 2\ndp = 1\nmicro_batch = 1\n") + runs));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    auto backend = exec::make_cpu_backend(2);
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    // Every task in dependency and predicted order; real buffers of the planned sizes, so the
    // measured peak is the predicted one.
    test::check_order_and_dependencies(*r);
  }
}

void check_replay(const exec::Replay& r) {
  const auto& g = r.graph;
  const auto& m = r.measured;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    ASSERT_GE(m.start[i], 0);
    ASSERT_GE(m.end[i], m.start[i]);
  }
  for (std::size_t d = 0; d < g.devices.size(); ++d) EXPECT_EQ(m.peak_bytes[d], r.predicted.peak_bytes[d]);
}

TEST(Replay, TensorAndDataParallelPlansRunWithRealCollectives) {
  auto backend = exec::make_cpu_backend(4);
  // (plan, devices per node)
  for (const auto& [par, devs] : std::vector<std::pair<const char*, int>>{{"tp = 2\npp = 1\ndp = 1\n", 2},
                                                                        {"tp = 1\npp = 1\ndp = 2\n", 2},
                                                                        {"tp = 2\npp = 1\ndp = 2\n", 4},
                                                                        {"tp = 1\npp = 2\ndp = 2\nzero = 3\n", 4},
                                                                        {"tp = 1\npp = 1\ndp = 2\nzero = 0\n", 2}}) {
    auto s = test::parse(small(par, devs));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_TRUE(r.ok()) << par << test::all_errors(r.errors());
    check_replay(*r);
  }
}

// Regression (found while benchmarking): backward GEMMs of micro-batches larger than one used to
// overrun the scratch buffers (m·n > max(n, m)·k). ASan in CI catches a relapse.
TEST(Replay, MicroBatchesLargerThanOneRun) {
  auto s = test::parse(small("tp = 1\npp = 1\ndp = 2\nmicro_batch = 2\n"));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto backend = exec::make_cpu_backend(2);
  auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  check_replay(*r);
}

TEST(Replay, RefusesWhatItCannotRunWithAClearMessage) {
  auto backend = exec::make_cpu_backend(2);
  {
    auto s = test::parse(small("tp = 1\npp = 4\ndp = 1\n", 4));
    ASSERT_TRUE(s.ok());
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(to_string(r.errors()[0]).find("needs 4 devices but the cpu backend has 2"), std::string::npos);
    EXPECT_EQ(worst_kind(r.errors()), ErrorKind::Environment) << "missing hardware";
  }
}

// Context parallelism is estimated and simulated, not replayed (docs/executor.md, Limits): the
// replay says so, naming the key, before it runs anything.
TEST(Replay, RefusesContextParallelPlansNamingTheKey) {
  auto backend = exec::make_cpu_backend(2);
  auto s = test::parse(small("tp = 1\npp = 1\ndp = 1\ncp = 2\n", 2));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(to_string(r.errors()[0]).find("context parallelism (cp = 2) is not replayed"), std::string::npos)
      << to_string(r.errors()[0]);
  EXPECT_NE(to_string(r.errors()[0]).find("parallel.cp"), std::string::npos);
}

// A two-pool cluster (a "fast" and a "slow" pool of cpu cores, 4 devices each) with a plan of
// replica groups given as [[parallel.replicas]] (`groups`), or a [parallel] plan.
std::string two_pools(const std::string& parallel, int global_batch = 4, int devices_per_pool = 4) {
  std::string pools;
  for (const char* name : {"fast", "slow"})
    pools += std::string("[[cluster.pool]]\nname = \"") + name + "\"\nnodes = 1\n[cluster.pool.device]\nname = \"core-" +
             name + "\"\npeak = { fp32 = \"20GFLOPS\" }\nmemory = \"1GiB\"\nmemory_bandwidth = \"10GB/s\"\n"
             "node = { devices = " + std::to_string(devices_per_pool) + ", fabric = \"shm\", nics = 1, nic = \"shm\" }\n";
  return "[model]\npreset = \"tiny\"\nlayers = 4\nhidden = 128\nheads = 4\nkv_heads = 4\nffn_hidden = 512\nvocab = 512\n"
         "[training]\nglobal_batch = " + std::to_string(global_batch) + "\nseq_len = 64\nprecision = \"fp32\"\n"
         "[[cluster.link]]\nname = \"shm\"\nkind = \"scale-up\"\nbandwidth = \"10GB/s\"\nlatency = \"1us\"\n" +
         pools + "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n[parallel]\n" +
         parallel;
}

// The pool-local groups `hetsim plan` recommends for mixed clusters: two replicas of one stage on
// the fast pool, one replica of a two-stage pipeline (other layer boundaries) on the slow one,
// with an uneven batch split (1 and 2 micro-batches).
std::string two_group_plan(int tp, int zero) {
  const std::string t = std::to_string(tp);
  return "micro_batch = 1\nzero = " + std::to_string(zero) + "\n" +
         "[[parallel.replicas]]\ncount = 2\nmicro_batches = 1\nstages = [{pool = \"fast\", tp = " + t + ", layers = 4}]\n"
         "[[parallel.replicas]]\ncount = 1\nmicro_batches = 2\nstages = [{pool = \"slow\", tp = " + t +
         ", layers = 1}, {pool = \"slow\", tp = " + t + ", layers = 3}]\n";
}

// As two_group_plan, with the fast pool's group at tp 2 and the slow pool's at tp 1: the groups'
// gradient shards differ, so their collectives reshard (dp_layout's chunks).
std::string mixed_tp_plan(int zero) {
  return "micro_batch = 1\nzero = " + std::to_string(zero) + "\n" +
         "[[parallel.replicas]]\ncount = 2\nmicro_batches = 1\nstages = [{pool = \"fast\", tp = 2, layers = 4}]\n"
         "[[parallel.replicas]]\ncount = 1\nmicro_batches = 2\nstages = [{pool = \"slow\", tp = 1, layers = 1}, "
         "{pool = \"slow\", tp = 1, layers = 3}]\n";
}

// Replica j's gradient of layer L at element f of the whole layer (numbered across the groups in
// plan order): small integers, so every sum is exact whatever the order.
float grad_value(int j, int layer, std::size_t f) {
  return float(j + 1) * float(1 + int((f + 3 * std::size_t(layer)) % 5));
}

// Runs every data-parallel collective of (s, p) on cpu devices as the replay lays them out
// (dp_layout: one collective per chunk a rank holds), each device in its predicted order: ZeRO 0
// all-reduces the gradient; ZeRO 1 reduce-scatters it and the parameter gather all-gathers the
// shards. A chunk holds `n` elements of the layer (n = members × (3 + layer)), chunk c elements
// c·n … c·n + n − 1. Returns, per real device and layer it holds, the elements it ends with.
struct Reduced {
  std::map<std::tuple<int, int, int>, std::map<std::size_t, float>> by;  ///< (j, rank, layer) → element → value
  int replicas = 0;
  std::map<int, int> chunks;  ///< layer → chunks its collectives cut it into
};
// cpu devices for every real device of `layout` and a communicator for each of its groups, as the
// replay makes them (empty when one cannot be made).
struct LayoutDevices {
  std::unique_ptr<exec::Backend> backend;
  std::vector<std::unique_ptr<exec::Device>> devs;
  std::vector<exec::Communicators> comms;
};
LayoutDevices open_layout(const exec::DpLayout& layout) {
  LayoutDevices out;
  out.backend = exec::make_cpu_backend(layout.real_devices);
  for (int d = 0; d < layout.real_devices; ++d) out.devs.push_back(out.backend->open(d));
  for (const auto& reals : layout.groups) {
    std::vector<exec::Device*> members;
    for (int r : reals) members.push_back(out.devs[static_cast<std::size_t>(r)].get());
    auto c = out.backend->communicators(members);
    EXPECT_TRUE(c.ok());
    if (!c) return {};
    out.comms.push_back(std::move(*c));
  }
  return out;
}

Reduced run_dp_collectives(const Scenario& s, const plan::Plan& p) {
  Reduced out;
  const auto g = schedule::build_schedule(s, p);
  const auto pred = engine::run_native(g);
  auto layout = exec::dp_layout(g);
  EXPECT_TRUE(layout.ok()) << test::all_errors(layout.errors());
  if (!layout || !pred) return out;
  LayoutDevices opened = open_layout(*layout);
  if (opened.comms.size() != layout->groups.size()) return out;
  auto& comms = opened.comms;
  std::vector<int> group_first_replica;  // replicas numbered across groups
  for (const auto& grp : p.groups) {
    group_first_replica.push_back(out.replicas);
    out.replicas += grp.replicas;
  }
  for (std::uint32_t i = 0; i < g.size(); ++i)
    if (layout->chunks[i] > 0) out.chunks[g.tasks[i].first_layer] = layout->chunks[i];
  std::mutex mu;
  std::vector<std::thread> threads;
  for (std::uint32_t d = 0; d < g.devices.size(); ++d)
    for (int member = 0; member < g.devices[d].count; ++member)
      threads.emplace_back([&, d, member] {
        const auto& info = g.devices[d];
        const int rank = member % info.tp;
        const int j = group_first_replica[static_cast<std::size_t>(info.group)] + member / info.tp;
        const int real = layout->first_real[d] + member;
        std::vector<std::uint32_t> ids;
        for (std::uint32_t i = 0; i < g.size(); ++i)
          if (g.tasks[i].device == d && !layout->member_of[i].empty()) ids.push_back(i);
        std::stable_sort(ids.begin(), ids.end(), [&](auto a, auto b) { return pred->start[a] < pred->start[b]; });
        // Reductions first, then the gathers of their shards (an overlapped gather runs before
        // the step's forward, so in the predicted order it comes first: it gathers last step's).
        std::stable_partition(ids.begin(), ids.end(), [&](auto i) { return g.tasks[i].kind == schedule::TaskKind::GradReduce; });
        std::map<std::pair<int, int>, std::vector<float>> shard;  // ZeRO 1: (layer, chunk) → reduced shard
        for (std::uint32_t id : ids) {
          const auto& t = g.tasks[id];
          const auto& joined = layout->member_of[id][static_cast<std::size_t>(rank)];
          const int first_chunk = rank * static_cast<int>(joined.size());  // this rank's chunks, in order
          for (std::size_t q = 0; q < joined.size(); ++q) {
            const int chunk = first_chunk + static_cast<int>(q);
            const auto gi = static_cast<std::size_t>(joined[q]);
            auto& c = *comms[gi][static_cast<std::size_t>(exec::rank_in(layout->groups[gi], real))];
            const auto n = static_cast<std::size_t>(c.size()) * (3 + static_cast<std::size_t>(t.first_layer));
            const std::size_t per = n / static_cast<std::size_t>(c.size());
            std::vector<float> grad(n), full(n);
            for (std::size_t i = 0; i < n; ++i) grad[i] = grad_value(j, t.first_layer, std::size_t(chunk) * n + i);
            bool ok = true;
            if (t.kind == schedule::TaskKind::GradReduce && p.zero == 0) {
              ok = c.all_reduce(grad.data(), n).ok();
              full = grad;
            } else if (t.kind == schedule::TaskKind::GradReduce) {
              auto& mine = shard[{t.first_layer, chunk}];
              mine.resize(per);
              ok = c.reduce_scatter(grad.data(), mine.data(), per).ok();
              EXPECT_TRUE(ok);
              continue;
            } else {
              ok = c.all_gather(shard[{t.first_layer, chunk}].data(), full.data(), per).ok();
            }
            EXPECT_TRUE(ok);
            const std::lock_guard<std::mutex> lock(mu);
            auto& held = out.by[{j, rank, t.first_layer}];
            for (std::size_t i = 0; i < n; ++i) EXPECT_TRUE(held.emplace(std::size_t(chunk) * n + i, full[i]).second);
          }
        }
      });
  for (auto& t : threads) t.join();
  return out;
}

// Every replica holds, over its tp ranks, every element of every layer once, each the sum over
// the plan's 3 replicas: Σ_j (j + 1) · f = 6 · f.
void expect_summed_over_replicas(const Reduced& r, int layers) {
  ASSERT_EQ(r.replicas, 3);
  for (int j = 0; j < r.replicas; ++j)
    for (int layer = 0; layer < layers; ++layer) {
      std::map<std::size_t, float> whole;
      for (const auto& [key, values] : r.by) {
        if (std::get<0>(key) != j || std::get<2>(key) != layer) continue;
        for (const auto& [f, v] : values) EXPECT_TRUE(whole.emplace(f, v).second) << "element " << f << " held twice";
      }
      ASSERT_FALSE(whole.empty()) << "replica " << j << " layer " << layer;
      EXPECT_EQ(whole.begin()->first, 0u);
      EXPECT_EQ(whole.rbegin()->first, whole.size() - 1) << "replica " << j << " layer " << layer << ": elements missing";
      for (const auto& [f, v] : whole)
        ASSERT_EQ(v, 6.0f * float(1 + int((f + 3 * std::size_t(layer)) % 5))) << "replica " << j << " layer " << layer << " element " << f;
    }
}

// Numerics of the cross-group collectives: with two replica groups of different pipeline depths
// and layer boundaries, every rank of every replica ends with the gradient summed over all
// replicas of the plan, bit for bit what one group of as many replicas gets.
TEST(Replay, CrossGroupGradientReductionMatchesOneGroup) {
  for (const int tp : {1, 2})
    for (const int zero : {0, 1}) {
      auto two = test::parse(two_pools(two_group_plan(tp, zero)));
      ASSERT_TRUE(two.ok()) << test::all_errors(two.errors());
      auto one = test::parse(two_pools("micro_batch = 1\nzero = " + std::to_string(zero) +
                                           "\n[[parallel.replicas]]\ncount = 3\nmicro_batches = 1\nstages = [{pool = \"fast\", tp = " +
                                           std::to_string(tp) + ", layers = 4}]\n", 3, 8));
      ASSERT_TRUE(one.ok()) << test::all_errors(one.errors());
      const auto got = run_dp_collectives(*two, *two->plan), ref = run_dp_collectives(*one, *one->plan);
      // Every replica, tp rank and layer, in both.
      ASSERT_EQ(got.by.size(), std::size_t(3 * tp * 4)) << "tp " << tp << " zero " << zero;
      ASSERT_EQ(ref.by.size(), got.by.size());
      for (const auto& [key, values] : got.by) {
        const auto& [j, rank, layer] = key;
        ASSERT_EQ(values, ref.by.at(key)) << "replica " << j << " rank " << rank << " layer " << layer;
      }
      expect_summed_over_replicas(got, 4);
      for (const auto& [layer, c] : got.chunks) EXPECT_EQ(c, tp) << "one degree: a chunk per tp rank";
    }
}

// Groups of different tensor-parallel degrees (tp 2 on the fast pool, tp 1 on the slow one):
// each layer is cut into lcm(2, 1) = 2 chunks, the tp 1 rank joins both collectives, each tp 2
// rank the one of its half; every replica still ends with every element summed over all three.
TEST(Replay, CrossGroupGradientReductionReshardsBetweenTpDegrees) {
  for (const int zero : {0, 1}) {
    auto s = test::parse(two_pools(mixed_tp_plan(zero)));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto got = run_dp_collectives(*s, *s->plan);
    ASSERT_EQ(got.chunks.size(), 4u);
    for (const auto& [layer, c] : got.chunks) EXPECT_EQ(c, 2) << "layer " << layer;
    // Replicas 0 and 1 (tp 2) at ranks 0 and 1, replica 2 (tp 1) at rank 0: 5 holders of 4 layers.
    EXPECT_EQ(got.by.size(), std::size_t(5 * 4)) << "zero " << zero;
    expect_summed_over_replicas(got, 4);
  }
}

// A graph of one gradient reduce of `layer` on each device (tp, replicas), one group each, all
// members of one collective: hybrid sharding's all-reduce across groups when `across`.
schedule::TaskGraph one_joined_reduce(const std::vector<std::pair<int, int>>& devices, int layer, bool across) {
  schedule::TaskGraph g;
  g.collectives.emplace_back();
  for (const auto& [tp, replicas] : devices) {
    schedule::DeviceRep d;
    d.group = static_cast<int>(g.devices.size());
    d.tp = tp;
    d.replicas = replicas;
    d.count = tp * replicas;
    d.label = "g" + std::to_string(d.group) + " s0 tp" + std::to_string(tp);
    g.devices.push_back(d);
    schedule::Task t;
    t.device = static_cast<std::uint32_t>(g.devices.size() - 1);
    t.stream = schedule::Stream::DpComm;
    t.kind = schedule::TaskKind::GradReduce;
    t.across_groups = across;
    t.first_layer = layer;
    t.layers = 1;
    t.collective = 0;
    g.collectives[0].push_back(static_cast<std::uint32_t>(g.tasks.size()));
    g.tasks.push_back(t);
  }
  return g;
}

// Degrees whose least common multiple would cut a layer into more than kMaxDpChunks chunks are
// refused before anything runs, naming the layer and the degrees.
TEST(Replay, DegreesThatCutALayerIntoTooManyChunksAreRefused) {
  auto g = one_joined_reduce({{5, 1}, {7, 1}, {3, 1}}, 2, false);
  auto layout = exec::dp_layout(g);
  ASSERT_FALSE(layout.ok());
  const auto msg = to_string(layout.errors()[0]);
  EXPECT_NE(msg.find("layer 2: its data-parallel gradient reduce joins tensor-parallel degrees 3, 5, 7, whose least "
                     "common multiple, 105, cuts the layer into more than 64 chunks"),
            std::string::npos)
      << msg;
  EXPECT_EQ(worst_kind(layout.errors()), ErrorKind::BadInput);
  g.devices[1].tp = g.devices[1].count = 1;  // 5, 1, 3: 15 chunks
  layout = exec::dp_layout(g);
  ASSERT_TRUE(layout.ok()) << test::all_errors(layout.errors());
  EXPECT_EQ(layout->chunks[0], 15);
  EXPECT_EQ(layout->member_of[0][0].size(), 3u) << "each tp 5 rank holds 3 of the 15 chunks";
  EXPECT_EQ(layout->member_of[1][0].size(), 15u) << "the tp 1 device holds them all";
  // Chunk c is held by rank c/3 of tp 5 and c/5 of tp 3: chunks held by the same ranks share a
  // communicator, (0, 0) (1, 0) (1, 1) (2, 1) (3, 1) (3, 2) (4, 2).
  EXPECT_EQ(layout->groups.size(), 7u);
  for (const auto& grp : layout->groups) EXPECT_EQ(grp.size(), 3u) << "a rank of each device";
  EXPECT_EQ(layout->member_of[2][2], (std::vector<int>{5, 5, 6, 6, 6})) << "tp 3 rank 2: chunks 10-14";
}

// Hybrid sharding (ZeRO 2/3 over two groups): after each group's reduce-scatter (here summed
// directly: the fast group's two replicas hold halves, the slow group's one replica everything),
// the all-reduces of dp_layout's pieces leave every chunk of every member's piece summed over all
// three replicas of both groups, also where the groups' tp degrees differ (tp 0: mixed_tp_plan).
TEST(Replay, HybridShardingSumsEveryGradientOverEveryGroup) {
  for (const int tp : {1, 2, 0}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    auto s = test::parse(two_pools(tp > 0 ? two_group_plan(tp, 2) : mixed_tp_plan(2)));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto g = schedule::build_schedule(*s, *s->plan);
    auto layout = exec::dp_layout(g);
    ASSERT_TRUE(layout.ok()) << test::all_errors(layout.errors());
    LayoutDevices opened = open_layout(*layout);
    ASSERT_EQ(opened.comms.size(), layout->groups.size());
    auto& comms = opened.comms;
    int across = 0;
    std::mutex mu;
    std::vector<std::thread> threads;
    for (std::uint32_t d = 0; d < g.devices.size(); ++d)
      for (int member = 0; member < g.devices[d].count; ++member)
        threads.emplace_back([&, d, member] {
          const auto& info = g.devices[d];
          const int real = layout->first_real[d] + member;
          const int replica = member / info.tp, rank = member % info.tp;
          const long long n = static_cast<long long>(info.tp) * info.replicas;
          const long long q = static_cast<long long>(rank) * info.replicas + replica;  // this member's piece
          for (std::uint32_t i = 0; i < g.size(); ++i) {  // layer order on every device
            const auto& t = g.tasks[i];
            if (t.device != d || !t.across_groups) continue;
            const auto c_all = static_cast<long long>(layout->chunks[i]);
            const auto& joins = layout->pieces_of[i][static_cast<std::size_t>(member)];
            EXPECT_EQ(static_cast<long long>(joins.size()), c_all / n);
            for (std::size_t k = 0; k < joins.size(); ++k) {
              const long long chunk = q * c_all / n + static_cast<long long>(k);
              const auto gi = static_cast<std::size_t>(joins[k]);
              auto& c = *comms[gi][static_cast<std::size_t>(exec::rank_in(layout->groups[gi], real))];
              EXPECT_EQ(c.size(), 2) << "one member per group";
              const std::size_t m = 6;  // elements per chunk
              std::vector<float> grad(m);
              // What the group's reduce-scatter left: the fast group's replicas 0 and 1, the slow
              // group's replica 2.
              for (std::size_t e = 0; e < m; ++e) {
                const std::size_t f = static_cast<std::size_t>(chunk) * m + e;
                grad[e] = info.group == 0 ? grad_value(0, t.first_layer, f) + grad_value(1, t.first_layer, f)
                                          : grad_value(2, t.first_layer, f);
              }
              EXPECT_TRUE(c.all_reduce(grad.data(), m).ok());
              for (std::size_t e = 0; e < m; ++e) {
                const std::size_t f = static_cast<std::size_t>(chunk) * m + e;
                EXPECT_EQ(grad[e], 6.0f * float(1 + int((f + 3 * std::size_t(t.first_layer)) % 5)))
                    << "layer " << t.first_layer << " chunk " << chunk;
              }
              const std::lock_guard<std::mutex> lock(mu);
              ++across;
            }
          }
        });
    for (auto& t : threads) t.join();
    // Every chunk of every layer once per holder: C per layer in each group.
    int expected = 0;
    for (std::uint32_t i = 0; i < g.size(); ++i)
      if (g.tasks[i].across_groups) expected += layout->chunks[i];
    EXPECT_EQ(across, expected);
    EXPECT_GT(across, 0);
  }
}

// Pieces whose least common multiple would cut a layer into more than kMaxDpChunks chunks are
// refused before anything runs, naming the layer and the device counts.
TEST(Replay, HybridShardingPiecesThatCutALayerIntoTooManyChunksAreRefused) {
  const auto g = one_joined_reduce({{5, 3}, {7, 1}}, 3, true);
  auto layout = exec::dp_layout(g);
  ASSERT_FALSE(layout.ok());
  const auto msg = to_string(layout.errors()[0]);
  EXPECT_NE(msg.find("layer 3: hybrid sharding's all-reduce across groups joins groups of 7, 15 devices (tp · replicas), "
                     "whose least common multiple, 105, cuts the layer into more than 64 chunks"),
            std::string::npos)
      << msg;
  EXPECT_EQ(worst_kind(layout.errors()), ErrorKind::BadInput);
}

// The two-group plans replay: every task measured, every dependency kept, the planned peaks;
// under ZeRO 2 and 3 as hybrid sharding.
TEST(Replay, PlansWithSeveralReplicaGroupsRun) {
  // tp 0: the groups at tp 2 and tp 1 (mixed_tp_plan).
  for (const auto& [tp, zero] :
       std::vector<std::pair<int, int>>{{1, 0}, {2, 1}, {0, 0}, {0, 1}, {1, 2}, {2, 3}, {0, 2}, {0, 3}}) {
    SCOPED_TRACE("tp " + std::to_string(tp) + " zero " + std::to_string(zero));
    auto s = test::parse(two_pools(tp > 0 ? two_group_plan(tp, zero) : mixed_tp_plan(zero)));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    ASSERT_EQ(s->plan->groups.size(), 2u);
    auto backend = exec::make_cpu_backend(tp > 0 ? 4 * tp : 6);
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    ASSERT_FALSE(r->graph.collectives.empty()) << "the groups' DP collectives are joined";
    test::check_order_and_dependencies(*r);
    // Members of one cross-group collective cannot end before the last of them started.
    for (const auto& members : r->graph.collectives) {
      std::int64_t last_start = 0;
      for (auto t : members) last_start = std::max(last_start, r->measured.start[t]);
      for (auto t : members) EXPECT_GE(r->measured.end[t], last_start);
    }
  }
}

// Pools run on the backend devices their lists name (a node with two GPU models): the fast
// pool's two replicas share device 4, the slow pool's two stages run on device 5. A backend whose
// device 5 is lost shows that the slow pool ran there; without the lists it is never used.
TEST(Replay, PoolsRunOnTheDevicesTheirListsName) {
  auto s = test::parse(two_pools(two_group_plan(1, 0)));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  {
    test::FlakyBackend flaky(exec::make_cpu_backend(6), 0, 5);
    auto r = exec::replay(*s, *s->plan, flaky, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    EXPECT_FALSE(r->failure.has_value()) << "devices 0-3 only";
  }
  {
    test::FlakyBackend flaky(exec::make_cpu_backend(6), 0, 5);
    exec::ReplayOptions o{1, 0};
    o.pool_devices = {{4}, {5}};
    auto r = exec::replay(*s, *s->plan, flaky, o);
    std::string said = r.ok() ? (r->failure ? to_string(*r->failure) : std::string()) : test::all_errors(r.errors());
    EXPECT_NE(said.find("flakycpu5: device lost"), std::string::npos) << said;
  }
  {
    test::FlakyBackend flaky(exec::make_cpu_backend(6), 0, 5);
    exec::ReplayOptions o{1, 0};
    o.pool_devices = {{4}, {2, 3}};
    auto r = exec::replay(*s, *s->plan, flaky, o);
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    EXPECT_FALSE(r->failure.has_value());
    std::string notes;
    for (const auto& n : r->notes) notes += n + "\n";
    EXPECT_NE(notes.find("pool 'fast' runs on flaky devices 4"), std::string::npos) << notes;
    EXPECT_NE(notes.find("pool 'slow' runs on flaky devices 2, 3"), std::string::npos) << notes;
  }
  // Refused before anything runs: an index the backend lacks (missing hardware), a list per pool.
  auto backend = exec::make_cpu_backend(6);
  exec::ReplayOptions o{1, 0};
  o.pool_devices = {{}, {6}};
  auto r = exec::replay(*s, *s->plan, *backend, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(to_string(r.errors()[0]).find("pool 'slow': device 6 is not one of the cpu backend's 6 (0-5)"), std::string::npos)
      << to_string(r.errors()[0]);
  EXPECT_EQ(worst_kind(r.errors()), ErrorKind::Environment);
  o.pool_devices = {{0}};
  r = exec::replay(*s, *s->plan, *backend, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(worst_kind(r.errors()), ErrorKind::BadInput);
}

// A device lost mid-run in one group (the slow pool's second stage) ends the run with the steps
// measured so far.
TEST(Replay, ADeviceLostInOneGroupKeepsTheMeasuredSteps) {
  auto s = test::parse(two_pools(two_group_plan(1, 1)));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto g = schedule::build_schedule(*s, *s->plan);
  ASSERT_EQ(g.devices.size(), 3u);  // fast ×2, slow stage 0, slow stage 1: real devices 0-1, 2, 3
  int per_step = 1;                 // the resident state, then per task its block and the kept one
  for (const auto& t : g.tasks)
    if (t.device == 2 && (t.alloc_bytes > 0 || t.free_bytes > 0)) per_step += 2;
  // per_step bounds a step's allocations from above (a task that only frees may allocate nothing).
  test::FlakyBackend flaky(exec::make_cpu_backend(4), per_step + 3, 3);
  auto r = exec::replay(*s, *s->plan, flaky, {3, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_NE(to_string(*r->failure).find("flakycpu3: device lost"), std::string::npos) << to_string(*r->failure);
  EXPECT_GE(r->step_ns.size(), 1u);
  EXPECT_LT(r->step_ns.size(), 3u);
}

// Every collective of the shared-memory communicator, in place on host memory and staged
// through host buffers (the path device memory takes), against sums computed here.
TEST(Communicator, CollectivesAndPointToPointAreNumericallyRight) {
  for (const bool staged : {false, true}) {
    // 3 members; member r holds values r + 1 + i/10. Sum over members: 6 + 3·i/10.
    const int n = 3;
    const std::size_t count = 6;
    auto grp = std::make_shared<exec::ShmGroup>(n);
    auto backend = exec::make_cpu_backend(n);
    std::vector<std::unique_ptr<exec::Device>> devs;
    exec::Communicators comms;
    for (int r = 0; r < n; ++r) {
      devs.push_back(backend->open(r));
      comms.push_back(exec::shm_communicator(grp, r, staged ? devs.back().get() : nullptr));
    }
    std::vector<std::vector<float>> reduced(n), gathered(n, std::vector<float>(n * count)),
        scattered(n, std::vector<float>(2)), exchanged(n, std::vector<float>(n * 2)), received(n, std::vector<float>(count));
    std::vector<std::string> errors(n);
    std::vector<std::thread> th;
    for (int r = 0; r < n; ++r)
      th.emplace_back([&, r] {
        auto& c = *comms[static_cast<std::size_t>(r)];
        std::vector<float> mine(count);
        for (std::size_t i = 0; i < count; ++i) mine[i] = float(r + 1) + float(i) / 10;
        reduced[r] = mine;
        bool ok = c.all_reduce(reduced[r].data(), count).ok();
        ok = ok && c.all_gather(mine.data(), gathered[r].data(), count).ok();
        ok = ok && c.reduce_scatter(mine.data(), scattered[r].data(), 2).ok();
        ok = ok && c.all_to_all(mine.data(), exchanged[r].data(), 2).ok();
        // A ring of sends: r sends its values to r + 1 and receives from r − 1.
        ok = ok && c.send(mine.data(), count, (r + 1) % n).ok();
        ok = ok && c.recv(received[r].data(), count, (r + n - 1) % n).ok();
        ok = ok && c.barrier().empty();
        if (!ok) errors[r] = "failed";
      });
    for (auto& t : th) t.join();
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(errors[r], "") << "staged " << staged;
      for (std::size_t i = 0; i < count; ++i) {
        EXPECT_FLOAT_EQ(reduced[r][i], 6.0f + 3.0f * float(i) / 10);
        for (int q = 0; q < n; ++q) EXPECT_FLOAT_EQ(gathered[r][q * count + i], float(q + 1) + float(i) / 10);
        EXPECT_FLOAT_EQ(received[r][i], float((r + n - 1) % n + 1) + float(i) / 10);
      }
      for (std::size_t i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(scattered[r][i], 6.0f + 3.0f * float(r * 2 + i) / 10);
      // Slot q of member r's all-to-all output: member q's slice r.
      for (int q = 0; q < n; ++q)
        for (std::size_t i = 0; i < 2; ++i)
          EXPECT_FLOAT_EQ(exchanged[r][q * 2 + i], float(q + 1) + float(r * 2 + i) / 10);
    }
  }
}

TEST(Communicator, AMemberThatLeavesFailsTheOthersInsteadOfHangingThem) {
  auto grp = std::make_shared<exec::ShmGroup>(2);
  auto a = exec::shm_communicator(grp, 0), b = exec::shm_communicator(grp, 1);
  std::vector<float> x(4, 1.0f);
  std::thread leaver([&] { b->leave(); });
  auto r = a->all_reduce(x.data(), x.size());
  leaver.join();
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(a->recv(x.data(), x.size(), 1).ok());  // nothing will come from a member that left
}

// Naive references for the cpu device's kernels.
std::vector<float> ramp(std::size_t n, float scale, int salt) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * float(int((i * 7 + std::size_t(salt) * 13) % 17) - 8) / 8.0f;
  return v;
}

TEST(CpuDevice, GemmsIn16BitFormatsMatchFp32) {
  auto dev = exec::make_cpu_backend(1)->open(0);
  const int m = 33, n = 17, k = 29;
  const auto a = ramp(std::size_t(m) * k, 1, 1), b = ramp(std::size_t(k) * n, 1, 2);
  std::vector<float> ref(std::size_t(m) * n, 0.0f);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int x = 0; x < k; ++x) ref[std::size_t(i) * n + j] += a[std::size_t(i) * k + x] * b[std::size_t(x) * n + j];
  std::vector<float> c(ref.size());
  dev->gemm(m, n, k, exec::Format::Fp32, a.data(), b.data(), c.data());
  for (std::size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], ref[i], 1e-4f);
  // ramp() values are multiples of 1/8 up to 1: exact in bf16 and fp16; the sums round once.
  for (auto f : {exec::Format::Bf16, exec::Format::Fp16}) {
    std::vector<Eigen::bfloat16> ab(a.size()), bb(b.size()), cb(c.size());
    std::vector<Eigen::half> ah(a.size()), bh(b.size()), ch(c.size());
    for (std::size_t i = 0; i < a.size(); ++i) { ab[i] = Eigen::bfloat16(a[i]); ah[i] = Eigen::half(a[i]); }
    for (std::size_t i = 0; i < b.size(); ++i) { bb[i] = Eigen::bfloat16(b[i]); bh[i] = Eigen::half(b[i]); }
    if (f == exec::Format::Bf16) dev->gemm(m, n, k, f, ab.data(), bb.data(), cb.data());
    else dev->gemm(m, n, k, f, ah.data(), bh.data(), ch.data());
    for (std::size_t i = 0; i < c.size(); ++i) {
      const float got = f == exec::Format::Bf16 ? float(cb[i]) : float(ch[i]);
      EXPECT_NEAR(got, ref[i], (f == exec::Format::Bf16 ? 1e-2f : 1e-3f) * (1 + std::abs(ref[i]))) << i;
    }
  }
}

// A freed block is kept for the next allocation of its size (the replay allocates the same
// activation blocks task after task); the device's live and peak bytes and its capacity count
// only what is allocated, never what is kept.
TEST(CpuDevice, FreedBlocksAreReusedAndCountOnlyWhileAllocated) {
  auto dev = exec::make_cpu_backend(1, 10000)->open(0);
  auto a = dev->allocate(6000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(dev->live_bytes(), 6000u);
  const char mark[] = "kept, not freed";  // malloc writes its free list over a freed block's start
  std::memcpy(*a, mark, sizeof mark);
  dev->release(*a, 6000);
  EXPECT_EQ(dev->live_bytes(), 0u);
  auto b = dev->allocate(5990);  // the same 64-byte rounding: the kept block, untouched
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, *a);
  EXPECT_EQ(std::memcmp(*b, mark, sizeof mark), 0);
  EXPECT_EQ(dev->live_bytes(), 5990u);
  auto c = dev->allocate(4000);  // a new block: 9,990 of 10,000 live
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*c, *b);
  static_cast<char*>(*c)[3999] = 1;  // whole and writable
  EXPECT_FALSE(dev->allocate(100).ok());  // over the capacity
  dev->release(*b, 5990);
  dev->release(*c, 4000);
  EXPECT_EQ(dev->live_bytes(), 0u);
  EXPECT_EQ(dev->peak_bytes(), 9990u);
  auto whole = dev->allocate(10000);  // kept blocks take nothing from the capacity
  ASSERT_TRUE(whole.ok());
  dev->release(*whole, 10000);
}

// Attention forward and backward against the textbook formulas, causal and not, with values as
// wide as the keys and narrower (multi-head latent attention's d_v < d: here 5 against 8).
TEST(CpuDevice, AttentionMatchesTheNaiveFormulas) {
  auto dev = exec::make_cpu_backend(1)->open(0);
  for (const int v_dim : {0, 5})
  for (const bool causal : {true, false}) {
    const exec::AttentionShape s{2, 300, 8, causal, v_dim};  // 300 > one 128-row block: blocks and mask meet
    const std::size_t per = std::size_t(s.seq) * s.head_dim, H = std::size_t(s.heads);
    const std::size_t pv = std::size_t(s.seq) * s.value_dim();
    const auto qkv = ramp(2 * H * per + H * pv, 0.5f, 3), dO = ramp(H * pv, 1.0f, 4);
    std::vector<float> o(H * pv), o_grad = dO, grads(2 * H * per + H * pv);
    dev->attention(s, exec::Format::Fp32, qkv.data(), o.data(), nullptr, false);
    dev->attention(s, exec::Format::Fp32, qkv.data(), o_grad.data(), grads.data(), true);
    const float scale = 1.0f / std::sqrt(float(s.head_dim));
    const int S = s.seq, D = s.head_dim, V = s.value_dim();
    for (std::size_t h = 0; h < H; ++h) {
      const float* q = qkv.data() + h * per;
      const float* k = qkv.data() + (H + h) * per;
      const float* v = qkv.data() + 2 * H * per + h * pv;
      // P = softmax(QKᵀ·scale) with the mask.
      std::vector<double> P(std::size_t(S) * S, 0.0);
      for (int i = 0; i < S; ++i) {
        const int last = causal ? i : S - 1;
        double mx = -1e300;
        for (int j = 0; j <= last; ++j) {
          double x = 0;
          for (int d = 0; d < D; ++d) x += double(q[i * D + d]) * k[j * D + d];
          P[std::size_t(i) * S + j] = x * scale;
          mx = std::max(mx, x * scale);
        }
        double z = 0;
        for (int j = 0; j <= last; ++j) z += (P[std::size_t(i) * S + j] = std::exp(P[std::size_t(i) * S + j] - mx));
        for (int j = 0; j <= last; ++j) P[std::size_t(i) * S + j] /= z;
      }
      const float* g = dO.data() + h * pv;
      for (int i = 0; i < S; i += 37)
        for (int d = 0; d < V; ++d) {
          double ov = 0, dv = 0;
          for (int j = 0; j < S; ++j) {
            ov += P[std::size_t(i) * S + j] * v[j * V + d];
            dv += P[std::size_t(j) * S + i] * g[j * V + d];  // dV = Pᵀ·dO (row i of dV)
          }
          EXPECT_NEAR(o[h * pv + std::size_t(i) * V + d], ov, 1e-4) << "O " << causal << " " << i << " v " << v_dim;
          EXPECT_NEAR(grads[2 * H * per + h * pv + std::size_t(i) * V + d], dv, 1e-3) << "dV " << causal << " " << i;
        }
      // dQ row i = Σ_j dS_ij K_j · scale, dS = P∘(dP − rowsum(P∘dP)), dP = dO·Vᵀ.
      for (int i = 0; i < S; i += 41) {
        std::vector<double> dP(S), dS(S);
        double dot = 0;
        for (int j = 0; j < S; ++j) {
          for (int d = 0; d < V; ++d) dP[j] += double(g[i * V + d]) * v[j * V + d];
          dot += P[std::size_t(i) * S + j] * dP[j];
        }
        for (int j = 0; j < S; ++j) dS[j] = P[std::size_t(i) * S + j] * (dP[j] - dot);
        for (int d = 0; d < D; ++d) {
          double dq = 0;
          for (int j = 0; j < S; ++j) dq += dS[j] * k[j * D + d] * scale;
          EXPECT_NEAR(grads[h * per + std::size_t(i) * D + d], dq, 1e-3) << "dQ " << causal << " " << i << " v " << v_dim;
        }
      }
    }
  }
}

// A device at speed f takes 1/f times as long for the same kernels (each kernel, then an idle),
// long (GEMMs of 192³, Adam over 4 MiB of state: about a millisecond) and short (GEMMs of 48³,
// passes over 64 KiB: 1-10 microseconds, as short as the calibration's shortest) alike. What the caller does around a call
// (here: reading the clock) keeps the host's pace: with kernels under a microsecond it weighs.
// Behavioural, on a shared machine: each kind of kernel called in rounds of calls on the full
// device and on the slowed one (as calibrate runs them: a call after one of its own kind), each
// call timed; the ratio of the medians (a call that the machine's load hit is outvoted), the median
// over the kinds; a few attempts before concluding. (The pacer's arithmetic is checked exactly on a fake clock in
// pacer_test.cpp.)
TEST(CpuDevice, ASlowedDeviceIsMeasuredSlowerByItsFactor) {
  auto backend = exec::make_cpu_backend(2);
  ASSERT_TRUE(backend->slows());
  auto full = backend->open(0);
  for (const double f : {0.5, 0.25}) {
    exec::DeviceSetup setup;
    setup.speed = f;
    auto slowed = backend->open_as(1, setup);
    ASSERT_TRUE(slowed.ok()) << test::all_errors(slowed.errors());
    for (const bool small_kernels : {false, true}) {
      const int m = small_kernels ? 48 : 192;
      const std::size_t elems = small_kernels ? std::size_t(16) << 10 : std::size_t(1) << 20;
      using Kernel = std::function<void(exec::Device&, float*, float*)>;
      const std::vector<std::pair<std::string, Kernel>> kernels = {
          {"gemm", [&](exec::Device& d, float* a, float* c) { d.gemm(m, m, m, exec::Format::Fp32, a, a, c); }},
          // At most 64 Ki elements (512 KiB moved, about the core's own L2): a larger pass's time
          // depends on what the machine's other cores do to the shared cache during the idle.
          {"elementwise", [&](exec::Device& d, float* a, float* c) {
             d.elementwise(std::min(elems, std::size_t(64) << 10), exec::Format::Fp32, a, c);
           }},
          {"norm", [&](exec::Device& d, float* a, float* c) {
             d.norm(small_kernels ? 16 : 64, 1024, exec::Format::Fp32, a, c, false);
           }},
          {"adam", [&](exec::Device& d, float*, float* c) { d.adam(elems / 4, c); }}};
      float* fa = static_cast<float*>(full->workspace(0, elems * 4));
      float* fc = static_cast<float*>(full->workspace(2, elems * 4));
      float* sa = static_cast<float*>((*slowed)->workspace(0, elems * 4));
      float* sc = static_cast<float*>((*slowed)->workspace(2, elems * 4));
      auto median = [](std::vector<std::int64_t> v) {
        std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
        return double(v[v.size() / 2]);
      };
      // Per kind, the slowed device's median call over the full one's; the median of the kinds'
      // ratios must be 1/f within 10 %. (One kind's kernel can run faster or slower on one
      // device than on the other, its cache disturbed by the machine's other core: short
      // elementwise passes measured 1.3-1.5x at 0.5 on an idle machine, one run in four, while the
      // other kinds measured 1.93-2.08x. The pacer itself is checked exactly in pacer_test.cpp;
      // docs/benchmarks.md has the measured factors.)
      double mean = 0;  // the median of the kinds' ratios
      std::string kinds;
      for (int attempt = 0; attempt < 3; ++attempt) {
        mean = 0;
        kinds.clear();
        std::vector<double> ratios;
        for (const auto& [what, kernel] : kernels) {
          auto time = [&, k = &kernel](exec::Device& d, float* a, float* c) {
            const auto t0 = exec::host_clock_ns();
            (*k)(d, a, c);
            return exec::host_clock_ns() - t0;
          };
          std::vector<std::int64_t> fast, slow;
          const int calls = small_kernels ? 50 : 10;
          for (int round = 0; round < 6; ++round) {
            for (int i = 0; i < calls; ++i) fast.push_back(time(*full, fa, fc));
            for (int i = 0; i < calls; ++i) slow.push_back(time(**slowed, sa, sc));
          }
          const double ratio = median(slow) / median(fast);
          ratios.push_back(ratio);
          kinds += " " + what + " " + std::to_string(ratio) + "x";
        }
        std::sort(ratios.begin(), ratios.end());
        mean = (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]) / 2;  // the median of four
        if (std::abs(mean * f - 1) < 0.10) break;
      }
      EXPECT_NEAR(mean * f, 1.0, 0.10) << "speed " << f << ", " << (small_kernels ? "short" : "long")
                                       << " kernels: measured" << kinds;
    }
  }
  for (const double bad : {0.0, 1.5}) {
    exec::DeviceSetup setup;
    setup.speed = bad;
    EXPECT_FALSE(backend->open_as(0, setup).ok());
  }
  EXPECT_FALSE(exec::make_cpu_backend_at(2, 0, 0).ok());
}

// The time of a replay's kernels on each folded device: the op classes' sums over its forward
// and backward tasks (each op's time, with a slowed device's idle after it).
std::vector<std::int64_t> kernel_ns(const exec::Replay& r) {
  std::vector<std::int64_t> busy(r.graph.devices.size(), 0);
  for (std::uint32_t i = 0; i < r.graph.size(); ++i) {
    const auto& t = r.graph.tasks[i];
    if (t.kind != schedule::TaskKind::Forward && t.kind != schedule::TaskKind::Backward) continue;
    for (const auto& [cls, ns] : r.measured_parts[i]) busy[t.device] += ns;
  }
  return busy;
}

// --speed per pool: a two-pool scenario runs each pool's devices at its speed. The same one-group
// plan on the "slow" pool at 0.5 and at full speed, one run after the other (so that both see the
// same machine): its kernels measured twice as long, within 10 %. Then a replica group on each
// pool side by side: the slow pool's device is the slowed one.
TEST(Replay, PoolsRunAtTheirSpeeds) {
  auto one = test::parse(two_pools("micro_batch = 1\n[[parallel.replicas]]\ncount = 1\nmicro_batches = 1\n"
                                   "stages = [{pool = \"slow\", layers = 4}]\n", 1));
  ASSERT_TRUE(one.ok()) << test::all_errors(one.errors());
  auto backend = exec::make_cpu_backend(2);
  exec::ReplayOptions full{3, 1}, half{3, 1};  // after a warm-up step: scratch buffers grown
  full.pool_speed = {1.0, 1.0};
  half.pool_speed = {1.0, 0.5};
  // Per round, the slowed run's kernels over the full-speed run's (both runs of a round see the
  // same machine); the median of the rounds (a round that the machine's load hit is outvoted),
  // until it settles. A round's sums, not each task's fastest: a slowed device makes up a stall
  // in its idle over the next kernels (exec/cpu/pacer.hpp), which a per-task minimum would pick.
  std::vector<double> ratios;
  double ratio = 0;
  for (int round = 0; round < 7; ++round) {
    auto f = exec::replay(*one, *one->plan, *backend, full);
    auto h = exec::replay(*one, *one->plan, *backend, half);
    ASSERT_TRUE(f.ok() && h.ok());
    EXPECT_NE(std::find(h->notes.begin(), h->notes.end(),
                        "pool 'slow' runs on cpu devices at speed 0.500 (each kernel, then an idle)"),
              h->notes.end());
    std::int64_t sf = 0, ss = 0;
    for (std::uint32_t i = 0; i < f->graph.size(); ++i) {
      const auto k = f->graph.tasks[i].kind;
      if (k != schedule::TaskKind::Forward && k != schedule::TaskKind::Backward) continue;
      for (const auto& [cls, ns] : f->measured_parts[i]) sf += ns;
      for (const auto& [cls, ns] : h->measured_parts[i]) ss += ns;
    }
    ratios.push_back(double(ss) / double(sf));
    auto sorted = ratios;
    std::sort(sorted.begin(), sorted.end());
    ratio = sorted[sorted.size() / 2];
    if (ratios.size() >= 3 && std::abs(ratio / 2 - 1) < 0.10) break;
  }
  // That the pool's speed reaches its device, not the factor's precision: the factor is held by
  // the device-level test above (interleaved calls on one device each). A whole replay at 0.5
  // against one at full speed measured 1.95-2.12x on the development machine but 1.72x on a CI
  // machine (the median of seven rounds, stop 33), cause unknown there (a guess: the kernels ran
  // faster in the slowed run, whose idles leave the other core free to boost; the pacer doubles
  // whatever a kernel took, so such a machine shrinks the ratio of two runs). So the band is
  // 1.5-2.5x: a speed lost (1x) or applied twice (4x) fails it.
  EXPECT_NEAR(ratio / 2, 1.0, 0.25) << "the slowed pool measured " << ratio << "x";

  auto two = test::parse(two_pools("micro_batch = 1\nzero = 1\n"
                                   "[[parallel.replicas]]\ncount = 1\nmicro_batches = 2\nstages = [{pool = \"fast\", layers = 4}]\n"
                                   "[[parallel.replicas]]\ncount = 1\nmicro_batches = 2\nstages = [{pool = \"slow\", layers = 4}]\n"));
  ASSERT_TRUE(two.ok()) << test::all_errors(two.errors());
  exec::ReplayOptions o{1, 0};
  o.pool_speed = {1.0, 0.25};
  auto r = exec::replay(*two, *two->plan, *backend, o);
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  const auto busy = kernel_ns(*r);
  ASSERT_EQ(busy.size(), 2u);
  // Side by side on a shared machine the two threads do not see the same load (the fast one
  // waits while the slow one finishes), so only the direction is checked here.
  EXPECT_GT(double(busy[1]), 1.5 * double(busy[0])) << "the slow pool's device is the slowed one";

  // Bad speeds, and a backend that cannot slow its devices: refused before anything runs.
  o.pool_speed = {1.0};
  EXPECT_FALSE(exec::replay(*two, *two->plan, *backend, o).ok());
  o.pool_speed = {1.0, 1.5};
  EXPECT_FALSE(exec::replay(*two, *two->plan, *backend, o).ok());
  o.pool_speed = {1.0, 0.5};
  test::FlakyBackend plain(exec::make_cpu_backend(2), 1 << 30);
  auto refused = exec::replay(*two, *two->plan, plain, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(to_string(refused.errors()[0]).find("the flaky backend cannot slow its devices"), std::string::npos)
      << to_string(refused.errors()[0]);
}

// Pools as cpu devices of different cores and memory (issue 14, item 3): each pool's devices
// open with its own, the run says so, and a pool whose memory is too small fails there alone.
TEST(Replay, PoolsRunOnDevicesOfTheirOwnCoresAndMemory) {
  auto s = test::parse(two_pools(two_group_plan(1, 0)));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto backend = exec::make_cpu_backend(4, std::size_t{1} << 30);
  exec::ReplayOptions o{1, 0};
  o.pool_cores = {2, 0};
  o.pool_memory = {std::size_t{64} << 20, std::size_t{48} << 20};
  auto r = exec::replay(*s, *s->plan, *backend, o);
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  ASSERT_FALSE(r->failure.has_value()) << to_string(*r->failure);
  for (const char* note : {"pool 'fast' runs on cpu devices of 2 cores", "pool 'fast' runs on cpu devices of 64 MiB",
                           "pool 'slow' runs on cpu devices of 48 MiB"})
    EXPECT_NE(std::find(r->notes.begin(), r->notes.end(), note), r->notes.end()) << note;
  test::check_order_and_dependencies(*r);
  // The slow pool's devices at 1 MiB: they, not the fast pool's, run out.
  o.pool_memory = {0, std::size_t{1} << 20};
  auto small_slow = exec::replay(*s, *s->plan, *backend, o);
  const std::string said = small_slow.ok() ? (small_slow->failure ? to_string(*small_slow->failure) : std::string())
                                           : test::all_errors(small_slow.errors());
  EXPECT_NE(said.find("out of memory"), std::string::npos) << said;
  EXPECT_NE(said.find("of 1048576 in use"), std::string::npos) << "the slow pool's 1 MiB: " << said;

  // Refused before anything runs: a list per pool, whole core counts, a backend with cores.
  o.pool_memory.clear();
  o.pool_cores = {2};
  auto wrong = exec::replay(*s, *s->plan, *backend, o);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.errors()[0].key, "cores");
  o.pool_cores = {2, -1};
  EXPECT_FALSE(exec::replay(*s, *s->plan, *backend, o).ok());
  o.pool_cores = {2, 1};
  test::FlakyBackend plain(exec::make_cpu_backend(4), 1 << 30);
  auto refused = exec::replay(*s, *s->plan, plain, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(to_string(refused.errors()[0]).find("no core count to set"), std::string::npos) << to_string(refused.errors()[0]);
  o.pool_cores.clear();
  o.pool_memory = {std::size_t{1} << 20, 0};
  auto uncapped = exec::replay(*s, *s->plan, plain, o);
  ASSERT_FALSE(uncapped.ok()) << "a backend that cannot cap its devices' memory says so";
  EXPECT_NE(to_string(uncapped.errors()[0]).find("pool 'fast'"), std::string::npos) << to_string(uncapped.errors()[0]);
}

// A device of two cores runs a large GEMM faster than one of one core, under 0.85 of its time
// (timed, run alone: the exec.slowed_devices group). The median of rounds of both, each round on
// the same machine.
TEST(CpuDevice, ADeviceOfTwoCoresRunsALargeGemmFaster) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: nothing to split over";
  auto backend = exec::make_cpu_backend(1);
  auto one = backend->open(0);
  exec::DeviceSetup setup;
  setup.cores = 2;
  auto two = backend->open_as(0, setup);
  ASSERT_TRUE(two.ok());
  const int m = 512;
  const auto a = ramp(std::size_t(m) * m, 1, 1);
  std::vector<float> c(std::size_t(m) * m);
  auto time = [&](exec::Device& d) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 4; ++i) d.gemm(m, m, m, exec::Format::Fp32, a.data(), a.data(), c.data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  time(*one);
  time(**two);  // warm: scratch, helper threads
  std::vector<double> ratios;
  for (int round = 0; round < 7; ++round) ratios.push_back(time(**two) / time(*one));
  std::sort(ratios.begin(), ratios.end());
  EXPECT_LT(ratios[3], 0.85) << "two cores over one, the median of 7 rounds (0.51-0.63 on the development machine; 1 unsplit)";
}

TEST(CpuDevice, NormAndAdamComputeTheirFormulas) {
  auto dev = exec::make_cpu_backend(1)->open(0);
  const int rows = 3, cols = 10;
  const auto x = ramp(std::size_t(rows) * cols, 2.0f, 5);
  std::vector<float> y(x.size());
  dev->norm(rows, cols, exec::Format::Fp32, x.data(), y.data(), false);
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c) mean += x[std::size_t(r) * cols + c] / cols;
    for (int c = 0; c < cols; ++c) var += std::pow(x[std::size_t(r) * cols + c] - mean, 2) / cols;
    for (int c = 0; c < cols; ++c)
      EXPECT_NEAR(y[std::size_t(r) * cols + c], (x[std::size_t(r) * cols + c] - mean) / std::sqrt(var + 1e-5), 1e-4);
  }
  // Backward with dy = x̂ itself: dx = rstd·(x̂ − mean(x̂) − x̂·mean(x̂²)) = rstd·(x̂ − 0 − x̂·1) ≈ 0.
  std::vector<float> dy = y;
  dev->norm(rows, cols, exec::Format::Fp32, x.data(), dy.data(), true);
  for (float v : dy) EXPECT_NEAR(v, 0.0f, 1e-3f);
  // One Adam step from zero moments: m = 0.1·g, v = 0.05·g², p −= 1e-4 · m/(√v + ε).
  const std::size_t n = 5;
  std::vector<float> state(4 * n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) { state[i] = 1.0f; state[n + i] = float(i) - 2.0f; }
  dev->adam(n, state.data());
  for (std::size_t i = 0; i < n; ++i) {
    const double g = double(i) - 2.0, m = 0.1 * g, v = 0.05 * g * g;
    EXPECT_NEAR(state[i], 1.0 - 1e-4 * m / (std::sqrt(v) + 1e-8), 1e-7);
  }
}

TEST(Replay, TimesEveryOpClassAndPricesItTheSameWay) {
  auto s = test::parse(small("tp = 1\npp = 2\ndp = 1\nmicro_batch = 1\n"));
  ASSERT_TRUE(s.ok());
  auto r = exec::replay(*s, *s->plan, *exec::make_cpu_backend(2), {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  std::set<std::string> predicted, measured;
  for (std::uint32_t i = 0; i < r->graph.size(); ++i) {
    const auto& t = r->graph.tasks[i];
    std::int64_t psum = 0, msum = 0;
    for (const auto& [c, ns] : r->predicted_parts[i]) { predicted.insert(c); psum += ns; }
    for (const auto& [c, ns] : r->measured_parts[i]) { measured.insert(c); msum += ns; }
    const auto pdur = r->predicted.end[i] - r->predicted.start[i];
    if (t.kind == schedule::TaskKind::Forward || t.kind == schedule::TaskKind::Backward ||
        t.kind == schedule::TaskKind::Optimizer) {
      // The cost model's parts are what the engine's duration is made of.
      EXPECT_NEAR(double(psum), double(pdur), 8.0) << schedule::task_name(t);
      EXPECT_GT(msum, 0);
      EXPECT_LE(msum, r->measured.end[i] - r->measured.start[i]);
    } else {
      EXPECT_TRUE(r->predicted_parts[i].empty());
    }
  }
  for (const char* c : {"gemm", "attention", "norm", "elementwise", "embedding", "loss", "optimizer"}) {
    EXPECT_TRUE(predicted.count(c)) << c;
    EXPECT_TRUE(measured.count(c)) << c;
  }
  // The parts travel in the trace files, and compare reports each class.
  const auto pf = io::make_trace_file(r->graph, r->predicted, "p", r->predicted_parts);
  const auto mf = io::make_trace_file(r->graph, r->measured, "m", r->measured_parts);
  auto c = exec::compare(pf, mf);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->classes.size(), 7u);
  EXPECT_NE(exec::comparison_text(*c).find("op class"), std::string::npos);
}

// Every recompute mode replays: a recompute task runs what the cost model priced for it (its ops'
// recompute shares, per-op checkpointing re-running parts of GEMMs), and the parts add up.
TEST(Replay, EveryRecomputeModeRunsWhatItPrices) {
  auto backend = exec::make_cpu_backend(2);
  for (const char* rc : {"selective", "full", "selective_op"})
    for (const char* par : {"tp = 1\npp = 2\ndp = 1\n", "tp = 2\npp = 1\ndp = 1\n"}) {
      auto s = test::parse(small(std::string(par) + "recompute = \"" + rc + "\"\n"));
      ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
      auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
      ASSERT_TRUE(r.ok()) << rc << " " << par << test::all_errors(r.errors());
      check_replay(*r);
      int recomputes = 0;
      for (std::uint32_t i = 0; i < r->graph.size(); ++i) {
        if (r->graph.tasks[i].kind != schedule::TaskKind::Recompute) continue;
        ++recomputes;
        std::int64_t psum = 0, msum = 0;
        for (const auto& [c, ns] : r->predicted_parts[i]) psum += ns;
        for (const auto& [c, ns] : r->measured_parts[i]) msum += ns;
        EXPECT_NEAR(double(psum), double(r->predicted.end[i] - r->predicted.start[i]), 8.0) << rc;
        EXPECT_GT(msum, 0) << rc;
      }
      EXPECT_GT(recomputes, 0) << rc << " " << par;
    }
}

TEST(Replay, SixteenBitPlansRunIn16BitBuffersAndSaySo) {
  std::string text = small("tp = 2\npp = 1\ndp = 1\n");
  const std::string fp32 = "precision = \"fp32\"", peak = "fp32 = \"20GFLOPS\"";
  text.replace(text.find(fp32), fp32.size(), "precision = \"bf16\"");
  text.replace(text.find(peak), peak.size(), "bf16 = \"20GFLOPS\", fp32 = \"20GFLOPS\"");
  auto s = test::parse(text);
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto r = exec::replay(*s, *s->plan, *exec::make_cpu_backend(2), {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  check_replay(*r);
  std::string notes;
  for (const auto& n : r->notes) notes += n + "\n";
  EXPECT_NE(notes.find("bf16 operands and computes in fp32"), std::string::npos) << notes;
  EXPECT_NE(notes.find("tensor-parallel collectives: shared memory"), std::string::npos) << notes;
}

TEST(Replay, OutOfMemoryNamesTheDeviceAndTask) {
  auto s = test::parse(small("tp = 1\npp = 2\ndp = 1\nmicro_batch = 1\n"));
  ASSERT_TRUE(s.ok());
  auto backend = exec::make_cpu_backend(2, 9'000'000);  // ~9 MB per device: the activations do not fit
  auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
  ASSERT_FALSE(r.ok());
  const std::string msg = to_string(r.errors()[0]);
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
  EXPECT_EQ(worst_kind(r.errors()), ErrorKind::Environment) << "a device out of memory is the environment";
}

TEST(Replay, OutOfMemoryInsideCollectivesFailsWithoutHanging) {
  // Both replicas run out of memory; the members that fail leave their groups so the others
  // do not wait for them forever.
  for (const char* par : {"tp = 1\npp = 1\ndp = 2\n", "tp = 2\npp = 1\ndp = 1\n"}) {
    auto s = test::parse(small(par));
    ASSERT_TRUE(s.ok());
    auto backend = exec::make_cpu_backend(2, 3'000'000);
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_FALSE(r.ok()) << par;
    EXPECT_NE(to_string(r.errors()[0]).find("out of memory"), std::string::npos);
    EXPECT_NE(r.errors()[0].key, "plan");  // an environment failure, not a plan the executor refuses
  }
}


TEST(Replay, KeepsTheStepsMeasuredBeforeADeviceFails) {
  auto s = test::parse(small("tp = 1\npp = 2\ndp = 1\nmicro_batch = 1\n"));
  ASSERT_TRUE(s.ok());
  // Count one step's allocations per device, then allow two steps and a bit.
  auto probe = exec::replay(*s, *s->plan, *exec::make_cpu_backend(2), {1, 0});
  ASSERT_TRUE(probe.ok());
  int per_step = 1;  // the resident state
  for (const auto& t : probe->graph.tasks)
    if (t.device == 0 && (t.alloc_bytes > 0 || t.free_bytes > 0)) per_step += 2;  // its block and the kept one
  test::FlakyBackend flaky(exec::make_cpu_backend(2), 2 * per_step + 3);
  auto r = exec::replay(*s, *s->plan, flaky, {4, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  ASSERT_TRUE(r->failure.has_value());
  EXPECT_NE(to_string(*r->failure).find("device lost"), std::string::npos);
  EXPECT_GE(r->step_ns.size(), 1u);
  EXPECT_LT(r->step_ns.size(), 4u);
  // And a device that fails at once: an error, nothing measured.
  test::FlakyBackend dead(exec::make_cpu_backend(2), 0);
  EXPECT_FALSE(exec::replay(*s, *s->plan, dead, {2, 0}).ok());
}

// PyTorch's eager kernels that cannot use vector loads (RoPE on strided halves, GQA's repeated
// K and V, workload::Op::unvectorized) replay as one-element-at-a-time passes; fused kernels
// have none but Megatron's fp32 cross-entropy (its cast and broadcasts), and a fused loss none.
TEST(Replay, RunsUnvectorizedOpsOneElementAtATime) {
  auto text = small("tp = 1\npp = 1\ndp = 1\nmicro_batch = 1\n", 1);
  text.replace(text.find("kv_heads = 4"), 12, "kv_heads = 2\npositions = \"rope\"");
  auto count = [&](const std::string& training) {
    std::string t = text;
    t.replace(t.find("precision = \"fp32\"\n"), 19, "precision = \"fp32\"\n" + training);
    auto s = test::parse(t);
    EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
    if (!s.ok()) return -1L;
    test::FlakyBackend counting(exec::make_cpu_backend(1), 1 << 30);
    auto r = exec::replay(*s, *s->plan, counting, {1, 0});
    EXPECT_TRUE(r.ok()) << test::all_errors(r.errors());
    return counting.unvectorized_calls();
  };
  const long eager = count("fused_kernels = false\n");
  const long megatron_loss = count("fused_kernels = true\n");
  EXPECT_GT(eager, megatron_loss);
  EXPECT_GT(megatron_loss, 0);
  EXPECT_EQ(count("fused_kernels = true\nloss_kernel = \"fused\"\n"), 0);
}

// Expert parallelism replays (issue 15, item 5): a MoE model of 4 experts, top 2, EP 2 over 2
// replicas, on 4 cpu devices with a 2-stage pipeline. Each EP task runs the all-to-alls of its
// unit over its EP group, each compute task the experts' GEMMs of the routed rows; compare
// reports the all-to-alls and the expert GEMMs as their own classes, and the EP tasks as their
// own kind.
std::string small_moe(const std::string& parallel, const std::string& routing = "") {
  auto text = small(parallel, 4);
  text.replace(text.find("kv_heads = 4"), 12, "kv_heads = 4\nexperts = 4\ntop_k = 2\n" + routing);
  return text;
}

// A MoE model with a dense first layer (first_dense_layers = 1): the dense layer runs the dense
// layer's ops and no all-to-all, the MoE layers their routed experts. Four layers on two
// stages of dp 2 · ep 2: layer 0 is dense, so 3 of the 4 layers' all-to-alls run — 3/4 of the
// all-MoE model's count — and the first stage's tasks are priced at its mean layer (half MoE).
TEST(Replay, MoeModelsWithDenseLayersRunTheDenseLayersDense) {
  auto run = [](const std::string& extra) {
    auto s = test::parse(small_moe("tp = 1\npp = 2\ndp = 2\nep = 2\nmicro_batch = 1\n", extra));
    EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
    test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
    auto r = s.ok() ? exec::replay(*s, *s->plan, counting, {1, 0}) : Result<exec::Replay>(Diagnostic{});
    EXPECT_TRUE(r.ok()) << test::all_errors(r.errors());
    if (r.ok()) test::check_order_and_dependencies(*r);
    return std::pair{r.ok() ? std::optional<exec::Replay>(std::move(*r)) : std::nullopt, counting.all_to_all_calls()};
  };
  const auto [all_moe, a2a_moe] = run("");
  const auto [mixed, a2a_mixed] = run("first_dense_layers = 1\ndense_ffn_hidden = 512\n");
  ASSERT_TRUE(all_moe && mixed);
  EXPECT_GT(a2a_moe, 0);
  EXPECT_EQ(a2a_mixed * 4, a2a_moe * 3);
  // Stage 0 (layers 0-1, one dense): its forward's expert GEMMs are priced at half the all-MoE
  // stage's, and its dense GEMMs (the dense layer's MLP) appear under "gemm".
  auto class_sum = [](const exec::Replay& r, const std::string& cls, bool predicted) {
    double sum = 0;
    const auto& parts = predicted ? r.predicted_parts : r.measured_parts;
    for (std::uint32_t i = 0; i < r.graph.size(); ++i)
      if (r.graph.tasks[i].kind == schedule::TaskKind::Forward && r.graph.devices[r.graph.tasks[i].device].stage == 0)
        for (const auto& [c, ns] : parts[i])
          if (c == cls) sum += static_cast<double>(ns);
    return sum;
  };
  EXPECT_NEAR(class_sum(*mixed, "expert gemm", true), 0.5 * class_sum(*all_moe, "expert gemm", true),
              200.0);  // ns: each task's parts are rounded to the ns
  EXPECT_GT(class_sum(*mixed, "gemm", true), class_sum(*all_moe, "gemm", true));
  EXPECT_GT(class_sum(*mixed, "expert gemm", false), 0);
}

// Selective recompute's modules replay as the schedule prices them: recomputing the MoE block
// ("moe") runs its dispatch and combine again before the backward, as full recompute does;
// recomputing the experts' activation ("moe_act") runs no all-to-all more than no recompute.
TEST(Replay, RecomputedMoeBlocksRunTheirAllToAllsAgain) {
  auto calls = [](const std::string& recompute) {
    auto s = test::parse(small_moe("tp = 2\npp = 1\ndp = 2\nep = 2\nmicro_batch = 1\n" + recompute));
    EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
    test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
    auto r = s.ok() ? exec::replay(*s, *s->plan, counting, {1, 0}) : Result<exec::Replay>(Diagnostic{});
    EXPECT_TRUE(r.ok()) << test::all_errors(r.errors());
    if (r.ok()) test::check_order_and_dependencies(*r);
    return counting.all_to_all_calls();
  };
  const long none = calls("");
  const long full = calls("recompute = \"full\"\n");
  EXPECT_GT(full, none);
  EXPECT_EQ(calls("recompute = \"selective\"\nrecompute_modules = [\"moe\", \"layernorm\"]\n"), full);
  EXPECT_EQ(calls("recompute = \"selective\"\nrecompute_modules = [\"moe_act\"]\n"), none);
}

TEST(Replay, ExpertParallelPlansRunTheirAllToAllsAndRoutedExpertGemms) {
  auto backend = exec::make_cpu_backend(4);
  {
    // EP groups of tp rank 0 and of tp rank 1 side by side, full recompute's extra all-to-alls,
    // a skewed routing.
    auto s = test::parse(small_moe("tp = 2\npp = 1\ndp = 2\nep = 2\nmicro_batch = 1\nrecompute = \"full\"\n",
                                   "routing_histogram = [40, 20, 20, 20]\n"));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    test::check_order_and_dependencies(*r);
  }
  auto s = test::parse(small_moe("tp = 1\npp = 2\ndp = 2\nep = 2\nmicro_batch = 1\n"));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  test::check_order_and_dependencies(*r);
  int ep_tasks = 0;
  for (std::uint32_t i = 0; i < r->graph.size(); ++i) {
    const auto& t = r->graph.tasks[i];
    std::map<std::string, std::int64_t> measured, predicted;
    for (const auto& [c, ns] : r->measured_parts[i]) measured[c] += ns;
    for (const auto& [c, ns] : r->predicted_parts[i]) predicted[c] += ns;
    if (t.kind == schedule::TaskKind::EpAllToAll) {
      ++ep_tasks;
      EXPECT_GT(measured["all-to-all"], 0) << schedule::task_name(t);
      EXPECT_EQ(predicted["all-to-all"], r->predicted.end[i] - r->predicted.start[i]) << schedule::task_name(t);
    }
    if (t.kind == schedule::TaskKind::Forward || t.kind == schedule::TaskKind::Backward) {
      EXPECT_GT(measured["expert gemm"], 0) << schedule::task_name(t);
      EXPECT_GT(predicted["expert gemm"], 0) << schedule::task_name(t);
      EXPECT_GT(measured["gemm"], 0) << schedule::task_name(t);  // attention projections, router
    }
  }
  EXPECT_EQ(ep_tasks, 2 * 2 * 2);  // stages × (forward, backward) × micro-batches (4 sequences over dp 2)
  const auto pf = io::make_trace_file(r->graph, r->predicted, "p", r->predicted_parts);
  const auto mf = io::make_trace_file(r->graph, r->measured, "m", r->measured_parts);
  auto c = exec::compare(pf, mf);
  ASSERT_TRUE(c.ok());
  std::set<std::string> classes, kinds;
  for (const auto& k : c->classes) classes.insert(k.kind);
  for (const auto& k : c->kinds) kinds.insert(k.kind);
  EXPECT_TRUE(classes.count("all-to-all"));
  EXPECT_TRUE(classes.count("expert gemm"));
  EXPECT_TRUE(kinds.count("ep all-to-all"));
  EXPECT_NE(exec::comparison_text(*c).find("expert gemm"), std::string::npos);
}

// The routing is real and seeded: each token picks top_k distinct experts, so the rows from a
// source sum to tokens · top_k; a histogram's heavy expert gets most of them; the same seed
// routes the same, another seed otherwise; a dropping router pads every buffer to the capacity.
TEST(Routing, TokensPickTheirExpertsByThePlannedLoadSeeded) {
  workload::ModelSpec m;
  m.experts = 4;
  m.top_k = 2;
  m.expert_load = {0.55, 0.15, 0.15, 0.15};
  const auto a = exec::route_layer(m, 2, 1000, 7, 3, 1, 0);
  ASSERT_EQ(a.rows.size(), 2u);
  for (const auto& src : a.rows) {
    std::int64_t n = 0;
    for (auto x : src) n += x;
    EXPECT_EQ(n, 2000);
    EXPECT_LE(src[0], 1000);  // distinct experts: a token picks expert 0 at most once
    EXPECT_GT(src[0], src[1]);
  }
  // Expert 0 is picked by most tokens (0.55 of the first picks, more of the second's leftovers).
  EXPECT_GT(a.expert_rows(0), 2 * 650);
  EXPECT_EQ(a.expert_rows(0) + a.expert_rows(1) + a.expert_rows(2) + a.expert_rows(3), 4000);
  // The busiest pair: a source's rows to EP rank 0 (experts 0 and 1).
  EXPECT_EQ(a.max_pair_rows, std::max(a.rows[0][0] + a.rows[0][1], a.rows[1][0] + a.rows[1][1]));
  const auto same = exec::route_layer(m, 2, 1000, 7, 3, 1, 0);
  EXPECT_EQ(same.rows, a.rows);
  EXPECT_NE(exec::route_layer(m, 2, 1000, 8, 3, 1, 0).rows, a.rows);
  EXPECT_NE(exec::route_layer(m, 2, 1000, 7, 4, 1, 0).rows, a.rows);
  // Dropping at capacity 1.25: every buffer holds ceil(1.25 · 1000 · 2 / 4) = 625 rows.
  m.dropless = false;
  m.capacity_factor = 1.25;
  const auto d = exec::route_layer(m, 2, 1000, 7, 3, 1, 0);
  for (const auto& src : d.rows)
    for (auto x : src) EXPECT_EQ(x, 625);
  EXPECT_EQ(d.max_pair_rows, 1250);
}

// Under expert parallelism the routed experts' gradients (and, under ZeRO, their gathers) sync
// over the replicas that hold the same experts, as the cost model prices them (stage_costs'
// `eg`): with dp 4 · ep 2, every member reduces the rest of its parameters with all four and its
// experts with the one other replica of its EP rank; none over four members carries the experts.
TEST(Replay, ExpertGradientsSyncOverTheReplicasThatHoldTheSameExperts) {
  for (const int zero : {0, 1}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    auto s = test::parse(small_moe("tp = 1\npp = 1\ndp = 4\nep = 2\nmicro_batch = 1\nzero = " + std::to_string(zero) + "\n"));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto costs = analytic::stage_costs(*s, *s->plan);
    const double experts = costs[0][0].expert_params, rest = costs[0][0].params - experts;
    ASSERT_GT(experts, 0);
    test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
    auto r = exec::replay(*s, *s->plan, counting, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    test::check_order_and_dependencies(*r);
    const auto by_size = counting.reduced_by_size();
    // Per member and step: an all-reduce of everything (ZeRO 0), or a reduce-scatter of it and
    // the gather of a 1/members shard (ZeRO 1; fp32 weights).
    auto moved = [&](double params, int members) { return 4 * params * (zero == 0 ? 1.0 : 1.0 + 1.0 / members); };
    ASSERT_TRUE(by_size.count(4) && by_size.count(2));
    EXPECT_NEAR(static_cast<double>(by_size.at(4)), moved(rest, 4), 0.01 * moved(rest, 4));
    EXPECT_NEAR(static_cast<double>(by_size.at(2)), moved(experts, 2), 0.01 * moved(experts, 2));
  }
}

// ep_dispatch = "hierarchical": inside one node a token goes once to each rank its experts are on
// (ep 2: two experts a rank, top-2: 5/6 of a token a rank, where the all-to-all sends 2 · 2/4 = 1
// row); over several nodes each round is a network step among the ranks of one local index (each
// token once per node its experts are on) and a fabric step within each node. dp 4 · ep 4 (one
// expert per rank, top-2) on two nodes of two: the all-to-all runs on the 4 EP ranks, the
// hierarchical dispatch only on groups of two, and moves fewer values over the network than the
// all-to-all did.
TEST(Replay, HierarchicalDispatchRunsItsNetworkAndFabricSteps) {
  auto run = [](const std::string& dispatch, int per_node, int ep = 4) {
    auto text = small_moe("tp = 1\npp = 1\ndp = 4\nep = " + std::to_string(ep) + "\nmicro_batch = 1\nep_dispatch = \"" +
                          dispatch + "\"\n");
    text.replace(text.find("nodes = 1"), 9, "nodes = " + std::to_string(4 / per_node));
    text.replace(text.find("devices = 4"), 11, "devices = " + std::to_string(per_node));
    auto s = test::parse(text);
    EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
    test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
    auto r = s.ok() ? exec::replay(*s, *s->plan, counting, {1, 0}) : Result<exec::Replay>(Diagnostic{});
    EXPECT_TRUE(r.ok()) << test::all_errors(r.errors());
    if (r.ok()) test::check_order_and_dependencies(*r);
    return counting.exchanged_by_size();
  };
  const auto inside = run("hierarchical", 4, 2), plain_inside = run("all-to-all", 4, 2);
  ASSERT_TRUE(inside.count(2) && plain_inside.count(2));
  EXPECT_LT(inside.at(2), plain_inside.at(2));  // one node: a token once per rank
  const auto plain = run("all-to-all", 2), hier = run("hierarchical", 2);
  ASSERT_TRUE(plain.count(4));
  EXPECT_FALSE(plain.count(2));
  EXPECT_FALSE(hier.count(4));
  ASSERT_TRUE(hier.count(2));
  EXPECT_GT(hier.at(2), 0);
}

// MoE parallel folding over stages of different tp (a tp 2 group beside two tp 1 replicas) is
// refused before anything runs, with ep 2 and with ep 1: its experts' sync and the dense chunks
// would deadlock (docs/executor.md, Limits). The same groups without folding run.
TEST(Replay, FoldedPlansOfStagesOfDifferentTpAreRefusedClearly) {
  const std::string groups =
      "micro_batch = 1\nsequence_parallel = true\n"
      "[[parallel.replicas]]\ncount = 1\nmicro_batches = 4\nstages = [{pool = \"fast\", tp = 2, layers = 4}]\n"
      "[[parallel.replicas]]\ncount = 2\nmicro_batches = 2\nstages = [{pool = \"slow\", tp = 1, layers = 4}]\n";
  auto moe = [&](const std::string& extra) {
    auto text = two_pools(extra + groups, 8, 2);
    text.replace(text.find("kv_heads = 4"), 12, "kv_heads = 4\nexperts = 4\ntop_k = 2\n");
    return text;
  };
  for (const char* folding : {"ep = 2\nexpert_tp = 1\n", "expert_tp = 1\n"}) {
    SCOPED_TRACE(folding);
    auto s = test::parse(moe(folding));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    auto backend = exec::make_cpu_backend(4);
    auto r = exec::replay(*s, *s->plan, *backend, {1, 0});
    ASSERT_FALSE(r.ok());
    const std::string errors = test::all_errors(r.errors());
    EXPECT_NE(errors.find("replayed only where every stage has the same tp"), std::string::npos) << errors;
    EXPECT_NE(errors.find("parallel.expert_tp"), std::string::npos) << errors;
  }
  auto plain = test::parse(moe("ep = 1\n"));
  ASSERT_TRUE(plain.ok()) << test::all_errors(plain.errors());
  auto backend = exec::make_cpu_backend(4);
  auto r = exec::replay(*plain, *plain->plan, *backend, {1, 0});
  EXPECT_TRUE(r.ok()) << test::all_errors(r.errors());
}

// MoE parallel folding (expert_tp below tp) replays on 4 cpu devices, its expert groups in
// Megatron-Core's expert rank order (schedule::ep_groups): within the stage's tp · replicas
// devices, blocks of expert_tp · ep, the ranks expert_tp apart an EP group. Every all-to-all runs
// over ep ranks; the MoE block's TP collectives over expert_tp ranks on expert_tp/tp of the
// activation (none at expert_tp 1), the attention's over tp; the routed experts' GEMMs run.
//   tp 2 · dp 2, ep 4, expert_tp 1: one EP group of all four (both TP ranks of both replicas);
//   tp 2 · dp 2, ep 2, expert_tp 1: EP groups {0, 1} {2, 3} (a replica's TP ranks);
//   tp 4 · dp 1, ep 2, expert_tp 1: EP groups {0, 1} {2, 3} within the one replica;
//   tp 4 · dp 1, ep 2, expert_tp 2: expert_tp groups {0, 1} {2, 3}, EP groups {0, 2} {1, 3}.
TEST(Replay, FoldedExpertParallelPlansReplay) {
  struct Case {
    const char* plan;
    int ep, et, tp;
  };
  for (const Case& c : {Case{"tp = 2\npp = 1\ndp = 2\nep = 4\nexpert_tp = 1\n", 4, 1, 2},
                        Case{"tp = 2\npp = 1\ndp = 2\nep = 2\nexpert_tp = 1\nzero = 1\n", 2, 1, 2},
                        Case{"tp = 4\npp = 1\ndp = 1\nep = 2\nexpert_tp = 1\n", 2, 1, 4},
                        Case{"tp = 4\npp = 1\ndp = 1\nep = 2\nexpert_tp = 2\nrecompute = \"full\"\n", 2, 2, 4}}) {
    SCOPED_TRACE(c.plan);
    auto s = test::parse(small_moe(std::string(c.plan) + "micro_batch = 1\n"));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    ASSERT_TRUE(s->plan->folds_experts());
    test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
    auto r = exec::replay(*s, *s->plan, counting, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    test::check_order_and_dependencies(*r);
    const auto exchanged = counting.exchanged_by_size();
    ASSERT_EQ(exchanged.size(), 1u);
    EXPECT_EQ(exchanged.begin()->first, c.ep);
    EXPECT_GT(exchanged.begin()->second, 0);
    // The MoE block's TP calls over expert_tp ranks: communicators of that size reduce (none at 1).
    const auto reduced = counting.reduced_by_size();
    EXPECT_GT(reduced.count(c.tp), 0u);
    if (c.et > 1) {
      EXPECT_GT(reduced.count(c.et), 0u);
    }
    std::map<std::string, std::int64_t> measured;
    for (std::uint32_t i = 0; i < r->graph.size(); ++i)
      for (const auto& [cls, ns] : r->measured_parts[i]) measured[cls] += ns;
    EXPECT_GT(measured["expert gemm"], 0);
    EXPECT_GT(measured["all-to-all"], 0);
  }
}

// Folded experts' gradients sync over the ranks that hold the same experts (the members at one
// offset of every expert_tp · ep block: schedule::expert_dp_groups), also without data-parallel
// replicas, as the cost model prices it (stage_costs' expert-data-parallel `eg`, tp · replicas /
// (expert_tp · ep) ranks). Counted: tp 4 · dp 1, ep 2, expert_tp 1 reduces each member's experts
// with one other (its TP rank 2 apart) and nothing else over two members. Numerics: on the
// replay's own communicators (make_communicators), each member puts in its expert slice's
// gradient (a value of its offset, times its block + 1) and ends with the sum over the blocks,
// the same on every member of its group.
TEST(Replay, FoldedExpertGradientsSyncOverTheRanksThatHoldTheSameExperts) {
  for (const int zero : {0, 1}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    auto s = test::parse(small_moe("tp = 4\npp = 1\ndp = 1\nep = 2\nexpert_tp = 1\nmicro_batch = 1\nzero = " +
                                   std::to_string(zero) + "\n"));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const double experts = analytic::stage_costs(*s, *s->plan)[0][0].expert_params;
    ASSERT_GT(experts, 0);
    test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
    auto r = exec::replay(*s, *s->plan, counting, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    test::check_order_and_dependencies(*r);
    const auto by_size = counting.reduced_by_size();
    const double moved = 4 * experts * (zero == 0 ? 1.0 : 1.5);  // 4 members; ZeRO 1 gathers a 1/2 shard
    ASSERT_TRUE(by_size.count(2));
    EXPECT_NEAR(static_cast<double>(by_size.at(2)), moved, 0.01 * moved);
  }
  {
    // Without expert parallelism (ep 1, expert_tp 2 of tp 4): the expert_tp groups' TP calls and
    // the experts' sync both run over two members; no all-to-all.
    auto s = test::parse(small_moe("tp = 4\npp = 1\ndp = 1\nep = 1\nexpert_tp = 2\nmicro_batch = 1\n"));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto c = analytic::stage_costs(*s, *s->plan)[0][0];
    ASSERT_GT(c.expert_params, 0);
    test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
    auto r = exec::replay(*s, *s->plan, counting, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    test::check_order_and_dependencies(*r);
    EXPECT_EQ(counting.all_to_all_calls(), 0);
    const auto by_size = counting.reduced_by_size();
    ASSERT_TRUE(by_size.count(2));
    EXPECT_GT(static_cast<double>(by_size.at(2)), 4 * c.expert_params);  // the sync, and the MoE block's TP calls
  }
  struct Case {
    const char* plan;
    int devices, blocks;
  };
  for (const Case& c : {Case{"tp = 2\npp = 1\ndp = 2\nep = 2\nexpert_tp = 1\n", 4, 2},
                        Case{"tp = 4\npp = 1\ndp = 1\nep = 2\nexpert_tp = 1\n", 4, 2},
                        Case{"tp = 2\npp = 1\ndp = 4\nep = 2\nexpert_tp = 1\nzero = 1\n", 8, 4},
                        Case{"tp = 4\npp = 1\ndp = 2\nep = 2\nexpert_tp = 2\n", 8, 2},
                        Case{"tp = 4\npp = 1\ndp = 1\nep = 1\nexpert_tp = 2\n", 4, 2}}) {
    SCOPED_TRACE(c.plan);
    auto text = small_moe(std::string(c.plan) + "micro_batch = 1\n");
    text.replace(text.find("devices = 4"), 11, "devices = " + std::to_string(c.devices));
    auto s = test::parse(text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto g = schedule::build_schedule(*s, *s->plan);
    auto layout = exec::dp_layout(g);
    ASSERT_TRUE(layout.ok()) << test::all_errors(layout.errors());
    auto backend = exec::make_cpu_backend(layout->real_devices);
    std::vector<std::unique_ptr<exec::Device>> devices;
    for (int d = 0; d < layout->real_devices; ++d) devices.push_back(backend->open(d));
    std::vector<std::string> notes;
    auto comms = exec::make_communicators({devices, *backend, nullptr, -1, notes}, g, *s->plan, *layout, s->plan->ep > 1,
                                          std::vector<int>(g.devices.size(), 1));
    ASSERT_TRUE(comms.ok()) << test::all_errors(comms.errors());
    const auto& info = g.devices[0];
    const int block = info.expert_tp_or_tp() * std::max(1, info.ep);
    ASSERT_EQ(info.count / block, c.blocks);
    std::atomic<int> synced{0};
    std::vector<std::thread> threads;
    for (int member = 0; member < info.count; ++member)
      threads.emplace_back([&, member] {
        const int real = layout->first_real[0] + member, offset = member % block, b = member / block;
        for (std::uint32_t i = 0; i < g.size(); ++i) {  // layer order on every member
          if (g.tasks[i].kind != schedule::TaskKind::GradReduce) continue;
          const int gi = layout->member_of[i][static_cast<std::size_t>(member % info.tp)].front();
          const auto& of = comms->edp_of[static_cast<std::size_t>(real)];
          const auto e = of.find(gi);
          ASSERT_NE(e, of.end()) << "member " << member;
          EXPECT_EQ(e->second->size(), c.blocks);
          const std::size_t n = 6;
          std::vector<float> grad(n);
          auto value = [&](std::size_t k) { return float(1 + int((7 * offset + k + 3 * std::size_t(g.tasks[i].first_layer)) % 5)); };
          for (std::size_t k = 0; k < n; ++k) grad[k] = value(k) * float(b + 1);
          EXPECT_TRUE(e->second->all_reduce(grad.data(), n).ok());
          for (std::size_t k = 0; k < n; ++k)
            EXPECT_EQ(grad[k], value(k) * float(c.blocks * (c.blocks + 1) / 2)) << "member " << member << " layer "
                                                                                << g.tasks[i].first_layer;
          ++synced;
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_GT(synced.load(), 0);
  }
}

// fp8_dispatch in the replay: the dispatch-way round of each pair (a forward's dispatch, a
// backward's combine gradient) moves h bytes and a 4-byte scale per 128 values a row, the other
// round h values of the training format (fp32 here): per row 128/4 + 1 = 33 words against 128,
// so the exchanged values come to (33 + 128) / (128 + 128) of the plain replay's, exactly (both
// rounds of a pair carry the same rows).
TEST(Replay, Fp8DispatchSendsTheDispatchWayRoundsInFp8) {
  auto run = [](const std::string& extra) {
    auto s = test::parse(small_moe("tp = 1\npp = 2\ndp = 2\nep = 2\nmicro_batch = 1\n" + extra));
    EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
    test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
    auto r = s.ok() ? exec::replay(*s, *s->plan, counting, {1, 0}) : Result<exec::Replay>(Diagnostic{});
    EXPECT_TRUE(r.ok()) << test::all_errors(r.errors());
    if (r.ok()) test::check_order_and_dependencies(*r);
    long values = 0;
    for (const auto& [size, n] : counting.exchanged_by_size()) values += n;
    return values;
  };
  const long plain = run(""), fp8 = run("fp8_dispatch = true\n");
  ASSERT_GT(plain, 0);
  EXPECT_EQ(fp8 * 256, plain * 161);
}

// The hierarchical dispatch's messages from the real routing: 4 experts (one per EP rank), top-2,
// ep 4 on two nodes of two. A token needs the other node unless both its experts are on its own
// (C(2,2)/C(4,2) = 1/6 of tokens): the network step carries about 5/6 of the tokens; a rank
// forwards to its node-mate the rows for it of its own tokens and of those that landed from its
// rail partner, 2 · 1/2 of a rank's tokens. With expert_groups = 2 (a group per node) and
// expert_group_topk = 1, a token's experts share one node: half the tokens go across.
TEST(Routing, HierarchicalDispatchCountsTokensOncePerNode) {
  workload::ModelSpec m;
  m.experts = 4;
  m.top_k = 2;
  const std::int64_t tokens = 6000;
  const auto r = exec::route_layer(m, 4, tokens, 11, 0, 0, 0, 2);
  EXPECT_NEAR(static_cast<double>(r.max_rail_rows) / tokens, 5.0 / 6, 0.03);
  EXPECT_NEAR(static_cast<double>(r.max_fanout_rows) / tokens, 1.0, 0.04);
  EXPECT_EQ(exec::route_layer(m, 4, tokens, 11, 0, 0, 0, 1).max_rail_rows, 0);  // one node: none
  EXPECT_EQ(exec::route_layer(m, 4, tokens, 11, 0, 0, 0, 1).rows, r.rows);      // the same draws
  m.expert_groups = 2;
  m.expert_group_topk = 1;
  const auto g = exec::route_layer(m, 4, tokens, 11, 0, 0, 0, 2);
  EXPECT_NEAR(static_cast<double>(g.max_rail_rows) / tokens, 0.5, 0.03);
  for (const auto& src : g.rows) EXPECT_EQ(src[0] + src[1] + src[2] + src[3], 2 * tokens);
  // Inside one node DeepEP sends a token once per rank its experts are on: 8 experts, two a rank,
  // top-2 over ep 4. A rank receives 2 · 2/8 = 1/2 row a token as per-expert copies, but a token
  // reaches it with probability 1 − C(6,2)/C(8,2) = 13/28.
  m = workload::ModelSpec{};
  m.experts = 8;
  m.top_k = 2;
  const auto one = exec::route_layer(m, 4, tokens, 11, 0, 0, 0, 1);
  EXPECT_NEAR(static_cast<double>(one.max_pair_rows) / tokens, 0.5, 0.03);
  EXPECT_NEAR(static_cast<double>(one.max_rank_rows) / tokens, 13.0 / 28, 0.03);
  EXPECT_LT(one.max_rank_rows, one.max_pair_rows);
}

// pipeline_scatter_gather without sequence parallelism: each stage sends 1/tp of the message per
// rank and the receiving ranks all-gather it in their TP task, as the cost model prices it:
// per micro-batch, stage 1's two ranks gather the activation and stage 0's two the gradient.
TEST(Replay, ReceiversRegatherScatteredPipelineMessages) {
  auto gathers = [](const std::string& training) {
    auto text = small("tp = 2\npp = 2\ndp = 1\nmicro_batch = 1\nsequence_parallel = false\n", 4);
    text.replace(text.find("precision = \"fp32\"\n"), 19, "precision = \"fp32\"\n" + training);
    auto s = test::parse(text);
    EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
    if (!s.ok()) return -1L;
    test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
    auto r = exec::replay(*s, *s->plan, counting, {1, 0});
    EXPECT_TRUE(r.ok()) << test::all_errors(r.errors());
    if (r.ok()) test::check_order_and_dependencies(*r);
    return counting.all_gather_calls();
  };
  const long whole = gathers("pipeline_scatter_gather = false\n");
  const long scattered = gathers("");
  EXPECT_EQ(whole, 0);  // no sequence parallelism, no data parallelism: all-reduces only
  EXPECT_EQ(scattered - whole, 4 * 4);  // 4 micro-batches × (2 ranks forward + 2 backward)
}

// Mixed pipelines whose stages change tp (issue 14): a split pipeline message (sequence
// parallelism, or pipeline_scatter_gather) is resharded on its way, each receiving rank reading
// the parts of the sender ranks' slices that its own slice covers, so the whole activation
// crosses once per micro-batch and direction, whatever the degrees; a whole message reaches
// every receiving rank once. Before 2026-12-06 a rank of a wider stage read the congruent rank's
// whole slice (tp 1 → 2: twice the activation; tp 2 → 4: twice). 4 micro-batches of 64 tokens ×
// 128 wide in fp32.
TEST(Replay, MixedPipelinesReshardTheirMessages) {
  const long act = 4L * 64 * 128;  // bytes of one micro-batch's activation (fp32)
  struct Case {
    int tp0, tp1;
    std::string training, parallel;
    long per_micro_batch;  // bytes copied forward + backward
  };
  const std::string sp = "sequence_parallel = true\n", none = "sequence_parallel = false\n";
  const std::vector<Case> cases{
      {2, 1, "", sp, 2 * act},                                             // 2 slices into one, one cut in two
      {1, 2, "", sp, 2 * act},
      {2, 4, "", sp, 2 * act},
      {4, 2, "", sp, 2 * act},
      {2, 1, "", none, 2 * act},                                           // scatter-gather (the default)
      {2, 1, "pipeline_scatter_gather = false\n", none, act + 2 * act},  // whole: 1 reader forward, 2 backward
      {1, 2, "pipeline_scatter_gather = false\n", none, 2 * act + act},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("tp " + std::to_string(c.tp0) + " -> " + std::to_string(c.tp1) + " " + c.training + c.parallel);
    auto text = small("micro_batch = 1\n" + c.parallel +
                          "[[parallel.replicas]]\ncount = 1\nmicro_batches = 4\nstages = [{pool = \"core\", tp = " +
                          std::to_string(c.tp0) + ", layers = 2}, {pool = \"core\", tp = " + std::to_string(c.tp1) +
                          ", layers = 2}]\n",
                      std::max(c.tp0, c.tp1));
    text.replace(text.find("nodes = 1"), 9, "nodes = 2");  // a stage per node
    text.replace(text.find("precision = \"fp32\"\n"), 19, "precision = \"fp32\"\n" + c.training);
    auto s = test::parse(text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    test::FlakyBackend counting(exec::make_cpu_backend(c.tp0 + c.tp1), 1 << 30);
    auto r = exec::replay(*s, *s->plan, counting, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    test::check_order_and_dependencies(*r);
    EXPECT_EQ(counting.copied_bytes(), 4 * c.per_micro_batch);
  }
}

// --fit: fewer replicas for fewer devices, fewer layers for less memory, each change said; the
// scaled plan then replays within the memory it was scaled to.
TEST(Scale, ScalesAPlanDownToTheDevicesAndMemoryAtHand) {
  auto s = test::parse(small("tp = 1\npp = 2\ndp = 2\nmicro_batch = 1\n", 4));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  // Enough of everything: unchanged.
  auto same = exec::scale_to_fit(*s, *s->plan, 4, 0);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->notes.empty());
  // Two devices: one replica of the two-stage pipeline, half the global batch.
  auto two = exec::scale_to_fit(*s, *s->plan, 2, 0);
  ASSERT_TRUE(two.ok()) << test::all_errors(two.errors());
  EXPECT_EQ(two->plan.groups[0].replicas, 1);
  EXPECT_EQ(two->scenario.training.global_batch, s->training.global_batch / 2);
  ASSERT_EQ(two->notes.size(), 1u);
  EXPECT_NE(two->notes[0].find("data-parallel replicas 2 → 1"), std::string::npos) << two->notes[0];
  // Less memory than the full model's stage needs: fewer layers, and the replay fits.
  auto full = exec::replay(two->scenario, two->plan, *exec::make_cpu_backend(2), {1, 0});
  ASSERT_TRUE(full.ok());
  const auto need = *std::max_element(full->predicted.peak_bytes.begin(), full->predicted.peak_bytes.end());
  const auto capacity = static_cast<std::size_t>(need) * 3 / 4;
  auto small_mem = exec::scale_to_fit(*s, *s->plan, 2, capacity);
  ASSERT_TRUE(small_mem.ok()) << test::all_errors(small_mem.errors());
  EXPECT_LT(small_mem->scenario.model.layers, s->model.layers);
  EXPECT_NE(small_mem->notes.back().find("layers 4 → "), std::string::npos) << small_mem->notes.back();
  auto r = exec::replay(small_mem->scenario, small_mem->plan, *exec::make_cpu_backend(2, capacity), {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  // What cannot be scaled: one replica needs more devices than there are; nothing fits.
  EXPECT_FALSE(exec::scale_to_fit(*s, *s->plan, 1, 0).ok());
  EXPECT_FALSE(exec::scale_to_fit(*s, *s->plan, 2, 1000).ok());
}

// --fit with several replica groups (the pool-local groups `hetsim plan` recommends): each group
// loses replicas in the same share, at least one each; every group's stages lose layers and the
// groups still hold the same (shortened) model; the scaled plan replays within its memory.
TEST(Scale, ScalesPlansOfSeveralReplicaGroups) {
  // Two replicas of one stage on the fast pool, one two-stage replica (1 + 3 layers) on the slow.
  auto s = test::parse(two_pools(two_group_plan(1, 0)));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto same = exec::scale_to_fit(*s, *s->plan, 4, 0);
  ASSERT_TRUE(same.ok()) << test::all_errors(same.errors());
  EXPECT_TRUE(same->notes.empty());
  auto three = exec::scale_to_fit(*s, *s->plan, 3, 0);
  ASSERT_TRUE(three.ok()) << test::all_errors(three.errors());
  EXPECT_EQ(three->plan.groups[0].replicas, 1);
  EXPECT_EQ(three->plan.groups[1].replicas, 1);
  EXPECT_EQ(three->plan.devices(), 3);
  EXPECT_EQ(three->scenario.training.global_batch, 3);  // 1 × 1 + 1 × 2 micro-batches
  ASSERT_EQ(three->notes.size(), 1u);
  EXPECT_NE(three->notes[0].find("data-parallel replicas 2 + 1 → 1 + 1"), std::string::npos) << three->notes[0];
  // Two devices hold no replica of the two-stage group.
  auto two = exec::scale_to_fit(*s, *s->plan, 2, 0);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(test::all_errors(two.errors()).find("one replica of each of the 2 replica groups needs 3 devices"),
            std::string::npos)
      << test::all_errors(two.errors());
  // Memory: three quarters of the full plan's peak.
  auto full = exec::replay(three->scenario, three->plan, *exec::make_cpu_backend(3), {1, 0});
  ASSERT_TRUE(full.ok()) << test::all_errors(full.errors());
  const auto need = *std::max_element(full->predicted.peak_bytes.begin(), full->predicted.peak_bytes.end());
  const auto capacity = static_cast<std::size_t>(need) * 3 / 4;
  auto fit = exec::scale_to_fit(*s, *s->plan, 3, capacity);
  ASSERT_TRUE(fit.ok()) << test::all_errors(fit.errors());
  const int layers = fit->scenario.model.layers;
  EXPECT_LT(layers, s->model.layers);
  for (const auto& g : fit->plan.groups) {
    int first = 0;
    for (const auto& st : g.stages) {
      EXPECT_EQ(st.first_layer, first);
      EXPECT_GE(st.layers, 1);
      first += st.layers;
    }
    EXPECT_EQ(first, layers) << "every group holds the whole model";
  }
  EXPECT_NE(fit->notes.back().find("layers 4 → " + std::to_string(layers)), std::string::npos) << fit->notes.back();
  auto r = exec::replay(fit->scenario, fit->plan, *exec::make_cpu_backend(3, capacity), {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  test::check_order_and_dependencies(*r);
  for (auto peak : r->predicted.peak_bytes) EXPECT_LE(peak, static_cast<std::int64_t>(capacity));
  // Nothing fits: refused, not looped.
  EXPECT_FALSE(exec::scale_to_fit(*s, *s->plan, 3, 1000).ok());
  // Expert parallelism: replicas stay a multiple of ep (dp 4 · ep 2 on 3 devices: 2 replicas).
  auto moe = test::parse(small_moe("tp = 1\npp = 1\ndp = 4\nep = 2\nmicro_batch = 1\n"));
  ASSERT_TRUE(moe.ok()) << test::all_errors(moe.errors());
  auto moe3 = exec::scale_to_fit(*moe, *moe->plan, 3, 0);
  ASSERT_TRUE(moe3.ok()) << test::all_errors(moe3.errors());
  EXPECT_EQ(moe3->plan.groups[0].replicas, 2);
  EXPECT_FALSE(exec::scale_to_fit(*moe, *moe->plan, 1, 0).ok());  // one EP group needs 2
  // Interleaved: every stage keeps whole model chunks (v = 2 layers of the 4-layer stages).
  auto il_text = small("micro_batch = 1\nschedule = \"interleaved\"\nvirtual_stages = 2\n"
                       "[[parallel.replicas]]\ncount = 1\nmicro_batches = 4\n"
                       "stages = [{pool = \"core\", tp = 1, layers = 4}, {pool = \"core\", tp = 1, layers = 4}]\n",
                       2);
  il_text.replace(il_text.find("layers = 4\nhidden"), 10, "layers = 8");
  auto il = test::parse(il_text);
  if (il.ok()) {
    const auto il_need = [&] {
      auto run = exec::replay(*il, *il->plan, *exec::make_cpu_backend(2), {1, 0});
      return run.ok() ? *std::max_element(run->predicted.peak_bytes.begin(), run->predicted.peak_bytes.end()) : 0;
    }();
    ASSERT_GT(il_need, 0);
    auto cut = exec::scale_to_fit(*il, *il->plan, 2, static_cast<std::size_t>(il_need) * 3 / 4);
    ASSERT_TRUE(cut.ok()) << test::all_errors(cut.errors());
    EXPECT_LT(cut->scenario.model.layers, 8);
    for (const auto& st : cut->plan.groups[0].stages) EXPECT_EQ(st.layers % 2, 0);
  } else {
    ADD_FAILURE() << test::all_errors(il.errors());
  }
}

TEST(Compare, ComputesErrorsPerKindStepAndMemory) {
  io::TraceFile p, m;
  p.devices = m.devices = {"d0"};
  p.peak_bytes = {100};
  m.peak_bytes = {80};
  p.makespan_ns = 1000;
  m.makespan_ns = 800;
  p.tasks = {{0, "forward", "F L0 mb0", 0, 300, {{"gemm", 200}, {"norm", 100}}},
             {0, "backward", "B L0 mb0", 300, 1000, {{"gemm", 700}}}};
  m.tasks = {{0, "forward", "F L0 mb0", 0, 200, {{"gemm", 150}, {"norm", 40}}},
             {0, "backward", "B L0 mb0", 200, 800, {{"gemm", 500}}}};
  auto c = exec::compare(p, m);
  ASSERT_TRUE(c.ok());
  EXPECT_NEAR(c->step_error(), 1000.0 / 800 - 1, 1e-12);
  EXPECT_EQ(c->kinds.size(), 2u);
  EXPECT_NEAR(c->kinds[0].error(), 300.0 / 200 - 1, 1e-12);
  EXPECT_NEAR(c->kinds[1].error(), 700.0 / 600 - 1, 1e-12);
  EXPECT_EQ(c->worst[0].name, "F L0 mb0");  // |300 − 200| = |700 − 600|: the first stays first
  // Op classes summed over tasks: gemm 900 vs 650, norm 100 vs 40.
  ASSERT_EQ(c->classes.size(), 2u);
  EXPECT_EQ(c->classes[0].kind, "gemm");
  EXPECT_NEAR(c->classes[0].error(), 900.0 / 650 - 1, 1e-12);
  EXPECT_NEAR(c->classes[1].error(), 100.0 / 40 - 1, 1e-12);
  m.tasks[1].name = "other";
  EXPECT_FALSE(exec::compare(p, m).ok());
  m.tasks[1].name = "B L0 mb0";
  m.tasks[1].kind = "forward";
  EXPECT_FALSE(exec::compare(p, m).ok()) << "a task of another kind is another step";
  m.tasks[1].kind = "backward";
  m.makespan_ns = 0;
  EXPECT_FALSE(exec::compare(p, m).ok()) << "a measured step of 0 ns has no error to report";
}

// Defect 9: nonsense traces are refused with the JSON path of what is wrong, not compared.
TEST(Compare, NonsenseTracesAreRefusedWithTheirPath) {
  const std::string good = R"({"format": "hetsim-trace", "version": 1, "source": "measured", "makespan_ns": 1000,
    "devices": [{"label": "d0", "peak_bytes": 100}],
    "tasks": [{"device": 0, "kind": "forward", "name": "F", "start_ns": 0, "end_ns": 300, "parts_ns": {"gemm": 200}}]})";
  const auto dir = std::filesystem::temp_directory_path() / ("hetsim-trace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto read = [&](const std::string& text) {
    const auto f = dir / "t.json";
    std::ofstream(f) << text;
    return io::read_trace_json(f);
  };
  ASSERT_TRUE(read(good).ok()) << to_string(read(good).errors()[0]);
  auto swap = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\"end_ns\": 300", "\"end_ns\": -5"},                      // negative time
      {"\"start_ns\": 0, \"end_ns\": 300", "\"start_ns\": 400, \"end_ns\": 300"},  // negative duration
      {"\"makespan_ns\": 1000", "\"makespan_ns\": 18446744073709551616"},  // 2^64
      {"\"makespan_ns\": 1000", "\"makespan_ns\": 18446744073709551615"},  // 2^64 − 1
      {"\"makespan_ns\": 1000", "\"makespan_ns\": 100"},          // a task after the step
      {"\"makespan_ns\": 1000", "\"makespan_ns\": 1000.5"},       // not whole
      {"\"device\": 0", "\"device\": 9223372036854775808"},       // 2^63
      {"\"device\": 0", "\"device\": 4294967296"},                // 2^32: would wrap to 0
      {"\"device\": 0", "\"device\": 1"},                         // no such device
      {"\"kind\": \"forward\"", "\"kind\": \"teleport\""},    // unknown kind
      {"\"peak_bytes\": 100", "\"peak_bytes\": -1"},
      {"\"peak_bytes\": 100", "\"peak_bytes\": 1e300"},
      {"{\"gemm\": 200}", "{\"gemm\": -200}"},
      {"{\"gemm\": 200}", "[200]"},
      {"\"tasks\": [", "\"tasks\": 3, \"x\": ["},
      {"\"format\": \"hetsim-trace\"", "\"format\": [1]"},       // found by fuzz_trace: threw
      {"\"version\": 1", "\"version\": \"1\""},
      {"\"source\": \"measured\"", "\"source\": {}"},
  };
  for (const auto& [from, to] : cases) {
    auto r = read(swap(from, to));
    EXPECT_FALSE(r.ok()) << to;
    if (!r.ok()) {
      EXPECT_FALSE(r.errors()[0].key.empty()) << to << ": " << to_string(r.errors()[0]);
      EXPECT_EQ(r.errors()[0].kind, ErrorKind::BadInput);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Calibrate, RecoversKnownParametersFromSyntheticMeasurements) {
  // t = 2mnk / (peak · d/(d + h)) + launch with peak 50 GFLOP/s, h = 32, launch 20 us.
  const double peak = 50e9, h = 32, launch = 20e-6;
  std::vector<exec::GemmSample> samples;
  for (int m : {32, 64, 256, 1024})
    for (int n : {64, 512})
      for (int k : {16, 128, 1024}) {
        const double d = std::min({double(m), double(n), double(k)});
        samples.push_back({double(m), double(n), double(k), 2.0 * m * n * k / (peak * d / (d + h)) + launch});
      }
  const auto fit = exec::fit_gemm(samples);
  EXPECT_NEAR(fit.peak_flops / peak, 1.0, 1e-6);
  EXPECT_NEAR(fit.half_dim, h, 1e-9);
  EXPECT_NEAR(fit.launch_s, launch, 1e-9);
}

// A host so loaded that every GEMM call carries milliseconds of waiting (seen under
// AddressSanitizer on 2 busy cores: a fitted launch of more than 1 ms, which the catalogue refuses,
// so calibrate wrote nothing): the launch stays within the catalogue's 0–1 ms, and the profile loads.
TEST(Calibrate, ALoadedHostsFitKeepsTheLaunchTheCatalogueTakes) {
  std::vector<exec::GemmSample> samples;
  for (int m : {64, 256, 1024})
    for (int k : {64, 512}) samples.push_back({double(m), 512.0, double(k), 2.0 * m * 512 * k / 1e9 + 5e-3});
  const auto fit = exec::fit_gemm(samples);
  EXPECT_LE(fit.launch_s, 1e-3);
  exec::Profile p;
  p.gemm = fit;
  p.attention_efficiency = 0.5;
  p.memory_bandwidth = 1e9;
  p.copy_bandwidth = 1e9;
  hw::Catalog cat = test::catalog();
  const auto errs = io::read_catalog_text(exec::profile_toml(p, "cpu-busy", 1.0 * 1073741824.0, 2), "busy.toml", cat);
  EXPECT_TRUE(errs.empty()) << test::all_errors(errs);
}

TEST(Calibrate, ProfileLoadsAsACatalogueDevice) {
  exec::Profile p;
  p.gemm = {40e9, 8, 2e-6, 0.01};
  p.attention_efficiency = 0.8;
  p.memory_bandwidth = 20e9;
  p.copy_bandwidth = 10e9;
  const std::string toml = exec::profile_toml(p, "cpu-x", 4.0 * 1073741824.0, 2);
  hw::Catalog cat = test::catalog();
  const auto errs = io::read_catalog_text(toml, "profile.toml", cat);
  ASSERT_TRUE(errs.empty()) << test::all_errors(errs);
  const auto* d = cat.find_device("cpu-x");
  ASSERT_NE(d, nullptr);
  EXPECT_NEAR(d->peak_for(hw::Dtype::Fp32)->v, 40e9, 1e3);
  EXPECT_DOUBLE_EQ(d->efficiency.gemm_half_dim, 8);
  EXPECT_NEAR(d->efficiency.launch_overhead.v, 2e-6, 1e-12);
  EXPECT_NE(cat.find_link("cpu-x-copy"), nullptr);
}

TEST(Calibrate, AProfileFromASlowSanitizedCoreStillLoads) {
  // Under AddressSanitizer on a slow CI machine the cpu backend measured 0.3 GFLOP/s and
  // 0.2 GB/s; the profile it writes must load (the catalogue's floors sit below that), and a
  // device at zero is still refused.
  exec::Profile p;
  p.gemm = {0.3e9, 8, 40e-6, 0.05};
  p.attention_efficiency = 0.5;
  p.memory_bandwidth = 0.2e9;
  p.copy_bandwidth = 0.15e9;
  hw::Catalog cat = test::catalog();
  const auto errs = io::read_catalog_text(exec::profile_toml(p, "cpu-slow", 1.0 * 1073741824.0, 2), "slow.toml", cat);
  ASSERT_TRUE(errs.empty()) << test::all_errors(errs);
  ASSERT_NE(cat.find_device("cpu-slow"), nullptr);
  EXPECT_NEAR(cat.find_device("cpu-slow")->peak_for(hw::Dtype::Fp32)->v, 0.3e9, 1e3);
  p.gemm.peak_flops = 0.0;
  const auto zero = io::read_catalog_text(exec::profile_toml(p, "cpu-zero", 1.0 * 1073741824.0, 2), "zero.toml", cat);
  ASSERT_FALSE(zero.empty());
  EXPECT_EQ(zero.front().key, "device[0].peak.fp32");
}

TEST(Calibrate, PerOpClassFiguresReachTheCostModel) {
  // A profile that measured norms at a quarter, the loss at half and the optimizer at a tenth of
  // the streaming bandwidth: a norm's bytes then take 4× as long as a plain elementwise pass.
  exec::Profile p;
  p.gemm = {40e9, 8, 0, 0.01};
  p.attention_efficiency = 0.8;
  p.attention_half_seq = 200;
  p.memory_bandwidth = 20e9;
  p.copy_bandwidth = 10e9;
  p.norm_memory = 0.25;
  p.loss_memory = 0.5;
  p.optimizer_memory = 0.1;
  p.unvectorized_memory = 0.5;
  hw::Catalog cat = test::catalog();
  ASSERT_TRUE(io::read_catalog_text(exec::profile_toml(p, "cpu-y", 4.0 * 1073741824.0, 2), "p.toml", cat).empty());
  const auto* d = cat.find_device("cpu-y");
  ASSERT_NE(d, nullptr);
  EXPECT_NEAR(d->efficiency.attention_half_seq, 200, 1e-9);
  workload::Op norm, elem;
  norm.kind = workload::OpKind::Norm;
  elem.kind = workload::OpKind::Elementwise;
  norm.fwd_bytes = elem.fwd_bytes = Bytes{1e9};
  const double tn = cost::op_time(*d, hw::Dtype::Fp32, norm, cost::Pass::Forward).v;
  const double te = cost::op_time(*d, hw::Dtype::Fp32, elem, cost::Pass::Forward).v;
  EXPECT_NEAR(tn / te, 4.0, 1e-6);
  workload::Op cast = elem;
  cast.unvectorized = true;  // at half the streaming bandwidth
  EXPECT_NEAR(cost::op_time(*d, hw::Dtype::Fp32, cast, cost::Pass::Forward).v / te, 2.0, 1e-6);
  // 1e9 parameters × 28 B at 2e9 B/s = 14 s.
  EXPECT_NEAR(cost::optimizer_time(*d, 1e9, 28).v, 14.0, 1e-6);
}

// Every timed GEMM goes into the profile as measured_gemms, and the cost model then prices
// those shapes at their measured times; the fp32 peak is raised to the fastest GEMM timed (no
// measured GEMM may beat its peak).
TEST(Calibrate, TimedGemmsReachTheCostModelAsMeasured) {
  exec::Profile p;
  p.gemm = {40e9, 0, 0, 0.2};
  p.attention_efficiency = 0.8;
  p.memory_bandwidth = 20e9;
  p.copy_bandwidth = 10e9;
  // 2·256³ = 33.6 MFLOP in 0.5 ms: 67 GFLOP/s, above the fit's 40; 2·1024·64·512 in 4 ms.
  p.samples = {{256, 256, 256, 0.5e-3}, {1024, 64, 512, 4e-3}};
  hw::Catalog cat = test::catalog();
  const auto errs = io::read_catalog_text(exec::profile_toml(p, "cpu-m", 4.0 * 1073741824.0, 2), "m.toml", cat);
  ASSERT_TRUE(errs.empty()) << test::all_errors(errs);
  const auto* d = cat.find_device("cpu-m");
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->measured_gemms.size(), 2u);
  EXPECT_NEAR(d->peak_for(hw::Dtype::Fp32)->v / (2.0 * 256 * 256 * 256 / 0.5e-3), 1.0, 1e-5);  // 6 digits written
  for (const auto& [m, n, k, t] : {std::array{256.0, 256.0, 256.0, 0.5e-3}, std::array{1024.0, 64.0, 512.0, 4e-3}}) {
    workload::Op op;
    op.kind = workload::OpKind::Gemm;
    op.m = m, op.n = n, op.k = k;
    op.operand_bytes = 4;
    EXPECT_NEAR(cost::op_time(*d, hw::Dtype::Fp32, op, cost::Pass::Forward).v, t, t * 1e-5) << m << "x" << n << "x" << k;
  }
}

// The shapes calibrate --shapes-of times are exactly the GEMMs the replay runs, forward and
// backward, on every stage (here tp 2 · pp 2: the head's and the sharded layers' GEMMs).
TEST(Calibrate, ShapesOfAPlanAreTheGemmsItsReplayRuns) {
  auto s = test::parse(small("tp = 2\npp = 2\ndp = 1\nmicro_batch = 1\n", 4));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  test::FlakyBackend counting(exec::make_cpu_backend(4), 1 << 30);
  auto r = exec::replay(*s, *s->plan, counting, {1, 0});
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  const auto planned = exec::gemm_shapes(*s, *s->plan);
  const auto run = counting.gemm_shapes();
  const std::set<std::array<int, 3>> planned_set(planned.begin(), planned.end());
  EXPECT_EQ(planned_set, run);
  EXPECT_GT(run.size(), 6u);
}

// One round of the calibration load runs each of its kernels once on the device (every GEMM
// shape it is given, a streaming pass, a norm and an attention forward and backward, Adam), and
// none once stopped.
TEST(Calibrate, ALoadRoundRunsTheCalibrationsKernelsUntilStopped) {
  test::FlakyBackend counting(exec::make_cpu_backend(1), 1 << 30);
  auto dev = counting.open(0);
  const std::vector<std::array<int, 3>> shapes = {{64, 64, 64}, {32, 48, 16}};
  std::atomic<bool> stop{false};
  EXPECT_EQ(exec::calibration_load(*dev, shapes, stop), 2 + 6);
  EXPECT_EQ(counting.gemm_shapes(), (std::set<std::array<int, 3>>{{64, 64, 64}, {32, 48, 16}}));
  stop = true;
  test::FlakyBackend idle(exec::make_cpu_backend(1), 1 << 30);
  auto other = idle.open(0);
  EXPECT_EQ(exec::calibration_load(*other, shapes, stop), 0);
  EXPECT_TRUE(idle.gemm_shapes().empty());
}

// calibrate --alongside: the devices beside the one measured run the calibration's GEMMs (the
// built-in shapes and the plan's) while it is measured, and the profile says it was measured so.
TEST(Calibrate, DevicesAlongsideRunTheCalibrationLoadWhileItMeasures) {
  test::FlakyBackend beside(exec::make_cpu_backend(1), 1 << 30);
  auto load = beside.open(0);
  auto backend = exec::make_cpu_backend(2, std::size_t{1} << 30);
  const std::vector<std::array<int, 3>> planned = {{96, 80, 72}};
  const exec::Profile p = exec::calibrate(*backend, 0.3, planned, {load.get()});
  EXPECT_TRUE(p.failure.empty()) << p.failure;
  EXPECT_EQ(p.alongside, 1);
  const auto ran = beside.gemm_shapes();
  EXPECT_GT(ran.size(), 1u);
  EXPECT_TRUE(ran.count({64, 64, 64}) > 0 || ran.count({96, 80, 72}) > 0);  // its first round, at least begun
  EXPECT_NE(exec::profile_toml(p, "cpu-x", 1e9, 1).find("calibrate --alongside"), std::string::npos);
  // Alone, no such line: Calibrate.OneCalibrationTimesEveryGemmItIsGivenWarmAndEveryOpClass.
}

// One calibration (each one takes half a minute under the sanitizers, so one test checks them all),
// given a plan's GEMMs (`calibrate --shapes-of`) and a budget of a few ms per shape, so that every
// larger call is longer than its share:
// - it times each GEMM of the plan as measured, and every GEMM it writes as measured is the median
//   of three warm calls at least, however small the budget (each shape runs a warm-up call and
//   three more; before, a call longer than its share of the budget was timed once, cold);
// - it fits every op class within its range;
// - alone, the profile does not say it was measured beside a load.
TEST(Calibrate, OneCalibrationTimesEveryGemmItIsGivenWarmAndEveryOpClass) {
  auto s = test::parse(small("tp = 2\npp = 2\ndp = 1\nmicro_batch = 1\n", 4));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto planned = exec::gemm_shapes(*s, *s->plan);
  planned.push_back({384, 320, 256});
  test::FlakyBackend counting(exec::make_cpu_backend(2, std::size_t{1} << 30), 1 << 30);
  const exec::Profile p = exec::calibrate(counting, 0.05, planned);
  EXPECT_TRUE(p.failure.empty()) << p.failure;
  for (const auto& g : planned) {
    const bool timed = std::any_of(p.samples.begin(), p.samples.end(), [&](const exec::GemmSample& x) {
      return x.m == g[0] && x.n == g[1] && x.k == g[2] && x.seconds > 0;
    });
    EXPECT_TRUE(timed) << g[0] << "x" << g[1] << "x" << g[2];
    EXPECT_GE(counting.gemm_calls(g), 4) << g[0] << "x" << g[1] << "x" << g[2];
  }
  for (const auto& x : p.samples) {
    const std::array<int, 3> shape{static_cast<int>(x.m), static_cast<int>(x.n), static_cast<int>(x.k)};
    EXPECT_GE(counting.gemm_calls(shape), 4) << x.m << "x" << x.n << "x" << x.k;
  }
  for (double f : {p.norm_memory, p.loss_memory, p.optimizer_memory, p.unvectorized_memory}) {
    EXPECT_GT(f, 0.0);
    EXPECT_LE(f, 1.0);
  }
  EXPECT_GE(p.attention_half_seq, 0.0);
  EXPECT_GT(p.attention_efficiency, 0.0);
  EXPECT_GT(p.peak_bf16, 0.0);
  EXPECT_GT(p.peak_fp16, 0.0);
  EXPECT_EQ(p.alongside, 0);
  EXPECT_EQ(exec::profile_toml(p, "cpu-x", 1e9, 1).find("calibrate --alongside"), std::string::npos);
}

}  // namespace
}  // namespace hetsim
