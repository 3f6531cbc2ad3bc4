// overlap_ep_comm in the replay (issue 15): the expert all-to-alls the schedule overlaps (a first
// stage's paired backward's, beside the next forward's compute) run on a communication thread,
// the task is the exposed wait for them; the replay moves what the plain replay moves, call for
// call; what it still cannot run is refused naming the key.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "exec/compare/compare.hpp"
#include "exec/cpu/cpu_backend.hpp"
#include "exec/replay/replay.hpp"
#include "sim/io/trace_json.hpp"
#include "sim/schedule/schedule.hpp"
#include "tests/support/flaky_backend.hpp"
#include "tests/support/replay_checks.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

using schedule::TaskKind;

// Four cpu devices, a tiny MoE model (4 experts, top-2), fp32; `parallel` completes [parallel].
// Eight sequences over dp 2 at micro_batch 1: four micro-batches per replica, so that both
// stages of pp 2 have units the cost model pairs.
std::string overlap_moe_scenario(const std::string& parallel) {
  return "[model]\npreset = \"tiny\"\nlayers = 4\nhidden = 128\nheads = 4\nkv_heads = 4\nexperts = 4\ntop_k = 2\n"
         "ffn_hidden = 512\nvocab = 512\n"
         "[training]\nglobal_batch = 8\nseq_len = 64\nprecision = \"fp32\"\n"
         "[[cluster.link]]\nname = \"shm\"\nkind = \"scale-up\"\nbandwidth = \"10GB/s\"\nlatency = \"1us\"\n"
         "[[cluster.pool]]\nnodes = 1\n"
         "[cluster.pool.device]\nname = \"core\"\npeak = { fp32 = \"20GFLOPS\" }\nmemory = \"1GiB\"\n"
         "memory_bandwidth = \"10GB/s\"\nnode = { devices = 4, fabric = \"shm\", nics = 1, nic = \"shm\" }\n"
         "[memory]\nruntime_reserve = \"0GiB\"\ncomm_buffers = \"0GiB\"\nfragmentation = 0.0\n"
         "[parallel]\ntp = 1\npp = 2\ndp = 2\nep = 2\nmicro_batch = 1\n" +
         parallel;
}

// A cpu backend that watches its threads: the threads that ran kernels on its devices, and per
// communicator (numbered as the backend made them) every call in order — (kind, values, the
// calling thread) — so a test can tell the device threads' calls from a communication thread's.
class WatchingBackend final : public exec::Backend {
 public:
  struct Call {
    char kind;  // 'r' all-reduce, 'g' all-gather, 's' reduce-scatter, 'a' all-to-all
    std::size_t count;
    std::thread::id thread;
  };
  struct Log {
    std::mutex mutex;
    std::set<std::thread::id> kernel_threads;
    std::map<int, std::vector<Call>> calls;  // per communicator
    int made = 0;
  };

