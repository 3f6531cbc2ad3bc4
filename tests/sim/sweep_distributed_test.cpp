// Distributed sweeps (sim/sweep/distributed.hpp) without mpirun: rank 0's coordinator and the
// workers run on threads of this process, over an in-memory stand-in for the MPI module. Rank 0
// delivers the other ranks' rows as their bytes, the very bytes a local run delivers; it reads a
// row's JSON back only when asked for the Row; rows that do not unpack are failed rows, not a hang.

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sim/io/sweep_reader.hpp"
#include "sim/sweep/distributed.hpp"
#include "sim/sweep/rows.hpp"
#include "sim/sweep/sweep.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

// The ranks' messages: one queue per receiving rank, in the order sent (MPI's non-overtaking
// rule for one sender). Each thread says which rank it is.
struct Message {
  int from = 0, tag = 0;
  std::string data;
};
std::mutex g_mu;
std::condition_variable g_cv;
std::map<int, std::deque<Message>> g_queues;
bool g_garble_rows = false;  // rank 1 sends rows cut in half
thread_local int t_rank = 0;

bool fake_init(int* rank, int* size) {
  *rank = t_rank;
  *size = 0;
  return true;
}
void fake_finalize() {}
void fake_send(int dest, int tag, const std::string& data) {
  std::lock_guard lock(g_mu);
  const bool garble = g_garble_rows && t_rank == 1 && tag == 2;
  g_queues[dest].push_back({t_rank, tag, garble ? data.substr(0, data.size() / 2) : data});
  g_cv.notify_all();
}
void fake_recv(int src, int* from, int* tag, std::string* data) {
  std::unique_lock lock(g_mu);
  auto& q = g_queues[t_rank];
  while (true) {
    for (auto it = q.begin(); it != q.end(); ++it)
      if (src < 0 || it->from == src) {
        *from = it->from;
        *tag = it->tag;
        *data = std::move(it->data);
        q.erase(it);
        return;
      }
    g_cv.wait(lock);
  }
}
bool fake_probe() {
  std::lock_guard lock(g_mu);
  return !g_queues[t_rank].empty();
}
void* fake_start_send(int dest, int tag, const std::string* data) {
  fake_send(dest, tag, *data);
  return &g_mu;  // any handle: the message is queued already
}
void fake_finish_send(void*) {}
const sweep::MpiModule kFake{sweep::kMpiModuleAbi, &fake_init, &fake_finalize, &fake_send,
                             &fake_recv,           &fake_probe, &fake_start_send, &fake_finish_send};

io::SweepDocument sweep_with_axes(const std::string& axes) {
  auto d = io::parse_sweep(test::minimal("tp = 2\npp = 2\ndp = 4\nmicro_batch = 1\n") + "[sweep]\n" + axes, "sw.toml",
                           test::catalog());
  if (!d) ADD_FAILURE() << test::all_errors(d.errors());
  return std::move(d).value();
}

struct Delivered {
  std::vector<sweep::Finished> rows;            // in the order delivered
  std::map<std::size_t, std::string> waiting;   // on_waiting's JSON, by point
  std::set<std::size_t> ran_by_workers;
};

// Runs `doc` with rank 0 (one thread of its own) and `workers` worker ranks on threads.
Delivered distributed(const io::SweepDocument& doc, const sweep::Encoding& e, int workers) {
  {
    std::lock_guard lock(g_mu);
    g_queues.clear();
  }
  Delivered out;
  std::mutex mu;
  std::vector<std::thread> ranks;
  for (int r = 1; r <= workers; ++r)
    ranks.emplace_back([&, r] {
      t_rank = r;
      sweep::run_worker(doc, kFake, [&](std::size_t i) {
        {
          std::lock_guard lock(mu);
          out.ran_by_workers.insert(i);
        }
        return sweep::run_point(doc, i);
      });
    });
  sweep::RunOptions o;
  o.encoding = e;
  // Rank 0's own thread is slow, so that the workers run most points and their rows wait.
  o.runner = [&](std::size_t i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return sweep::run_point(doc, i);
  };
  o.on_row = [&](const sweep::Finished& f) { out.rows.push_back(f); };
  o.on_waiting = [&](const sweep::Finished& f) { out.waiting.emplace(f.point, f.json); };
  t_rank = 0;
  EXPECT_EQ(sweep::run_coordinator(doc, o, kFake, workers + 1), doc.spec().points);
  for (auto& t : ranks) t.join();
  return out;
}

