// Multi-process collectives over MPI, run by ctest under mpirun with 3 processes: every
// collective and point-to-point message of the MPI communicator, on host buffers and staged
// through a device's buffers, against sums computed here; groups split from the world.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/mpi/mpi_group.hpp"
#include "exec/replay/clock_sync.hpp"
#include "exec/replay/replay.hpp"
#include "sim/schedule/schedule.hpp"
#include "tests/support/flaky_backend.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

exec::ProcessGroup* world = nullptr;

// One step, no warm-up, over `world`; a fatal error on any process ends them all.
exec::ReplayOptions one_step_under_mpirun() {
  exec::ReplayOptions o{1, 0};
  o.world = world;
  o.on_fatal = [](const Diagnostic& d) {
    std::fprintf(stderr, "%s\n", to_string(d).c_str());
    world->abort(1);
  };
  return o;
}

TEST(Mpi, CollectivesAndMessagesAreNumericallyRight) {
  ASSERT_NE(world, nullptr);
  const int n = world->size(), r = world->rank();
  ASSERT_GE(n, 2);
  auto dev = exec::make_cpu_backend(1)->open(0);
  for (exec::Device* staged : {static_cast<exec::Device*>(nullptr), dev.get()}) {
    auto c = world->communicator(staged);
    const std::size_t count = 6;
    std::vector<float> mine(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = float(r + 1) + float(i) / 10;
    // Σ_r (r + 1) = n(n + 1)/2.
    const float sum_ranks = float(n * (n + 1)) / 2;
    std::vector<float> reduced = mine, gathered(n * count), scattered(2), exchanged(n * 2), received(count);
    ASSERT_TRUE(c->all_reduce(reduced.data(), count).ok());
    ASSERT_TRUE(c->all_gather(mine.data(), gathered.data(), count).ok());
    ASSERT_TRUE(c->reduce_scatter(mine.data(), scattered.data(), 2).ok());
    ASSERT_TRUE(c->all_to_all(mine.data(), exchanged.data(), 2).ok());
    ASSERT_TRUE(c->send(mine.data(), count, (r + 1) % n, 7).ok());
    ASSERT_TRUE(c->recv(received.data(), count, (r + n - 1) % n, 7).ok());
    ASSERT_TRUE(c->barrier().empty());
    for (std::size_t i = 0; i < count; ++i) {
      EXPECT_FLOAT_EQ(reduced[i], sum_ranks + float(n) * float(i) / 10);
      for (int q = 0; q < n; ++q) EXPECT_FLOAT_EQ(gathered[q * count + i], float(q + 1) + float(i) / 10);
      EXPECT_FLOAT_EQ(received[i], float((r + n - 1) % n + 1) + float(i) / 10);
    }
    for (std::size_t i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(scattered[i], sum_ranks + float(n) * float(r * 2 + i) / 10);
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(exchanged[q * 2 + i], float(q + 1) + float(r * 2 + i) / 10);
  }
}

TEST(Mpi, SplitGroupsGatherAndBroadcast) {
  const int n = world->size(), r = world->rank();
  // The even ranks form a group, ordered by rank.
  auto even = world->split(r % 2 == 0, r);
  EXPECT_EQ(even != nullptr, r % 2 == 0);
  if (even) {
    EXPECT_EQ(even->rank(), r / 2);
    EXPECT_EQ(even->size(), (n + 1) / 2);
  }
  int value = r == 0 ? 42 : 0;
  world->broadcast(&value, sizeof value, 0);
  EXPECT_EQ(value, 42);
  std::vector<std::int64_t> mine(static_cast<std::size_t>(r + 1), r);  // r + 1 values each
  const auto all = world->gather(mine, 0);
  if (r == 0) {
    ASSERT_EQ(all.size(), static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) EXPECT_EQ(all[static_cast<std::size_t>(q)], std::vector<std::int64_t>(q + 1, q));
  } else {
    EXPECT_TRUE(all.empty());
  }
}

// The processes of one host read one steady clock: the estimated offset to rank 0 is exactly
// zero, and a step's origin is rank 0's reading, the same number in every process.
TEST(Mpi, ProcessesOfOneHostShareRankZerosClock) {
  EXPECT_EQ(exec::clock_offset_to_rank0(*world), 0);
  const std::int64_t t0 = exec::common_step_origin(*world, 0);
  const auto all = world->gather({t0}, 0);
  if (world->rank() == 0) {
    for (const auto& v : all) EXPECT_EQ(v, std::vector<std::int64_t>{t0});
  }
  EXPECT_LE(t0, exec::host_clock_ns());
}

// Rank 0's view of a step run one process per device: every task measured, every dependency
// kept, every device's peak as planned.
void check_measured(const exec::Replay& r) {
  const auto& g = r.graph;
  ASSERT_EQ(r.step_ns.size(), 1u);
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    ASSERT_GE(r.measured.start[i], 0);
    ASSERT_GE(r.measured.end[i], r.measured.start[i]);
    const bool send = g.tasks[i].kind == schedule::TaskKind::SendActivation || g.tasks[i].kind == schedule::TaskKind::SendGradient;
    for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1]; ++k) {
      const auto succ = g.succ[k];
      // A pipeline message is the dependency itself: its reader (another process) starts once
      // the payload has come, which can be before the sender, descheduled after its MPI send
      // returned, took its end time. So the reader starts no earlier than the send did.
      if (send && g.tasks[succ].device != g.tasks[i].device)
        EXPECT_LE(r.measured.start[i], r.measured.start[succ]) << "measured run broke a dependency";
      else
        EXPECT_LE(r.measured.end[i], r.measured.start[succ]) << "measured run broke a dependency";
    }
  }
  for (std::size_t d = 0; d < g.devices.size(); ++d) EXPECT_EQ(r.measured.peak_bytes[d], r.predicted.peak_bytes[d]);
}