  explicit WatchingBackend(int devices, bool host_memory = true)
      : inner_(exec::make_cpu_backend(devices)), host_memory_(host_memory) {}
  std::string name() const override { return "watching"; }
  int device_count() const override { return inner_->device_count(); }
  std::unique_ptr<exec::Device> open(int index) override {
    struct Watched final : exec::Device {
      std::unique_ptr<exec::Device> d;
      std::shared_ptr<Log> log;
      bool host = true;
      void ran() {
        const std::lock_guard lock(log->mutex);
        log->kernel_threads.insert(std::this_thread::get_id());
      }
      std::string name() const override { return d->name(); }
      Result<void*> allocate(std::size_t bytes) override { return d->allocate(bytes); }
      void release(void* p, std::size_t b) override { d->release(p, b); }
      void* workspace(int slot, std::size_t n) override { return d->workspace(slot, n); }
      void gemm(int m, int n, int k, exec::Format f, const void* a, const void* b, void* c) override {
        ran();
        d->gemm(m, n, k, f, a, b, c);
      }
      void attention(const exec::AttentionShape& s, exec::Format f, const void* qkv, void* o, void* g, bool bwd) override {
        ran();
        d->attention(s, f, qkv, o, g, bwd);
      }
      void norm(int r, int c, exec::Format f, const void* x, void* y, bool bwd) override { d->norm(r, c, f, x, y, bwd); }
      void elementwise(std::size_t n, exec::Format f, const void* s, void* t) override { d->elementwise(n, f, s, t); }
      void elementwise_unvectorized(std::size_t n, exec::Format f, const void* s, void* t) override {
        d->elementwise_unvectorized(n, f, s, t);
      }
      void adam(std::size_t n, float* state) override { d->adam(n, state); }
      void copy(const void* s, void* t, std::size_t n) override { d->copy(s, t, n); }
      void to_host(const void* s, void* h, std::size_t n) override { d->to_host(s, h, n); }
      void from_host(const void* h, void* t, std::size_t n) override { d->from_host(h, t, n); }
      bool host_memory() const override { return host; }
      int record() override { return d->record(); }
      std::vector<std::int64_t> resolve() override { return d->resolve(); }
      std::size_t live_bytes() const override { return d->live_bytes(); }
      std::size_t peak_bytes() const override { return d->peak_bytes(); }
      std::size_t capacity() const override { return d->capacity(); }
    };
    auto w = std::make_unique<Watched>();
    w->d = inner_->open(index);
    w->log = log_;
    w->host = host_memory_;
    return w;
  }
  Result<exec::Communicators> communicators(const std::vector<exec::Device*>& members) override {
    struct Logged final : test::ForwardingCommunicator {
      std::shared_ptr<Log> log;
      int id = 0;
      void note(char kind, std::size_t n) {
        const std::lock_guard lock(log->mutex);
        log->calls[id].push_back({kind, n, std::this_thread::get_id()});
      }
      Result<std::int64_t> all_reduce(float* b, std::size_t n) override {
        note('r', n);
        return c->all_reduce(b, n);
      }
      Result<std::int64_t> all_gather(const float* in, float* out, std::size_t n) override {
        note('g', n);
        return c->all_gather(in, out, n);
      }
      Result<std::int64_t> reduce_scatter(const float* in, float* out, std::size_t n) override {
        note('s', n);
        return c->reduce_scatter(in, out, n);
      }
      Result<std::int64_t> all_to_all(const float* in, float* out, std::size_t n) override {
        note('a', n);
        return c->all_to_all(in, out, n);
      }
    };
    // The members are this backend's devices; the shared-memory collectives work on them as on
    // the cpu backend's (host memory, in place).
    auto inner = exec::Backend::communicators(members);
    if (!inner) return inner;
    exec::Communicators out;
    for (auto& c : *inner) {
      auto w = std::make_unique<Logged>();
      w->c = std::move(c);
      w->log = log_;
      {
        const std::lock_guard lock(log_->mutex);
        w->id = log_->made++;
      }
      out.push_back(std::move(w));
    }
    return out;
  }

  /// The all-to-alls called from a thread that ran no kernel (a communication thread).
  [[nodiscard]] int exchanges_off_the_device_threads() const {
    const std::lock_guard lock(log_->mutex);
    int n = 0;
    for (const auto& [id, calls] : log_->calls)
      for (const Call& c : calls) n += c.kind == 'a' && log_->kernel_threads.count(c.thread) == 0 ? 1 : 0;
    return n;
  }
  /// Per communicator, its calls in order: (kind, values).
  [[nodiscard]] std::map<int, std::vector<std::pair<char, std::size_t>>> calls() const {
    const std::lock_guard lock(log_->mutex);
    std::map<int, std::vector<std::pair<char, std::size_t>>> out;
    for (const auto& [id, calls] : log_->calls)
      for (const Call& c : calls) out[id].emplace_back(c.kind, c.count);
    return out;
  }

 private:
  std::unique_ptr<exec::Backend> inner_;
  bool host_memory_;
  std::shared_ptr<Log> log_ = std::make_shared<Log>();
};

