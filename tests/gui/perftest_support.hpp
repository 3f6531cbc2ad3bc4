#pragma once
// What the GUI benchmark programs (tests/gui/*_perftest.cpp) share: a headless start, waiting for
// a job's result, and the median and worst of a series. Never run by ctest.

#include <QEventLoop>
#include <QFile>
#include <QObject>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <vector>

#include "gui/app/job_runner.hpp"
#include "gui/app/main_window.hpp"

namespace hetsim::gui::perf {

/// Sets QT_QPA_PLATFORM=offscreen (unless set) and a private XDG_RUNTIME_DIR (unless set) in
/// `runtime`, and keeps recent files in Qt's test locations. Call before making the QApplication.
inline void headless(const QTemporaryDir& runtime) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR") && runtime.isValid()) {
    QFile::setPermissions(runtime.path(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    qputenv("XDG_RUNTIME_DIR", runtime.path().toLocal8Bit());
  }
  QStandardPaths::setTestModeEnabled(true);
}

/// Runs the event loop until a job (started or still to start) of `w` delivers its result; false
/// after `timeout_ms`.
inline bool wait_finished(MainWindow& w, int timeout_ms) {
  QEventLoop loop;
  bool done = false;
  QObject::connect(w.jobs(), &JobRunner::finished, &loop, [&] {
    done = true;
    loop.quit();
  });
  QTimer::singleShot(timeout_ms, &loop, &QEventLoop::quit);
  loop.exec();
  return done;
}

struct Stats {
  double median = 0, max = 0;
};

/// Requires: !v.empty().
inline Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.back()};
}

}  // namespace hetsim::gui::perf
