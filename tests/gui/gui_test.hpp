#pragma once
// hetsim-gui's Qt Test suites share one executable (one link, less build time): each suite is a
// QObject registered by name; `gui_tests <Suite> [QTest options]` runs one (ctest runs each in
// its own process), `gui_tests` alone runs them all.

#include <QObject>
#include <QString>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace hetsim::gui::test {

using SuiteFactory = std::function<std::unique_ptr<QObject>()>;
std::map<std::string, SuiteFactory>& suites();

struct Register {
  Register(const char* name, SuiteFactory f) { suites().emplace(name, std::move(f)); }
};

/// A file of the source tree ("scenarios/purchase/…toml", "tests/gui/data/…").
[[nodiscard]] inline QString source_file(const std::string& relative) {
  return QString::fromStdString((std::filesystem::path(HETSIM_SOURCE_DIR) / relative).string());
}

}  // namespace hetsim::gui::test

#define HETSIM_GUI_SUITE(Class) \
  static const ::hetsim::gui::test::Register register_##Class(#Class, [] { return std::make_unique<Class>(); })