// A plan of two replica groups, one process per device: one replica of one stage on the "fast"
// pool, one of two stages (other layer boundaries, three times the micro-batches) on the "slow"
// one; each layer's gradient reduction and parameter gather join the two groups across
// processes. Rank 0 gets every task measured, every dependency kept.
void run_two_groups(const std::string& replicas, int zero = 1, bool joined = true, const std::string& parallel = "") {
  ASSERT_EQ(world->size(), 3) << "ctest runs this with 3 processes";
  std::string pools;
  for (const char* name : {"fast", "slow"})
    pools += std::string("[[cluster.pool]]\nname = \"") + name + "\"\nnodes = 1\n[cluster.pool.device]\nname = \"core-" +
             name + "\"\npeak = { fp32 = \"20GFLOPS\" }\nmemory = \"1GiB\"\nmemory_bandwidth = \"10GB/s\"\n"
             "node = { devices = 2, fabric = \"shm\", nics = 1, nic = \"shm\" }\n";
  auto s = test::parse(
      "[model]\npreset = \"tiny\"\nlayers = 4\nhidden = 128\nheads = 4\nkv_heads = 4\nffn_hidden = 512\nvocab = 512\n"
      "[training]\nglobal_batch = 4\nseq_len = 64\nprecision = \"fp32\"\n"
      "[[cluster.link]]\nname = \"shm\"\nkind = \"scale-up\"\nbandwidth = \"10GB/s\"\nlatency = \"1us\"\n" + pools +
      "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n"
      "[parallel]\nmicro_batch = 1\nzero = " + std::to_string(zero) + "\n" + parallel + replicas);
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto backend = exec::make_cpu_backend(1);
  const exec::ReplayOptions o = one_step_under_mpirun();
  auto r = exec::replay(*s, *s->plan, *backend, o);
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  if (world->rank() != 0) return;  // the results live on rank 0
  ASSERT_EQ(r->graph.collectives.empty(), !joined);
  check_measured(*r);
}

TEST(Mpi, PlansWithSeveralReplicaGroupsRunOneProcessPerDevice) {
  run_two_groups(
      "[[parallel.replicas]]\ncount = 1\nmicro_batches = 1\nstages = [{pool = \"fast\", layers = 4}]\n"
      "[[parallel.replicas]]\ncount = 1\nmicro_batches = 3\nstages = [{pool = \"slow\", layers = 1}, {pool = \"slow\", layers = 3}]\n");
}

// Groups of different tp (tp 2 on the fast pool's two devices, tp 1 on the slow one): their
// gradients reshard by chunks across processes (two communicators per layer, the tp 1 process in
// both).
TEST(Mpi, GroupsOfDifferentTpRunOneProcessPerDevice) {
  run_two_groups(
      "[[parallel.replicas]]\ncount = 1\nmicro_batches = 1\nstages = [{pool = \"fast\", tp = 2, layers = 4}]\n"
      "[[parallel.replicas]]\ncount = 1\nmicro_batches = 3\nstages = [{pool = \"slow\", layers = 4}]\n");
}

// The same groups under ZeRO 2: hybrid sharding, whose all-reduce of the shards across groups
// pairs each tp 2 process with the tp 1 one, piece by piece, across processes.
TEST(Mpi, HybridShardingRunsOneProcessPerDevice) {
  run_two_groups(
      "[[parallel.replicas]]\ncount = 1\nmicro_batches = 1\nstages = [{pool = \"fast\", tp = 2, layers = 4}]\n"
      "[[parallel.replicas]]\ncount = 1\nmicro_batches = 3\nstages = [{pool = \"slow\", layers = 4}]\n",
      2);
}

