// Distributed sweeps (sim/sweep/distributed.hpp) without mpirun: rank 0's coordinator and the
// workers run on threads of this process, over an in-memory stand-in for the MPI module. Rank 0
// delivers the other ranks' rows as their bytes, the very bytes a local run delivers; it reads a
// row's JSON back only when asked for the Row; rows that do not unpack are failed rows, not a hang;
// a rank that stops mid-batch has sent every row it finished, and keeps each in its journal before
// it sends it; the ranks share the validation, and
// rank 0 reports what a local run does.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
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
std::map<int, std::string> g_requests;  // each rank's request for points (tag 1), as sent
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
  if (tag == 1) g_requests[t_rank] = data;
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
bool fake_test_send(void*) { return true; }
const sweep::MpiModule kFake{sweep::kMpiModuleAbi, &fake_init,       &fake_finalize,    &fake_send,     &fake_recv,
                             &fake_probe,          &fake_start_send, &fake_finish_send, &fake_test_send};

void clear_queues() {
  std::lock_guard lock(g_mu);
  g_queues.clear();
  g_requests.clear();
}

io::SweepDocument sweep_with_axes(const std::string& axes) {
  auto d = io::parse_sweep(test::minimal("tp = 2\npp = 2\ndp = 4\nmicro_batch = 1\n") + "[sweep]\n" + axes, "sw.toml",
                           test::catalog());
  if (!d) ADD_FAILURE() << test::all_errors(d.errors());
  return std::move(d).value();
}

// Rank 0 as the CLI runs it: the points validated with the other ranks, then run.
std::size_t coordinate(const io::SweepDocument& doc, const sweep::RunOptions& o, int size) {
  std::vector<int> ready;
  EXPECT_EQ(sweep::validate_across(doc, 1, kFake, size, ready).invalid, 0u);
  return sweep::run_coordinator(doc, o, kFake, ready);
}

struct Delivered {
  std::vector<sweep::Finished> rows;            // in the order delivered
  std::map<std::size_t, std::string> waiting;   // on_waiting's JSON, by point
  std::set<std::size_t> ran_by_workers;
};

