// The job-id pattern of gui/app/job_runner: a result reaches its receiver only while its job is
// current; superseded and cancelled jobs are asked to stop and what they send later is dropped;
// the runner's end stops and joins every thread.
#include <QSignalSpy>
#include <QTest>

#include <atomic>
#include <chrono>
#include <thread>

#include "gui/app/job_runner.hpp"
#include "tests/gui/gui_test.hpp"

namespace hetsim::gui {
namespace {

// Work that runs until asked to stop (or `limit` passes), reporting progress; returns how it ended.
std::function<int(const JobContext&)> until_stopped(std::atomic<int>* started, int value,
                                                    std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  return [started, value, limit](const JobContext& ctx) {
    ++*started;
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!ctx.stop.stop_requested() && std::chrono::steady_clock::now() < end) {
      ctx.progress(0.5);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return ctx.stop.stop_requested() ? -value : value;
  };
}

class JobsTest : public QObject {
  Q_OBJECT

 private slots:
  void delivers_the_current_jobs_result_once() {
    JobRunner runner;
    QSignalSpy finished(&runner, &JobRunner::finished);
    int got = 0, calls = 0;
    const quint64 id = runner.start<int>("answer", [](const JobContext&) { return 42; }, [&](int v) {
      got = v;
      ++calls;
    });
    QVERIFY(id > 0);
    QCOMPARE(runner.current(), id);
    QVERIFY(runner.busy());
    QTRY_COMPARE_WITH_TIMEOUT(calls, 1, 10000);
    QCOMPARE(got, 42);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.front().front().toULongLong(), id);
    QVERIFY(!runner.busy());
    QTRY_COMPARE(runner.running(), 0);
  }

  void a_newer_job_supersedes_and_the_old_result_is_dropped() {
    JobRunner runner;
    QSignalSpy dropped(&runner, &JobRunner::dropped);
    QSignalSpy progressed(&runner, &JobRunner::progressed);
    std::atomic<int> started{0};
    std::vector<int> results;
    const quint64 first = runner.start<int>("first", until_stopped(&started, 1), [&](int v) { results.push_back(v); });
    QTRY_COMPARE(started.load(), 1);
    const quint64 second = runner.start<int>("second", [](const JobContext&) { return 2; },
                                             [&](int v) { results.push_back(v); });
    QVERIFY(second > first);
    QCOMPARE(runner.current(), second);
    progressed.clear();  // the first job's progress while it was current
    runner.wait_all();
    QCOMPARE(results, std::vector<int>{2});  // the first job's -1 never arrived
    QCOMPARE(dropped.count(), 1);
    QCOMPARE(dropped.front().front().toULongLong(), first);
    QCOMPARE(progressed.count(), 0);  // the first job kept reporting until it stopped: all dropped
    QCOMPARE(runner.running(), 0);
  }

  void cancel_stops_the_job_and_drops_its_result() {
    JobRunner runner;
    QSignalSpy cancelled(&runner, &JobRunner::cancelled);
    QSignalSpy finished(&runner, &JobRunner::finished);
    std::atomic<int> started{0};
    int calls = 0;
    const quint64 id = runner.start<int>("long", until_stopped(&started, 7), [&](int) { ++calls; });
    QTRY_COMPARE(started.load(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    runner.cancel();
    QVERIFY(!runner.busy());
    QCOMPARE(cancelled.count(), 1);
    QCOMPARE(cancelled.front().front().toULongLong(), id);
    runner.wait_all();
    // The work saw the stop token long before its 20 s limit.
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    QCOMPARE(calls, 0);
    QCOMPARE(finished.count(), 0);
    runner.cancel();  // idle: nothing happens
    QCOMPARE(cancelled.count(), 1);
  }

  void the_runners_end_stops_and_joins_its_threads() {
    std::atomic<int> started{0};
    int calls = 0;
    const auto t0 = std::chrono::steady_clock::now();
    {
      JobRunner runner;
      runner.start<int>("a", until_stopped(&started, 1), [&](int) { ++calls; });
      runner.start<int>("b", until_stopped(&started, 2), [&](int) { ++calls; });
      QTRY_COMPARE(started.load(), 2);
      QVERIFY(runner.running() >= 1);  // "b" at least; "a" was asked to stop when "b" started
    }
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    QCoreApplication::processEvents();
    QCOMPARE(calls, 0);
  }
};

HETSIM_GUI_SUITE(JobsTest);

}  // namespace
}  // namespace hetsim::gui

#include "jobs_test.moc"