// A mixed pipeline whose stages change tp (tp 2 on the fast pool, tp 1 on the slow one) with
// sequence parallelism: each process receives exactly the slices it reads (resharded messages:
// MPI fails a receive whose buffer is shorter than the message).
TEST(Mpi, MixedPipelinesReshardTheirMessagesOneProcessPerDevice) {
  run_two_groups("[[parallel.replicas]]\ncount = 1\nmicro_batches = 4\n"
                 "stages = [{pool = \"fast\", tp = 2, layers = 2}, {pool = \"slow\", layers = 2}]\n",
                 1, false, "sequence_parallel = true\n");
}

// `mpi_tests --failure-demo` under mpirun -np 2: a two-stage pipeline, one process per stage,
// whose second device is lost during the second step. That process must name the device and
// the step and end the run (MPI cannot drop it from the others' collectives); rank 0 has handed
// on the first step. ctest checks the output (mpi.failure).
int failure_demo() {
  auto s = test::parse(
      "[model]\npreset = \"tiny\"\nlayers = 4\nhidden = 128\nheads = 4\nkv_heads = 4\nffn_hidden = 512\nvocab = 512\n"
      "[training]\nglobal_batch = 4\nseq_len = 64\nprecision = \"fp32\"\n"
      "[[cluster.link]]\nname = \"shm\"\nkind = \"scale-up\"\nbandwidth = \"10GB/s\"\nlatency = \"1us\"\n"
      "[[cluster.pool]]\nnodes = 1\n[cluster.pool.device]\nname = \"core\"\npeak = { fp32 = \"20GFLOPS\" }\n"
      "memory = \"1GiB\"\nmemory_bandwidth = \"10GB/s\"\nnode = { devices = 2, fabric = \"shm\", nics = 1, nic = \"shm\" }\n"
      "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n"
      "[parallel]\ntp = 1\npp = 2\ndp = 1\nmicro_batch = 1\n");
  if (!s) return 2;
  // One step's allocations on device 1: its resident state, then per task its block and the kept one.
  const auto g = schedule::build_schedule(*s, *s->plan);
  int per_step = 1;
  for (const auto& t : g.tasks)
    if (t.device == 1 && (t.alloc_bytes > 0 || t.free_bytes > 0)) per_step += 2;
  std::unique_ptr<exec::Backend> backend = exec::make_cpu_backend(1);
  if (world->rank() == 1) backend = std::make_unique<test::FlakyBackend>(std::move(backend), per_step + 3);
  exec::ReplayOptions o{3, 0};
  o.world = world;
  o.on_step = [](const exec::Replay& so_far) { std::printf("kept %zu measured step(s)\n", so_far.step_ns.size()); };
  auto r = exec::replay(*s, *s->plan, *backend, o);
  return r.ok() ? 0 : 1;
}

// A MoE plan with overlap_ep_comm for the three processes: dp 3 · ep 3, two micro-batches each,
// so that each device's first backward has its all-to-alls beside the second forward; ZeRO 2,
// whose reduce-scatter after that backward runs on the device thread, over the DP group's own
// communicator, while the exchange is in flight.
Result<Scenario> overlapped_moe() {
  return test::parse(
      "[model]\npreset = \"tiny\"\nlayers = 2\nhidden = 96\nheads = 4\nkv_heads = 4\nexperts = 3\ntop_k = 2\n"
      "ffn_hidden = 256\nvocab = 512\n"
      "[training]\nglobal_batch = 6\nseq_len = 64\nprecision = \"fp32\"\n"
      "[[cluster.link]]\nname = \"shm\"\nkind = \"scale-up\"\nbandwidth = \"10GB/s\"\nlatency = \"1us\"\n"
      "[[cluster.pool]]\nnodes = 1\n[cluster.pool.device]\nname = \"core\"\npeak = { fp32 = \"20GFLOPS\" }\n"
      "memory = \"1GiB\"\nmemory_bandwidth = \"10GB/s\"\nnode = { devices = 3, fabric = \"shm\", nics = 1, nic = \"shm\" }\n"
      "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n"
      "[parallel]\ntp = 1\npp = 1\ndp = 3\nep = 3\nzero = 2\nmicro_batch = 1\noverlap_ep_comm = true\n");
}