// Runs `doc` with rank 0 (one thread of its own) and `workers` worker ranks on threads.
Delivered distributed(const io::SweepDocument& doc, const sweep::Encoding& e, int workers) {
  clear_queues();
  Delivered out;
  std::mutex mu;
  std::vector<std::thread> ranks;
  for (int r = 1; r <= workers; ++r)
    ranks.emplace_back([&, r] {
      t_rank = r;
      sweep::run_worker(doc, kFake, r, workers + 1, [&](std::size_t i) {
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
  EXPECT_EQ(coordinate(doc, o, workers + 1), doc.spec().points);
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

// Rows a worker kept in its journal (sweep::Journal), by rank; and rows sent before they were kept.
std::map<int, std::map<std::size_t, std::string>> g_kept;
std::vector<std::size_t> g_sent_unkept;
void* send_checking_kept(int dest, int tag, const std::string* data) {
  if (tag == 2) {  // a row: "POINT OK KIND …"
    std::lock_guard lock(g_mu);
    const std::size_t point = std::strtoull(data->c_str(), nullptr, 10);
    const auto it = g_kept.find(t_rank);
    if (it == g_kept.end() || it->second.count(point) == 0) g_sent_unkept.push_back(point);
  }
  return fake_start_send(dest, tag, data);
}

// Rank 0 on this thread with two worker ranks already started (`ranks`, joined here): its own
// points slow (2 ms each) so that the workers run most; the rows it delivers, in order.
std::vector<sweep::Finished> coordinate_slowly(const io::SweepDocument& d, const sweep::Encoding& e,
                                               const std::string& journal, std::vector<std::thread>& ranks) {
  std::vector<sweep::Finished> rows;
  sweep::RunOptions o;
  o.encoding = e;
  o.journal = journal;
  o.runner = [&](std::size_t i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return sweep::run_point(d, i);
  };
  o.on_row = [&](const sweep::Finished& f) { rows.push_back(f); };
  t_rank = 0;
  EXPECT_EQ(coordinate(d, o, 3), d.spec().points);
  for (auto& t : ranks) t.join();
  return rows;
}

TEST(DistributedSweep, EachRowIsKeptInTheRanksJournalBeforeItIsSent) {
  // Rank 0 names the journal (RunOptions::journal, FILE.pending with --out); each worker opens it
  // once and keeps every row, with its JSON even when rank 0 does not ask for the JSON, before the
  // row is sent; without a name no worker keeps anything.
  const auto d = sweep_with_axes("\"training.global_batch\" = { from = 16, to = 320, step = 16 }\n");
  const auto v = sweep::validate(d, 1);
  const sweep::Encoding e{{&d.spec(), v.pools, v.variability}, sweep::Format::Csv, true, false, false};
  sweep::Encoding with_json = e;
  with_json.json = true;
  const auto want = local(d, with_json);
  for (const std::string name : {"results.csv.pending", ""}) {
    clear_queues();
    g_kept.clear();
    g_sent_unkept.clear();
    std::map<int, std::vector<std::string>> opened;
    std::vector<std::thread> ranks;
    for (int r = 1; r <= 2; ++r)
      ranks.emplace_back([&, r] {
        t_rank = r;
        sweep::MpiModule m = kFake;
        m.start_send = &send_checking_kept;
        sweep::Journal j;
        j.open = [&](const std::string& base) {
          std::lock_guard lock(g_mu);
          opened[r].push_back(base);
          return true;
        };
        j.keep = [&](const sweep::Finished& f) {
          std::lock_guard lock(g_mu);
          g_kept[r][f.point] = f.json;
          return true;
        };
        sweep::run_worker(d, m, r, 3, {}, j);
      });
    const auto rows = coordinate_slowly(d, e, name, ranks);
    ASSERT_EQ(rows.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(rows[i].line, want[i].line) << i;
      EXPECT_TRUE(rows[i].json.empty()) << i;  // not asked for: not sent
    }
    if (name.empty()) {
      EXPECT_TRUE(opened.empty());
      EXPECT_TRUE(g_kept.empty());
      continue;
    }
    std::size_t kept = 0;
    for (int r = 1; r <= 2; ++r) {
      if (g_kept[r].empty()) continue;
      EXPECT_EQ(opened[r], std::vector<std::string>{name}) << r;
      for (const auto& [i, json] : g_kept[r]) EXPECT_EQ(json, want[i].json) << i;
      kept += g_kept[r].size();
    }
    EXPECT_GT(kept, 0u);
    EXPECT_TRUE(g_sent_unkept.empty()) << g_sent_unkept.size() << " rows sent before they were kept";
  }
  // A rank that cannot open its journal (its callee says why) keeps nothing and still sends
  // every row: the sweep completes with the local run's lines.
  clear_queues();
  g_kept.clear();
  std::atomic<int> kept_calls{0};
  std::vector<std::thread> ranks;
  for (int r = 1; r <= 2; ++r)
    ranks.emplace_back([&, r] {
      t_rank = r;
      sweep::Journal j;
      j.open = [](const std::string&) { return false; };
      j.keep = [&](const sweep::Finished&) {
        ++kept_calls;
        return true;
      };
      sweep::run_worker(d, kFake, r, 3, {}, j);
    });
  const auto rows = coordinate_slowly(d, e, "results.csv.pending", ranks);
  EXPECT_EQ(kept_calls.load(), 0);
  ASSERT_EQ(rows.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(rows[i].line, want[i].line) << i;
}

// The points of a batch as rank 0 sends them ("3-9 12").
std::vector<std::size_t> batch_points(const std::string& text) {
  std::vector<std::size_t> points;
  for (const char* p = text.c_str(); *p != '\0';) {
    char* end = nullptr;
    const std::size_t first = std::strtoull(p, &end, 10);
    if (end == p) break;
    std::size_t last = first;
    if (*end == '-') last = std::strtoull(end + 1, &end, 10);
    for (std::size_t i = first; i <= last; ++i) points.push_back(i);
    p = end;
  }
  return points;
}

// The points of the last batch this thread's rank took from rank 0 (its kPoint message).
thread_local std::vector<std::size_t> t_batch;
void recv_noting_batch(int src, int* from, int* tag, std::string* data) {
  fake_recv(src, from, tag, data);
  if (*tag == 3 && *data != "stop") t_batch = batch_points(*data);
}

TEST(DistributedSweep, ARankStoppedMidBatchHasSentEveryRowItFinished) {
  // Rank 1 stops (as if killed) at the last point of its first batch of two or more points: the
  // rows of the points it finished in that batch are at rank 0 already, written or kept as
  // waiting (FILE.pending), while rank 1 is stopped. Then it goes on, and the sweep completes.
  const auto d = sweep_with_axes("\"training.global_batch\" = { from = 16, to = 3200, step = 16 }\n");
  const auto v = sweep::validate(d, 1);
  const sweep::Encoding e{{&d.spec(), v.pools, v.variability}, sweep::Format::Csv, true, true, false};
  clear_queues();
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::size_t> at_rank0;      // rows rank 0 delivered or handed over as waiting
  std::vector<std::size_t> finished;  // rank 1's finished points of the batch it stopped in
  bool stopped = false, resume = false;
  std::vector<sweep::Finished> rows;

  std::thread rank1([&] {
    t_rank = 1;
    sweep::MpiModule m = kFake;
    m.recv = &recv_noting_batch;
    sweep::run_worker(d, m, 1, 2, [&](std::size_t i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::unique_lock lock(mu);
      if (!stopped && t_batch.size() >= 2 && i == t_batch.back()) {
        finished.assign(t_batch.begin(), t_batch.end() - 1);
        stopped = true;
        cv.notify_all();
        cv.wait(lock, [&] { return resume; });
      }
      return sweep::run_point(d, i);
    });
  });
  std::thread rank0([&] {
    t_rank = 0;
    sweep::RunOptions o;
    o.encoding = e;
    o.runner = [&](std::size_t i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return sweep::run_point(d, i);
    };
    o.on_row = [&](const sweep::Finished& f) {
      std::lock_guard lock(mu);
      rows.push_back(f);
      at_rank0.insert(f.point);
      cv.notify_all();
    };
    o.on_waiting = [&](const sweep::Finished& f) {
      std::lock_guard lock(mu);
      at_rank0.insert(f.point);
      cv.notify_all();
    };
    EXPECT_EQ(coordinate(d, o, 2), d.spec().points);
  });

  {
    std::unique_lock lock(mu);
    // Rank 1's third batch holds about 20 ms of work (a point takes a millisecond or more; its
    // first two batches are a point each).
    const bool reached = cv.wait_for(lock, std::chrono::seconds(60), [&] { return stopped; });
    EXPECT_TRUE(reached) << "rank 1 never ran a batch of two points";
    if (reached) {
      // Rank 0 looks at its messages every millisecond; 5 s is ample.
      const bool all = cv.wait_for(lock, std::chrono::seconds(5), [&] {
        return std::all_of(finished.begin(), finished.end(), [&](std::size_t i) { return at_rank0.count(i) > 0; });
      });
      EXPECT_TRUE(all) << "the rows of the " << finished.size() << " points rank 1 finished in its batch (from "
                       << finished.front() << ") did not all reach rank 0 while it was stopped";
    }
    resume = true;
    cv.notify_all();
  }
  rank1.join();
  rank0.join();
  ASSERT_EQ(rows.size(), d.spec().points);
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].point, i);
}

// Points that do not split over dp = 4 (global_batch 18, 34) and an unknown model, in the shares
// of three ranks.
const char* const kInvalidAxes =
    "\"training.global_batch\" = [16, 18, 32, 34, 48]\n\"model.preset\" = [\"tiny\", \"tinyy\"]\n";

TEST(DistributedSweep, EachRankChecksItsShareAndRankZeroReportsWhatALocalRunDoes) {
  const auto d = sweep_with_axes(kInvalidAxes);
  const auto want = sweep::validate(d, 1);
  ASSERT_GT(want.invalid, 3u);
  clear_queues();
  std::vector<std::thread> ranks;
  for (int r = 1; r <= 2; ++r)
    ranks.emplace_back([&, r] {
      t_rank = r;
      sweep::run_worker(d, kFake, r, 3, {});
    });
  t_rank = 0;
  std::vector<int> ready;
  const auto got = sweep::validate_across(d, 1, kFake, 3, ready);
  sweep::release_workers(kFake, 3, &ready);
  for (auto& t : ranks) t.join();
  // The same report, file:line:key messages and all, in point order.
  EXPECT_EQ(test::all_errors(got.errors), test::all_errors(want.errors));
  EXPECT_EQ(got.error_points, want.error_points);
  EXPECT_EQ(got.invalid, want.invalid);
  EXPECT_EQ(got.pools, want.pools);
  EXPECT_EQ(ready, (std::vector<int>{1, 2}));
  // Each rank checked its own share (points i with i % 3 == rank) and sent what it found.
  for (int r = 1; r <= 2; ++r) {
    const auto share = sweep::validate(d, 1, 20, {static_cast<std::size_t>(r), 3});
    ASSERT_GT(share.invalid, 0u);
    const auto j = nlohmann::json::parse(g_requests[r], nullptr, false);
    ASSERT_TRUE(j.is_object()) << g_requests[r];
    EXPECT_EQ(j.value("invalid", std::size_t{0}), share.invalid) << r;
    ASSERT_TRUE(j["errors"].is_array());
    EXPECT_EQ(j["errors"].size(), share.errors.size()) << r;
  }
}

TEST(DistributedSweep, ARankThatReadAnotherSweepIsSentAwayAndRankZeroChecksItsShare) {
  const auto other = sweep_with_axes("\"training.global_batch\" = [16, 32]\n");  // another file: another hash
  {
    const auto d = sweep_with_axes(kInvalidAxes);
    clear_queues();
    std::thread rank1([&] {
      t_rank = 1;
      sweep::run_worker(other, kFake, 1, 3, {});
    });
    std::thread rank2([&] {
      t_rank = 2;
      sweep::run_worker(d, kFake, 2, 3, {});
    });
    t_rank = 0;
    std::vector<int> ready;
    const auto got = sweep::validate_across(d, 1, kFake, 3, ready);
    sweep::release_workers(kFake, 3, &ready);
    rank1.join();
    rank2.join();
    EXPECT_EQ(test::all_errors(got.errors), test::all_errors(sweep::validate(d, 1).errors));
    EXPECT_EQ(ready, std::vector<int>{2});
  }
  // A valid sweep runs on rank 0 and rank 2 alone.
  const auto d = sweep_with_axes("\"training.global_batch\" = { from = 16, to = 320, step = 16 }\n");
  const auto v = sweep::validate(d, 1);
  const sweep::Encoding e{{&d.spec(), v.pools, v.variability}, sweep::Format::Csv, true, true, false};
  clear_queues();
  std::mutex mu;
  std::set<int> ran_on;
  auto worker = [&](int r, const io::SweepDocument& doc) {
    t_rank = r;
    sweep::run_worker(doc, kFake, r, 3, [&, r](std::size_t i) {
      std::lock_guard lock(mu);
      ran_on.insert(r);
      return sweep::run_point(doc, i);
    });
  };
  std::thread rank1(worker, 1, std::cref(other));
  std::thread rank2(worker, 2, std::cref(d));
  t_rank = 0;
  std::vector<sweep::Finished> rows;
  sweep::RunOptions o;
  o.encoding = e;
  o.runner = [&](std::size_t i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return sweep::run_point(d, i);
  };
  o.on_row = [&](const sweep::Finished& f) { rows.push_back(f); };
  EXPECT_EQ(coordinate(d, o, 3), d.spec().points);
  rank1.join();
  rank2.join();
  ASSERT_EQ(rows.size(), d.spec().points);
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].point, i);
  EXPECT_EQ(ran_on, std::set<int>{2});
}

}  // namespace
}  // namespace hetsim
