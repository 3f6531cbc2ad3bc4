// The plan the Plan tab shows, exported and run again: the scenario's own [parallel] plan, the
// planner's best, a what-if's plan and a front point's. Each export must read back with the CLI's
// plan reader (io::read_plan_json) against the scenario it runs on, and simulate to the step the
// window showed; Copy as Command must name the files (quoted for the shell: the folder has a
// space and a quote) and, run by /bin/sh with the built `hetsim`, give that step too.
#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "gui/app/main_window.hpp"
#include "gui/qt_models/format.hpp"
#include "gui/views/plan_view.hpp"
#include "gui/views/purchase_view.hpp"
#include "sim/api/api.hpp"
#include "sim/io/plan_json.hpp"
#include "tests/gui/gui_test.hpp"
#include "tests/gui/window_support.hpp"

namespace hetsim::gui {
namespace {

// The simulated step (step_time_s) of a `hetsim simulate … --json` run, or -1 with the reason.
double cli_step(QProcess& p, QString* why) {
  if (!p.waitForFinished(kSearchTimeoutMs) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    *why = QString("exit %1: %2").arg(p.exitCode()).arg(QString::fromUtf8(p.readAllStandardError()));
    return -1;
  }
  const QJsonDocument doc = QJsonDocument::fromJson(p.readAllStandardOutput());
  if (!doc.isObject() || !doc.object().contains("step_time_s")) {
    *why = "no step_time_s in the output";
    return -1;
  }
  return doc.object().value("step_time_s").toDouble();
}

// Runs a command line as Copy as Command gives it, with `hetsim` the built one and --json added.
double run_copied(const QString& line, QString* why) {
  QString command = line.section("   # ", 0, 0);  // the comment, if any, is for the reader
  if (!command.startsWith("hetsim ")) {
    *why = "not a hetsim line: " + line;
    return -1;
  }
  command = "\"$HETSIM\" " + command.mid(7) + " --json";
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("HETSIM", HETSIM_CLI);
  p.setProcessEnvironment(env);
  p.start("/bin/sh", {"-c", command});
  return cli_step(p, why);
}

QString simulated_step_shown(const MainWindow& w) {
  const QString t = w.plan_view()->simulation_text();
  const QString head = "Simulated step ";
  return t.startsWith(head) ? t.mid(head.size()).section(' ', 0, 1) : QString();
}

class PlanExportTest : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  QString dir_;  // a folder whose path has a space and a quote

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    dir_ = tmp_.filePath("my plans/it's here");
    QVERIFY(QDir().mkpath(dir_));
  }

