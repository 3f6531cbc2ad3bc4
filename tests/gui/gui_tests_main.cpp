// Runs hetsim-gui's Qt Test suites: `gui_tests <Suite> [QTest options]`, or every suite.
// Headless (QT_QPA_PLATFORM=offscreen, set by ctest and here when unset); settings in Qt's test
// locations, never the user's.
#include <QApplication>
#include <QDir>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cstdio>
#include <vector>

#include "tests/gui/gui_test.hpp"

namespace hetsim::gui::test {
std::map<std::string, SuiteFactory>& suites() {
  static std::map<std::string, SuiteFactory> s;
  return s;
}
}  // namespace hetsim::gui::test

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  // Qt wants a private (0700) runtime folder; a temporary one keeps its warning out of the logs.
  QTemporaryDir runtime;
  if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR") && runtime.isValid()) {
    QFile::setPermissions(runtime.path(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    qputenv("XDG_RUNTIME_DIR", runtime.path().toLocal8Bit());
  }
  QStandardPaths::setTestModeEnabled(true);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("hetsim-tests");
  QApplication::setApplicationName("hetsim-gui-tests");

  auto& all = hetsim::gui::test::suites();
  std::vector<char*> args{argv[0]};
  std::vector<std::string> names;
  if (argc > 1 && argv[1][0] != '-') {
    names.push_back(argv[1]);
    for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  } else {
    for (const auto& [name, f] : all) names.push_back(name);
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  }
  int failed = 0;
  for (const std::string& name : names) {
    const auto it = all.find(name);
    if (it == all.end()) {
      std::fprintf(stderr, "gui_tests: no suite '%s'\n", name.c_str());
      return 2;
    }
    auto suite = it->second();
    failed += QTest::qExec(suite.get(), static_cast<int>(args.size()), args.data());
  }
  return failed == 0 ? 0 : 1;
}
