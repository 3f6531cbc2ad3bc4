// hetsim-gui: the desktop purchase planner and what-if workbench (docs/gui.md).
// Usage: hetsim-gui [SCENARIO.toml]
#include <QApplication>
#include <QCommandLineParser>

#include "gui/app/main_window.hpp"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("hetsim-gui");
  QApplication::setOrganizationName("hetsim");
  QApplication::setApplicationVersion(HETSIM_VERSION);
  QCommandLineParser cli;
  cli.setApplicationDescription("hetsim's desktop purchase planner: open a scenario TOML and press Run.");
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument("scenario", "Scenario TOML file to open (optional)", "[SCENARIO.toml]");
  cli.process(app);
  hetsim::gui::MainWindow window;
  window.show();
  if (!cli.positionalArguments().isEmpty()) window.open_file(cli.positionalArguments().front());
  return QApplication::exec();
}