  void the_scenarios_own_plan_and_a_what_if_export_and_run() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString file = dir_ + "/mixed h100 a100.toml";
    QVERIFY(QFile::copy(test::source_file("scenarios/mixed-h100-a100.toml"), file));
    QVERIFY(w.open_file(file));
    QVERIFY(!w.plan_view()->export_plan_button()->isEnabled());
    QVERIFY(!w.export_shown_plan(dir_ + "/none.plan.json"));  // nothing shown yet: told
    QCOMPARE(quiet.errors.size(), 1);
    quiet.errors.clear();
    QVERIFY(w.run());
    QVERIFY(w.plan_view()->export_plan_button()->isEnabled());  // the estimate is enough
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);
    QVERIFY(w.plan_view()->export_trace_button()->isEnabled());
    QCOMPARE(w.command_line(), "hetsim simulate '" + QString(dir_).replace("'", "'\\''") + "/mixed h100 a100.toml'");

    auto s = api::load(file.toStdString());
    QVERIFY(s.ok());
    const QString plan_file = dir_ + "/own.plan.json";
    QVERIFY(w.export_shown_plan(plan_file));
    QCOMPARE(read_all(plan_file).toStdString(), io::plan_to_json(*s, *s->plan));
    auto back = io::read_plan_json(plan_file.toStdString(), *s);
    QVERIFY2(back.ok(), back.ok() ? "" : to_string(back.errors().front()).c_str());
    auto sim = api::simulate(*s, *back);
    QVERIFY(sim.ok());
    const QString shown = simulated_step_shown(w);
    QCOMPARE(format_seconds(static_cast<double>(sim->sim.trace.makespan) * 1e-9), shown);
    // Copied, with the plan named now that it is exported, the line runs in a shell as it is.
    const QString line = w.command_line();
    QVERIFY2(line.contains(" --plan '") && !line.contains('#'), qPrintable(line));
    QString why;
    const double step = run_copied(line, &why);
    QVERIFY2(step > 0, qPrintable(line + ": " + why));
    QCOMPARE(format_seconds(step), shown);

    // What if: NIC bandwidth halved and 1024 sequences per step (the groups split again).
    w.plan_view()->what_if_control(0)->setValue(0.5);
    w.plan_view()->global_batch_control()->setValue(1024);
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);
    QVERIFY2(w.command_line().contains("# the what-if values are not in the file"), qPrintable(w.command_line()));
    const QString what_if_file = dir_ + "/what-if.plan.json";
    QVERIFY(w.export_shown_plan(what_if_file));
    QVERIFY(w.status_text().contains("what-if values"));
    WhatIf wi = what_if_of(*s);
    wi.nic_factor = 0.5;
    wi.global_batch = 1024;
    const Scenario changed = apply_what_if(*s, wi);
    auto split = plan_for_batch(changed, *s->plan);
    QVERIFY(split.ok());
    QCOMPARE(read_all(what_if_file).toStdString(), io::plan_to_json(changed, *split));
    QVERIFY(!io::read_plan_json(what_if_file.toStdString(), *s).ok());  // 1024 sequences: not the file's 512
    auto back2 = io::read_plan_json(what_if_file.toStdString(), changed);
    QVERIFY2(back2.ok(), back2.ok() ? "" : to_string(back2.errors().front()).c_str());
    auto sim2 = api::simulate(changed, *back2);
    QVERIFY(sim2.ok());
    QCOMPARE(format_seconds(static_cast<double>(sim2->sim.trace.makespan) * 1e-9), simulated_step_shown(w));
    QVERIFY(simulated_step_shown(w) != shown);
    QVERIFY(quiet.errors.isEmpty());
  }

  void the_planners_best_plan_exports_and_runs() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString text = mixed_without_parallel();
    QVERIFY(!text.isEmpty());
    const QString file = dir_ + "/no parallel.toml";
    QVERIFY(write_all(file, text));
    QVERIFY(w.open_file(file));
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);
    QVERIFY(w.command_line().startsWith("hetsim plan '"));
    auto s = api::load(file.toStdString());
    QVERIFY(s.ok());
    auto planned = api::plan(*s, {});
    QVERIFY(planned.ok() && !planned->result.top.empty());
    const plan::Plan& best = planned->result.top.front().plan;

    const QString plan_file = dir_ + "/best.plan.json";
    QVERIFY(w.export_shown_plan(plan_file));
    QCOMPARE(read_all(plan_file).toStdString(), io::plan_to_json(*s, best));
    auto back = io::read_plan_json(plan_file.toStdString(), *s);
    QVERIFY2(back.ok(), back.ok() ? "" : to_string(back.errors().front()).c_str());
    auto sim = api::simulate(*s, *back);
    QVERIFY(sim.ok());
    QCOMPARE(format_seconds(static_cast<double>(sim->sim.trace.makespan) * 1e-9), simulated_step_shown(w));

    // `hetsim simulate FILE --plan best.plan.json`, run as copied.
    const QString line = w.command_line();
    QVERIFY2(line.startsWith("hetsim simulate '") && line.contains("--plan '") && !line.contains('#'),
             qPrintable(line));
    QString why;
    const double step = run_copied(line, &why);
    QVERIFY2(step > 0, qPrintable(line + ": " + why));
    QCOMPARE(format_seconds(step), simulated_step_shown(w));
    QVERIFY(quiet.errors.isEmpty());
  }

  void a_front_points_command_names_its_exported_files() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    QVERIFY(w.open_file(test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml")));
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w), kSearchTimeoutMs);
    const auto& o = w.purchase_view()->outcome();
    QVERIFY(o && !o->result.front.empty());
    const std::size_t i = o->result.recommended;
    const QString stem = QString("point-%1").arg(i + 1);
    QVERIFY(w.show_point_plan(i));
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);

    // Not exported yet: placeholders, and the comment says what to export.
    QCOMPARE(w.command_line(), "hetsim simulate " + stem + ".toml --plan " + stem +
                                   ".plan.json   # export the point's scenario and plan first (File > Export "
                                   "Selected Point's Scenario and Plan)");
    // The purchase tab still gives the search's line.
    w.tabs()->setCurrentWidget(w.purchase_view());
    QVERIFY(w.command_line().startsWith("hetsim buy "));
    w.tabs()->setCurrentWidget(w.plan_view());

    QVERIFY(w.export_point(dir_));
    const QString quoted = "'" + QString(dir_).replace("'", "'\\''") + "/";
    QCOMPARE(w.command_line(), "hetsim simulate " + quoted + stem + ".toml' --plan " + quoted + stem + ".plan.json'");
    QString why;
    const double step = run_copied(w.command_line(), &why);
    QVERIFY2(step > 0, qPrintable(w.command_line() + ": " + why));
    QCOMPARE(format_seconds(step), simulated_step_shown(w));

    // The Plan tab's export of a point's plan is point-N.plan.json, byte for byte.
    QVERIFY(w.export_shown_plan(dir_ + "/shown.plan.json"));
    QCOMPARE(read_all(dir_ + "/shown.plan.json"), read_all(dir_ + "/" + stem + ".plan.json"));
    QVERIFY(w.command_line().endsWith("/shown.plan.json'"));
    QVERIFY(quiet.errors.isEmpty());
  }
};

HETSIM_GUI_SUITE(PlanExportTest);

}  // namespace
}  // namespace hetsim::gui

#include "plan_export_test.moc"