std::vector<sweep::Finished> local(const io::SweepDocument& doc, const sweep::Encoding& e) {
  std::vector<sweep::Finished> rows;
  sweep::RunOptions o;
  o.encoding = e;
  o.on_row = [&](const sweep::Finished& f) { rows.push_back(f); };
  EXPECT_EQ(sweep::run(doc, o), doc.spec().points);
  return rows;
}

TEST(DistributedSweep, RankZeroDeliversTheWorkersBytesAsALocalRunDoes) {
  // 40 points, one of which does not fit (llama3-70b on 4 nodes' tp 2 · pp 2).
  const auto d = sweep_with_axes("\"training.global_batch\" = { from = 16, to = 320, step = 16 }\n"
                          "\"model.preset\" = [\"tiny\", \"llama3-70b\"]\n");
  const auto v = sweep::validate(d, 1);
  ASSERT_EQ(v.invalid, 0u);
  for (auto f : {sweep::Format::Csv, sweep::Format::Jsonl}) {
    const sweep::Encoding e{{&d.spec(), v.pools, v.variability}, f, true, true, false};
    const auto want = local(d, e);
    const auto got = distributed(d, e, 2);
    ASSERT_EQ(got.rows.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got.rows[i].point, i);
      EXPECT_EQ(got.rows[i].line, want[i].line) << i;
      EXPECT_EQ(got.rows[i].json, want[i].json) << i;
      EXPECT_EQ(got.rows[i].status(), want[i].status()) << i;
      EXPECT_FALSE(got.rows[i].row.has_value());  // not asked for: never read back
    }
    EXPECT_FALSE(got.ran_by_workers.empty());
    // The rows that waited for an earlier one were handed over with their JSON (FILE.pending).
    EXPECT_FALSE(got.waiting.empty());
    for (const auto& [i, json] : got.waiting) EXPECT_EQ(json, want[i].json) << i;
  }
}

TEST(DistributedSweep, TheRowItselfIsReadBackOnlyWhenAskedFor) {
  const auto d = sweep_with_axes("\"training.global_batch\" = { from = 16, to = 160, step = 16 }\n");
  const auto v = sweep::validate(d, 1);
  // --json without --out: no line, no pending JSON; the Row, equal to a local run's.
  const sweep::Encoding e{{&d.spec(), v.pools, v.variability}, sweep::Format::Csv, false, false, true};
  const auto want = local(d, e);
  const auto got = distributed(d, e, 1);
  ASSERT_EQ(got.rows.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(got.rows[i].line.empty());
    EXPECT_TRUE(got.rows[i].json.empty());
    ASSERT_TRUE(got.rows[i].row.has_value());
    EXPECT_EQ(got.rows[i].row->values, want[i].row->values);
    EXPECT_EQ(sweep::row_json(e.layout, *got.rows[i].row).dump(), sweep::row_json(e.layout, *want[i].row).dump()) << i;
  }
  EXPECT_FALSE(got.ran_by_workers.empty());
}

TEST(DistributedSweep, RowsThatDoNotUnpackAreFailedRowsNotAHang) {
  const auto d = sweep_with_axes("\"training.global_batch\" = { from = 16, to = 320, step = 16 }\n");
  const auto v = sweep::validate(d, 1);
  const sweep::Encoding e{{&d.spec(), v.pools, v.variability}, sweep::Format::Csv, true, false, false};
  g_garble_rows = true;
  const auto got = distributed(d, e, 1);
  g_garble_rows = false;
  ASSERT_EQ(got.rows.size(), d.spec().points);
  std::size_t internal = 0;
  for (const auto& f : got.rows) {
    if (f.ok) continue;
    EXPECT_EQ(f.kind, ErrorKind::Internal);
    EXPECT_NE(f.line.find("rank 1 sent a row that does not unpack"), std::string::npos) << f.line;
    ++internal;
  }
  EXPECT_GT(internal, 0u);
}

}  // namespace
}  // namespace hetsim