// The all-to-alls an EP task makes per member: dispatch and combine of each of its MoE layers
// (no recompute here, every layer MoE).
int exchanges_per_member(const schedule::Task& t) { return 2 * t.layers; }

// With overlap_ep_comm the paired backwards' exchanges run off the device threads (the replay's
// communication thread), the others on them; the plain plan runs every exchange on the device
// threads. Each EP task is timed as an all-to-all (an overlapped one: its exposed wait), every
// dependency holds, and compare reports the ep class and kind.
TEST(EpOverlapReplay, PairedExchangesRunOnACommunicationThreadBesideTheNextUnit) {
  struct Case {
    std::string layout;
    bool one_stage;
    int ep_tasks, overlapped;
  };
  // pp 2, four micro-batches per replica: the first stage's backwards the cost model pairs with
  // the next forward (two in flight) are 0 and 1. pp 1 · dp 4, 16 sequences: backwards 0-2 of 4.
  // Interleaved (pp 2, two chunks of a layer each, eight micro-batches): the first stage runs
  // F0-F3, then F4+i, B i for i = 0-11, then B12-B15; backward unit i is of chunk 1 - (i mod 4)/2,
  // so chunk 0's backwards followed by a forward are 2, 3, 6, 7 and 10.
  for (const Case& c : {Case{"", false, 2 * 2 * 4, 2}, Case{"pp = 1\ndp = 4\n", true, 2 * 4, 3},
                        Case{"schedule = \"interleaved\"\nvirtual_stages = 2\n", false, 2 * 2 * 2 * 8, 5}}) {
    SCOPED_TRACE(c.layout);
    auto text = overlap_moe_scenario(c.layout + "overlap_ep_comm = true\n");
    if (!c.layout.empty()) text.replace(text.find("global_batch = 8"), 16, "global_batch = 16");
    if (c.one_stage) text.replace(text.find("pp = 2\ndp = 2\n"), 14, "");
    auto s = test::parse(text);
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    WatchingBackend backend(4);
    auto r = exec::replay(*s, *s->plan, backend, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    test::check_order_and_dependencies(*r);
    int ep_tasks = 0, overlapped = 0, off_thread = 0;
    for (std::uint32_t i = 0; i < r->graph.size(); ++i) {
      const auto& t = r->graph.tasks[i];
      if (t.kind != TaskKind::EpAllToAll) continue;
      ++ep_tasks;
      if (t.overlapped) {
        EXPECT_EQ(t.chunk, 0) << schedule::task_name(t);  // the model's first chunk: it sends nothing back
      }
      const bool timed = std::any_of(r->measured_parts[i].begin(), r->measured_parts[i].end(),
                                     [](const auto& part) { return part.first == "all-to-all"; });
      EXPECT_TRUE(timed) << schedule::task_name(t);
      if (!t.overlapped) continue;
      ++overlapped;
      off_thread += exchanges_per_member(t) * r->graph.devices[t.device].count;
    }
    EXPECT_EQ(ep_tasks, c.ep_tasks);  // stages × (forward, backward) × chunks × micro-batches
    EXPECT_EQ(overlapped, c.overlapped);
    EXPECT_EQ(backend.exchanges_off_the_device_threads(), off_thread);
    if (!c.layout.empty()) continue;

    WatchingBackend plain_backend(4);
    auto plain = test::parse(overlap_moe_scenario(""));
    ASSERT_TRUE(plain.ok()) << test::all_errors(plain.errors());
    auto p = exec::replay(*plain, *plain->plan, plain_backend, {1, 0});
    ASSERT_TRUE(p.ok()) << test::all_errors(p.errors());
    EXPECT_EQ(plain_backend.exchanges_off_the_device_threads(), 0);

    const auto pf = io::make_trace_file(r->graph, r->predicted, "p", r->predicted_parts);
    const auto mf = io::make_trace_file(r->graph, r->measured, "m", r->measured_parts);
    auto cmp = exec::compare(pf, mf);
    ASSERT_TRUE(cmp.ok()) << test::all_errors(cmp.errors());
    std::set<std::string> classes, kinds;
    for (const auto& k : cmp->classes) classes.insert(k.kind);
    for (const auto& k : cmp->kinds) kinds.insert(k.kind);
    EXPECT_TRUE(classes.count("all-to-all"));
    EXPECT_TRUE(kinds.count("ep all-to-all"));
  }
}

// The overlap changes when the exchanges run, not what moves: every communicator of the run (the
// TP, EP and data-parallel groups, the experts' gradient sync) makes the plain plan's calls, of
// the same sizes, in the same order, over two steps (the replay carries no parameter values, so
// this is what "the same step" means for it: the same collectives, call for call).
TEST(EpOverlapReplay, MovesWhatThePlainPlanMovesCallForCall) {
  for (const char* zero : {"zero = 0\n", "zero = 1\n", "zero = 1\nschedule = \"interleaved\"\nvirtual_stages = 2\n"}) {
    SCOPED_TRACE(zero);
    auto run = [&](const std::string& extra) {
      auto s = test::parse(overlap_moe_scenario(zero + extra));
      EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
      WatchingBackend backend(4);
      if (!s.ok()) return backend.calls();
      auto r = exec::replay(*s, *s->plan, backend, {1, 1});
      EXPECT_TRUE(r.ok()) << test::all_errors(r.errors());
      return backend.calls();
    };
    const auto overlapped = run("overlap_ep_comm = true\n"), plain = run("");
    ASSERT_FALSE(plain.empty());
    EXPECT_EQ(overlapped, plain);
    bool exchanged = false;
    for (const auto& [id, calls] : plain)
      exchanged = exchanged || std::any_of(calls.begin(), calls.end(), [](const auto& c) { return c.first == 'a'; });
    EXPECT_TRUE(exchanged);
  }
}

// What the replay still cannot run under overlap_ep_comm is refused before anything runs, naming
// the key: devices that are not host memory (the overlapped exchange runs on a host thread over
// host buffers). GPipe overlaps nothing and is priced so: it runs.
TEST(EpOverlapReplay, RefusesWhatItStillCannotRunNamingTheKey) {
  {
    auto s = test::parse(overlap_moe_scenario("overlap_ep_comm = true\n"));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    WatchingBackend gpu_like(4, false);
    auto r = exec::replay(*s, *s->plan, gpu_like, {1, 0});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.errors()[0].key, "parallel.overlap_ep_comm") << test::all_errors(r.errors());
    EXPECT_NE(r.errors()[0].message.find("host memory"), std::string::npos) << test::all_errors(r.errors());
  }
  {
    auto s = test::parse(overlap_moe_scenario("overlap_ep_comm = true\nschedule = \"gpipe\"\n"));
    ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
    WatchingBackend backend(4);
    auto r = exec::replay(*s, *s->plan, backend, {1, 0});
    ASSERT_TRUE(r.ok()) << test::all_errors(r.errors());
    EXPECT_EQ(backend.exchanges_off_the_device_threads(), 0);
  }
}

// A device lost at any point of an overlapped step (its allocations fail after the first
// `budget`, at its resident state, in a task, while an exchange of its runs on the communication
// thread) fails the replay naming it, and nothing hangs: the exchange in flight ends (its peers
// finish it or leave the group) before the device leaves its expert groups.
TEST(EpOverlapReplay, ADeviceLostMidStepFailsTheReplayWithoutHanging) {
  auto s = test::parse(overlap_moe_scenario("overlap_ep_comm = true\n"));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  for (const int only : {0, 3})
    for (int budget = 1; budget <= 13; budget += 2) {
      SCOPED_TRACE("device " + std::to_string(only) + ", budget " + std::to_string(budget));
      test::FlakyBackend flaky(exec::make_cpu_backend(4), budget, only);
      auto r = exec::replay(*s, *s->plan, flaky, {1, 0});
      ASSERT_FALSE(r.ok());
      EXPECT_NE(test::all_errors(r.errors()).find("device lost"), std::string::npos) << test::all_errors(r.errors());
    }
}

}  // namespace
}  // namespace hetsim