// overlap_ep_comm under mpirun: each process's paired exchange runs on a second thread, on its
// EP group's own communicator, while the device thread makes its other MPI calls (ZeRO 2's
// reduce-scatter of the backward before, on the DP group's communicator); Open MPI gives the
// MPI_THREAD_MULTIPLE that needs. Rank 0 gets every task measured, every dependency kept, the
// overlapped ones among them.
TEST(Mpi, OverlappedAllToAllsRunOneProcessPerDevice) {
  ASSERT_EQ(world->size(), 3) << "ctest runs this with 3 processes";
  if (!world->concurrent()) GTEST_SKIP() << "this MPI library gives no MPI_THREAD_MULTIPLE";
  auto s = overlapped_moe();
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  auto backend = exec::make_cpu_backend(1);
  auto r = exec::replay(*s, *s->plan, *backend, one_step_under_mpirun());
  ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
  if (world->rank() != 0) return;  // the results live on rank 0
  const auto& g = r->graph;
  const auto overlapped = std::count_if(g.tasks.begin(), g.tasks.end(), [](const schedule::Task& t) { return t.overlapped; });
  EXPECT_GT(overlapped, 0);
  // The device thread's MPI calls while an exchange is in flight: a gradient reduce-scatter of
  // the same device that runs after the exchange's backward and before its wait.
  int reduces_beside = 0;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    if (!g.tasks[i].overlapped) continue;
    // The exchange starts when its own unit's last task ends (as the replay launches it).
    schedule::SimTime launched = 0;
    for (std::uint32_t p = 0; p < g.size(); ++p)
      for (std::uint32_t k = g.succ_begin[p]; k < g.succ_begin[p + 1]; ++k)
        if (g.succ[k] == i && g.tasks[p].micro_batch == g.tasks[i].micro_batch &&
            g.tasks[p].kind != schedule::TaskKind::EpAllToAll)
          launched = std::max(launched, r->predicted.end[p]);
    for (std::uint32_t j = 0; j < g.size(); ++j) {
      const auto& u = g.tasks[j];
      if (u.device == g.tasks[i].device && u.kind == schedule::TaskKind::GradReduce &&
          r->predicted.start[j] >= launched && r->predicted.start[j] < r->predicted.start[i])
        ++reduces_beside;
    }
  }
  EXPECT_GT(reduces_beside, 0);
  check_measured(*r);
}

// The world as a library without MPI_THREAD_MULTIPLE would give it: every call passed on, but
// no two threads may call at once.
class SerializedWorld final : public exec::ProcessGroup {
 public:
  explicit SerializedWorld(exec::ProcessGroup& w) : w_(w) {}
  int rank() const override { return w_.rank(); }
  int size() const override { return w_.size(); }
  void broadcast(void* data, std::size_t bytes, int root) override { w_.broadcast(data, bytes, root); }
  std::vector<std::vector<std::int64_t>> gather(const std::vector<std::int64_t>& mine, int root) override {
    return w_.gather(mine, root);
  }
  std::unique_ptr<exec::ProcessGroup> split(bool member, int key) override { return w_.split(member, key); }
  std::unique_ptr<exec::Communicator> communicator(exec::Device* dev) override { return w_.communicator(dev); }
  void barrier() override { w_.barrier(); }
  [[noreturn]] void abort(int code) override {
    w_.abort(code);
    std::_Exit(code);  // (abort() does not return; the compiler cannot see it through the call)
  }

 private:
  exec::ProcessGroup& w_;
};

// Where the library gives less, the plan is refused on every process before anything runs,
// naming the key.
TEST(Mpi, OverlappedAllToAllsAreRefusedWithoutConcurrentMpiCalls) {
  auto s = overlapped_moe();
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  SerializedWorld serialized(*world);
  auto backend = exec::make_cpu_backend(1);
  exec::ReplayOptions o = one_step_under_mpirun();
  o.world = &serialized;
  auto r = exec::replay(*s, *s->plan, *backend, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].key, "parallel.overlap_ep_comm") << test::all_errors(r.errors());
  EXPECT_NE(r.errors()[0].message.find("MPI_THREAD_MULTIPLE"), std::string::npos) << test::all_errors(r.errors());
}

}  // namespace
}  // namespace hetsim

int main(int argc, char** argv) {
  const bool demo = argc > 1 && std::string(argv[1]) == "--failure-demo";
  ::testing::InitGoogleTest(&argc, argv);
  if (!hetsim::exec::launched_by_mpi()) {
    std::fprintf(stderr, "run under mpirun (ctest does)\n");
    return 1;
  }
  auto w = hetsim::exec::mpi_world(argc, argv);
  if (!w) return 1;
  hetsim::world = w->get();
  if (demo) return hetsim::failure_demo();
  const int rc = RUN_ALL_TESTS();
  // Every process must pass: the exit codes are combined by mpirun.
  return rc;
}
