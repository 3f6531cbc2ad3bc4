#pragma once
// What the suites that drive the main window share: no dialog blocks a test, when the window is
// idle, how long a search may take.

#include <QFile>
#include <QMessageBox>
#include <QString>
#include <QStringList>

#include <ctime>

#include "gui/app/job_runner.hpp"
#include "gui/app/main_window.hpp"
#include "tests/gui/gui_test.hpp"

namespace hetsim::gui {

constexpr int kSearchTimeoutMs = 300000;  // sanitizer builds are slow; the search takes < 1 s in release
// The UI thread's own CPU time within any gap between watchdog ticks during a search: the GUI's
// work, which issue 13 wants under 50 ms (kUiTargetMs, measured by gui_search_stall_perftest:
// docs/benchmarks.md, "GUI"). CPU time scales with the machine: showing the final front took
// 15–25 ms on the machine of 2026-12-04 and 28–61 ms on a slower one (2026-12-06), so a test
// that held every machine to 50 ms failed there. The test checks the behaviour instead: the
// search runs off the UI thread, which never works for more than a quarter of the search without
// a break (run on the UI thread, the search would hold it for all of it).
constexpr double kUiTargetMs = 50;
constexpr double kMaxUiShareOfSearch = 0.25;

/// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ms.
inline double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

inline QString read_all(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(f.readAll());
}

/// Writes `text` to `path` (a test's own scenario file); false when it cannot.
inline bool write_all(const QString& path, const QString& text) {
  QFile f(path);
  const QByteArray bytes = text.toUtf8();
  return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

/// scenarios/mixed-h100-a100.toml without its [parallel] tables (the file's last): a scenario
/// the planner plans first. Empty when the file has no [parallel] table.
inline QString mixed_without_parallel() {
  QString text = read_all(test::source_file("scenarios/mixed-h100-a100.toml"));
  const auto from = text.indexOf("\n[parallel]");
  if (from <= 0) return {};
  text.truncate(from + 1);
  return text;
}

// No dialog may block a test: unsaved changes are discarded unless a test says otherwise; errors
// are collected.
struct Quiet {
  QStringList errors;
  Prompts prompts(QMessageBox::StandardButton unsaved = QMessageBox::Discard) {
    Prompts p;
    p.unsaved = [unsaved](QWidget*, const QString&) { return unsaved; };
    p.error = [this](QWidget*, const QString&, const QString& m) { errors.push_back(m); };
    return p;
  }
};

inline bool idle(const MainWindow& w) { return !w.jobs()->busy() && w.jobs()->running() == 0; }

}  // namespace hetsim::gui
