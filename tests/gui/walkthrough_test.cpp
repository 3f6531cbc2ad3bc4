// hetsim-gui driven as a user would: open a purchase scenario, run the search, pick a point of
// the front on the chart and in the table, check that what is shown is api::buy's answer,
// export the point and check that `hetsim simulate --plan` on the export (api::simulate, and the
// built `hetsim` run as a process) gives the step shown. Also: a scenario with errors lists the reader's messages and cannot run;
// Cancel and a newer Run leave no stray results; closing during a search stops it; unsaved
// changes are asked about.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QMimeData>
#include <QUrl>
#include <QGraphicsView>
#include <QPlainTextEdit>
#include <QDoubleSpinBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTest>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "gui/app/document.hpp"
#include "gui/app/job_runner.hpp"
#include "gui/app/main_window.hpp"
#include "gui/app/recent_files.hpp"
#include "gui/qt_models/breakdown_model.hpp"
#include "gui/qt_models/diagnostics_model.hpp"
#include "gui/qt_models/format.hpp"
#include "gui/qt_models/front_model.hpp"
#include "gui/qt_models/sensitivity_model.hpp"
#include "gui/views/charts.hpp"
#include "gui/views/plan_view.hpp"
#include "gui/views/purchase_view.hpp"
#include "gui/views/scenario_view.hpp"
#include "gui/widgets/memory_bars.hpp"
#include "gui/widgets/timeline_view.hpp"
#include "sim/api/api.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/plan/planner.hpp"
#include "sim/report/buy_report.hpp"
#include "sim/report/estimate_report.hpp"
#include "sim/report/simulation_report.hpp"
#include "tests/gui/gui_test.hpp"
#include "tests/gui/window_support.hpp"

namespace hetsim::gui {
namespace {

class WalkthroughTest : public QObject {
  Q_OBJECT

  QString small_ = test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml");
  QString bad_ = test::source_file("tests/gui/data/bad-device.toml");

 private slots:
  void open_run_pick_and_export_a_purchase() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.open_file(small_));
    QVERIFY(w.document()->is_purchase());
    QVERIFY(w.run_action()->isEnabled());
    QCOMPARE(w.command_line(), "hetsim buy " + small_);

    // The front is shown as it grows (buy::Options::on_front), before the search ends.
    int partial_fronts = 0;
    std::size_t largest_partial = 0;
    connect(w.purchase_view()->model(), &QAbstractItemModel::modelReset, this, [&] {
      const auto& o = w.purchase_view()->outcome();
      if (o && o->partial) {
        ++partial_fronts;
        largest_partial = std::max(largest_partial, o->result.front.size());
        QVERIFY(!w.export_csv("/nonexistent/front.csv"));  // nothing to export before the end
      }
    });
    QVERIFY(w.run());
    QVERIFY(w.jobs()->busy());
    QVERIFY(w.progress_bar()->isVisible());
    QCOMPARE(w.tabs()->currentWidget(), w.purchase_view());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w), kSearchTimeoutMs);
    QVERIFY(!w.progress_bar()->isVisible());
    QVERIFY(partial_fronts >= 1);
    QVERIFY(largest_partial >= 1);
    QVERIFY(!w.purchase_view()->outcome()->partial);
    QCOMPARE(quiet.errors.size(), partial_fronts);  // the refused exports said why
    quiet.errors.clear();

    // What the CLI computes for the same file.
    auto s = api::load(small_.toStdString(), {.plan = false});
    QVERIFY(s.ok());
    auto expected = api::buy(*s, {});
    QVERIFY(expected.ok());
    const buy::Result& r = *expected;

    PurchaseView* pv = w.purchase_view();
    QVERIFY(pv->outcome());
    const buy::Result& shown = pv->outcome()->result;
    QVERIFY(!shown.stopped);
    QCOMPARE(shown.front.size(), r.front.size());
    QCOMPARE(shown.recommended, r.recommended);
    QCOMPARE(pv->model()->rowCount(), static_cast<int>(r.front.size()));
    QCOMPARE(pv->chart()->point_count(), static_cast<int>(r.front.size()));
    for (std::size_t i = 0; i < r.front.size(); ++i) {
      QCOMPARE(shown.front[i].nodes, r.front[i].nodes);
      QCOMPARE(shown.front[i].total_usd, r.front[i].total_usd);
      QCOMPARE(shown.front[i].effective_time_s, r.front[i].effective_time_s);
    }
    QVERIFY(pv->summary_text().contains(QString::number(r.compositions) + " compositions"));
    // The recommended point is selected first, its numbers in the details.
    QCOMPARE(pv->selected_point(), std::optional<std::size_t>(r.recommended));
    QCOMPARE(pv->chart()->selected(), static_cast<int>(r.recommended));

    // Click another point of the chart.
    const std::size_t pick = r.recommended == 1 ? 2 : 1;
    const buy::Point& p = r.front[pick];
    auto* view = pv->chart()->findChild<QGraphicsView*>();
    QVERIFY(view);
    const QPoint at = view->viewport()->mapFrom(pv->chart(), pv->chart()->point_position(static_cast<int>(pick)));
    QVERIFY(view->viewport()->rect().contains(at));
    QCOMPARE(pv->chart()->point_at(pv->chart()->point_position(static_cast<int>(pick))), static_cast<int>(pick));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, at);
    QTRY_COMPARE(pv->selected_point(), std::optional<std::size_t>(pick));
    QCOMPARE(pv->chart()->selected(), static_cast<int>(pick));
    const QString details = pv->details_text();
    QVERIFY2(details.contains("total " + format_usd(p.total_usd)), qPrintable(details));
    QVERIFY(details.contains("capex " + format_usd(p.capex_usd)));
    QVERIFY(details.contains(format_seconds(p.effective_time_s)));
    QVERIFY(details.contains(QString::fromStdString(report::what_is_bought(*s, p)).toHtmlEscaped()));
    QVERIFY(details.contains(QString::fromStdString(report::plan_summary(p.scenario, p.best.plan)).toHtmlEscaped()));
    QVERIFY(details.contains(format_seconds(p.best.step_s())));
    QVERIFY(details.contains(QString("vs #%1 (faster): ").arg(pick) +
                             QString::number(100 * (1 - r.front[pick - 1].trained_in_s / p.trained_in_s), 'f', 1) +
                             " % less time for " + format_usd(r.front[pick - 1].total_usd - p.total_usd) + " more"));
    QCOMPARE(w.purchase_view()->sensitivity_model()->rowCount(), static_cast<int>(r.sensitivity.size()));
    // The table follows the chart.
    const QModelIndexList rows = pv->table()->selectionModel()->selectedRows();
    QCOMPARE(rows.size(), 1);
    QCOMPARE(rows.front().data(FrontModel::kPointRole).toULongLong(), static_cast<qulonglong>(pick));
    QCOMPARE(pv->proxy()->index(rows.front().row(), FrontModel::kTotal).data().toString(), format_usd(p.total_usd));

    // Sort the table by total cost and pick its first row: the cheapest point (the front's last).
    pv->table()->sortByColumn(FrontModel::kTotal, Qt::AscendingOrder);
    pv->table()->selectRow(0);
    QCOMPARE(pv->selected_point(), std::optional<std::size_t>(r.front.size() - 1));
    QCOMPARE(pv->chart()->selected(), static_cast<int>(r.front.size() - 1));
    pv->select_point(pick);

    // Export the point: the same files as `hetsim buy --out`.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString plan_path = dir.filePath("chosen.plan.json");
    QVERIFY(w.export_plan(plan_path));
    auto cli = api::buy_files(*s, read_all(small_).toStdString(), r, dir.path().toStdString());
    QVERIFY(cli.ok());
    const std::string stem = "point-" + std::to_string(pick + 1);
    for (const auto& f : *cli)
      if (f.path.filename() == stem + ".plan.json") QCOMPARE(read_all(plan_path).toStdString(), f.content);
    QVERIFY(w.export_point(dir.path()));
    const QString toml = dir.filePath(QString::fromStdString(stem + ".toml"));
    const QString json = dir.filePath(QString::fromStdString(stem + ".plan.json"));
    QVERIFY(QFile::exists(toml) && QFile::exists(json));
    QCOMPARE(read_all(json), read_all(plan_path));
    QVERIFY(w.export_csv(dir.filePath("front.csv")));
    QCOMPARE(read_all(dir.filePath("front.csv")).toStdString(), report::buy_csv(*s, r));

    // `hetsim simulate point-N.toml --plan point-N.plan.json` gives the step the GUI showed.
    auto point = api::load(toml.toStdString());
    QVERIFY2(point.ok(), point.ok() ? "" : to_string(point.errors().front()).c_str());
    auto plan = api::plan_to_run(*point, json.toStdString(), "simulate");
    QVERIFY(plan.ok());
    auto sim = api::simulate(*point, *plan);
    QVERIFY(sim.ok());
    const double step = static_cast<double>(sim->sim.trace.makespan) * 1e-9;
    QVERIFY(p.best.verified());
    QVERIFY2(std::abs(step - p.best.simulated_step_s) <= 1e-9 * step,
             qPrintable(QString("simulate %1 s, shown %2 s").arg(step).arg(p.best.simulated_step_s)));
    QCOMPARE(format_seconds(step), pv->proxy()->index(pv->table()->selectionModel()->selectedRows().front().row(),
                                                      FrontModel::kStep).data().toString());

    // The point's plan in the Plan tab: estimated at once, then simulated; its Chrome trace is
    // `hetsim simulate --trace`'s.
    QVERIFY(pv->show_plan_button()->isEnabled());
    QTest::mouseClick(pv->show_plan_button(), Qt::LeftButton);
    QCOMPARE(w.tabs()->currentWidget(), w.plan_view());
    QVERIFY2(w.plan_view()->headline_text().contains(QString("front point %1").arg(pick + 1)),
             qPrintable(w.plan_view()->headline_text()));
    QVERIFY(w.plan_view()->headline_text().contains(
        "Step " + format_seconds(api::estimate(p.scenario, p.best.plan).step_time.v)));
    QTRY_VERIFY_WITH_TIMEOUT(idle(w), kSearchTimeoutMs);
    QVERIFY2(w.plan_view()->simulation_text().contains("Simulated step " + format_seconds(step)),
             qPrintable(w.plan_view()->simulation_text()));
    const QString trace = dir.filePath("step.trace.json");
    QVERIFY(w.export_trace(trace));
    QCOMPARE(read_all(trace).toStdString(), report::chrome_trace(*point, sim->sim.graph, sim->sim.trace));

    // The plan shown, exported from the Plan tab, is point-N.plan.json; the built `hetsim`
    // simulates the point's scenario with it to the step the window showed, to the printed digits.
    const QString shown_plan = dir.filePath("shown.plan.json");
    QVERIFY(w.plan_view()->export_plan_button()->isEnabled());
    QVERIFY(w.export_shown_plan(shown_plan));
    QCOMPARE(read_all(shown_plan), read_all(json));
    QProcess hetsim;
    hetsim.start(HETSIM_CLI, {"simulate", toml, "--plan", shown_plan, "--json"});
    QVERIFY2(hetsim.waitForFinished(kSearchTimeoutMs), HETSIM_CLI);
    QVERIFY2(hetsim.exitStatus() == QProcess::NormalExit && hetsim.exitCode() == 0,
             qPrintable(QString::fromUtf8(hetsim.readAllStandardError())));
    const QJsonObject out = QJsonDocument::fromJson(hetsim.readAllStandardOutput()).object();
    QVERIFY(out.contains("step_time_s"));
    const QString cli_step = format_seconds(out.value("step_time_s").toDouble());
    QVERIFY2(w.plan_view()->simulation_text().startsWith("Simulated step " + cli_step + " "),
             qPrintable(cli_step + " vs " + w.plan_view()->simulation_text()));
    QCOMPARE(cli_step, pv->proxy()->index(pv->table()->selectionModel()->selectedRows().front().row(),
                                          FrontModel::kStep).data().toString());
    QVERIFY(quiet.errors.isEmpty());
  }

  void nothing_within_the_limits_says_so_and_what_would_fit() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    // Own nothing, $1k of budget: no composition fits.
    QString text = read_all(small_);
    text.replace("[[cluster.pool]]\nname = \"a100\"\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n", "");
    text.replace("budget_usd = 1.0e6", "budget_usd = 1e3");
    QTemporaryDir dir;
    const QString file = dir.filePath("tight.toml");
    {
      QFile f(file);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text.toUtf8());
    }
    QVERIFY(w.open_file(file));
    QVERIFY2(w.document()->is_purchase(), qPrintable(text));
    QVERIFY(w.document()->scenario()->cluster.pools.empty());
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w), kSearchTimeoutMs);
    PurchaseView* pv = w.purchase_view();
    QVERIFY(pv->outcome());
    QVERIFY(pv->outcome()->result.front.empty());
    QCOMPARE(pv->model()->rowCount(), 0);
    QVERIFY(pv->summary_text().contains("No composition has a plan that fits within the limits"));
    QVERIFY(pv->outcome()->result.smallest_fit.has_value());
    QVERIFY2(pv->summary_text().contains("The smallest that would fit: buy 1 × "), qPrintable(pv->summary_text()));
    QVERIFY(!pv->selected_point());
    QVERIFY(!w.export_csv(dir.filePath("front.csv")));
    QVERIFY(!QFile::exists(dir.filePath("front.csv")));
    QCOMPARE(quiet.errors.size(), 1);
  }
};

HETSIM_GUI_SUITE(WalkthroughTest);

// The document: bad input, unreadable files, unsaved changes, a scenario without [purchase].
class DocumentTest : public QObject {
  Q_OBJECT

  QString small_ = test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml");
  QString bad_ = test::source_file("tests/gui/data/bad-device.toml");

 private slots:
  void a_bad_scenario_lists_the_readers_messages_and_cannot_run() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    w.show();
    QVERIFY(w.open_file(bad_));
    auto expected = api::load(bad_.toStdString(), {.plan = false});
    QVERIFY(!expected.ok());
    DiagnosticsModel* dm = w.scenario_view()->diagnostics_model();
    QCOMPARE(dm->rowCount(), static_cast<int>(expected.errors().size()));
    for (int row = 0; row < dm->rowCount(); ++row) {
      const Diagnostic& d = expected.errors()[static_cast<std::size_t>(row)];
      QCOMPARE(dm->index(row, DiagnosticsModel::kMessage).data().toString(), QString::fromStdString(d.message));
      QCOMPARE(dm->index(row, DiagnosticsModel::kKey).data().toString(), QString::fromStdString(d.key));
    }
    QVERIFY(w.scenario_view()->diagnostics_table()->isVisible());
    QVERIFY(w.scenario_view()->verdict_text().contains("2 error(s)"));
    QVERIFY(!w.run_action()->isEnabled());
    QVERIFY(!w.run());
    QVERIFY(!w.jobs()->busy());
    QVERIFY(!w.purchase_view()->outcome());
    // Clicking a message puts the cursor on its field.
    QTableView* table = w.scenario_view()->diagnostics_table();
    const QRect cell = table->visualRect(dm->index(1, DiagnosticsModel::kMessage));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
    QCOMPARE(w.scenario_view()->editor()->textCursor().blockNumber() + 1, 26);
    QCOMPARE(w.scenario_view()->editor()->textCursor().positionInBlock() + 1, 13);

    // Editing a good scenario to a bad value: the reader's message, Run disabled; fixed: enabled.
    QVERIFY(w.open_file(small_));
    QVERIFY(w.run_action()->isEnabled());
    QPlainTextEdit* editor = w.scenario_view()->editor();
    const QString good = editor->toPlainText();
    QString bad = good;
    bad.replace("max_nodes = 2", "max_nodes = -3");
    QVERIFY(bad != good);
    editor->setPlainText(bad);
    QTRY_VERIFY(!w.run_action()->isEnabled());  // after the pause in typing
    QVERIFY(w.document()->modified());
    QVERIFY(dm->rowCount() >= 1);
    QVERIFY(dm->index(0, DiagnosticsModel::kMessage).data().toString().contains("max_nodes = -3 is out of range"));
    QVERIFY(!w.run());
    editor->setPlainText(good);
    w.scenario_view()->apply_edit();
    QVERIFY(w.run_action()->isEnabled());
    QCOMPARE(dm->rowCount(), 0);
    QVERIFY(quiet.errors.isEmpty());
  }

  void a_file_that_cannot_be_read_is_told_not_crashed_on() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    QVERIFY(!w.open_file(test::source_file("tests/gui/data/no-such-file.toml")));
    QCOMPARE(quiet.errors.size(), 1);
    QVERIFY(quiet.errors.front().contains("no-such-file.toml"));
    QVERIFY(!w.open_file(test::source_file("tests/gui/data")));  // a folder
    QCOMPARE(quiet.errors.size(), 2);
    QVERIFY(!w.run_action()->isEnabled());
  }

  void unsaved_changes_are_asked_about_and_save_as_writes_the_text() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts(QMessageBox::Cancel));
    QVERIFY(w.open_file(small_));
    QPlainTextEdit* editor = w.scenario_view()->editor();
    editor->setPlainText(editor->toPlainText() + "\n# an edit\n");
    QVERIFY(!w.open_file(bad_));  // Cancel: stays
    QCOMPARE(w.document()->path(), small_);
    QVERIFY(w.document()->modified());
    QVERIFY(w.isWindowModified());

    QTemporaryDir dir;
    const QString copy = dir.filePath("copy.toml");
    QVERIFY(w.save_as(copy));
    QVERIFY(!w.document()->modified());
    QCOMPARE(w.document()->path(), copy);
    QCOMPARE(read_all(copy), editor->toPlainText());
    QCOMPARE(RecentFiles::list().front(), QFileInfo(copy).absoluteFilePath());
    QVERIFY(w.document()->scenario().has_value());  // read again under its new name
    QCOMPARE(QString::fromStdString(w.document()->scenario()->file), copy);

    editor->setPlainText(editor->toPlainText() + "# another\n");
    w.set_prompts(quiet.prompts(QMessageBox::Save));
    QVERIFY(w.open_file(bad_));  // Save, then open
    QVERIFY(read_all(copy).endsWith("# another\n"));
    QCOMPARE(RecentFiles::list().front(), QFileInfo(bad_).absoluteFilePath());
  }

  // A file dropped on the window opens (a local file only); closing with unsaved edits asks,
  // and Cancel keeps the window open.
  void a_dropped_file_opens_and_closing_asks_about_unsaved_changes() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts(QMessageBox::Cancel));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QMimeData web;
    web.setUrls({QUrl("https://example.org/a.toml")});
    QDragEnterEvent refused(QPoint(10, 10), Qt::CopyAction, &web, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &refused);
    QVERIFY(!refused.isAccepted());
    QMimeData local;
    local.setUrls({QUrl::fromLocalFile(small_)});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &local, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &local, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &drop);
    QCOMPARE(w.document()->path(), small_);
    QVERIFY(w.document()->is_purchase());

    QPlainTextEdit* editor = w.scenario_view()->editor();
    editor->setPlainText(editor->toPlainText() + "# an edit\n");
    QVERIFY(!w.close());  // Cancel
    QVERIFY(w.isVisible());
    QVERIFY(w.document()->modified());
    w.set_prompts(quiet.prompts(QMessageBox::Discard));
    QVERIFY(w.close());
    QVERIFY(!w.isVisible());
    QVERIFY(!read_all(small_).contains("# an edit"));  // discarded, the file untouched
    QVERIFY(quiet.errors.isEmpty());
  }

  void without_parallel_the_planner_searches_first() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString text = mixed_without_parallel();
    QVERIFY(!text.isEmpty());
    QTemporaryDir dir;
    const QString file = dir.filePath("no-parallel.toml");
    QVERIFY(write_all(file, text));
    QVERIFY(w.open_file(file));
    QVERIFY2(w.document()->scenario() && !w.document()->scenario()->plan, qPrintable(text));
    QCOMPARE(w.command_line(), "hetsim plan " + file);
    QVERIFY(w.scenario_view()->verdict_text().contains("without [parallel]"));
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);

    auto s = api::load(file.toStdString());
    QVERIFY(s.ok());
    auto planned = api::plan(*s, {});
    QVERIFY(planned.ok());
    QVERIFY(!planned->result.top.empty());
    const plan::Plan& best = planned->result.top.front().plan;
    QVERIFY(w.plan_view()->headline_text().contains(
        QString("the planner's best of %1 plans").arg(planned->result.evaluated)));
    QVERIFY(w.plan_view()->headline_text().contains(
        QString::fromStdString(report::plan_summary(*s, best)).toHtmlEscaped()));
    QVERIFY(w.plan_view()->headline_text().contains("Step " + format_seconds(api::estimate(*s, best).step_time.v)));
    auto sim = api::simulate(*s, best);
    QVERIFY(sim.ok());
    QVERIFY(w.plan_view()->simulation_text().contains(
        "Simulated step " + format_seconds(static_cast<double>(sim->sim.trace.makespan) * 1e-9)));
  }

  void a_fixed_plan_is_estimated_at_once_and_simulated_in_the_background() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString file = test::source_file("scenarios/mixed-h100-a100.toml");
    QVERIFY(w.open_file(file));
    QVERIFY(!w.document()->is_purchase());
    QCOMPARE(w.command_line(), "hetsim simulate " + file);
    auto s = api::load(file.toStdString());
    QVERIFY(s.ok());
    const analytic::Estimate e = api::estimate(*s, *s->plan);
    QVERIFY(w.run());
    QCOMPARE(w.tabs()->currentWidget(), w.plan_view());
    QVERIFY2(w.plan_view()->headline_text().contains("Step " + format_seconds(e.step_time.v)),
             qPrintable(w.plan_view()->headline_text()));
    QTRY_VERIFY_WITH_TIMEOUT(idle(w), kSearchTimeoutMs);
    auto sim = api::simulate(*s, *s->plan);
    QVERIFY(sim.ok());
    const double step = static_cast<double>(sim->sim.trace.makespan) * 1e-9;
    QVERIFY2(w.plan_view()->simulation_text().contains("Simulated step " + format_seconds(step)),
             qPrintable(w.plan_view()->simulation_text()));
    QCOMPARE(w.plan_view()->memory_bars()->bars().size(), e.device_types.size());
    // By stage: a bar per stage of each replica group, its own breakdown against its device.
    w.plan_view()->bars_by_stage()->setChecked(true);
    const auto& stage_bars = w.plan_view()->memory_bars()->bars();
    QVERIFY(e.stages.size() > e.device_types.size());
    QCOMPARE(stage_bars.size(), e.stages.size());
    for (std::size_t i = 0; i < e.stages.size(); ++i) {
      const analytic::StageEstimate& st = e.stages[i];
      QVERIFY2(stage_bars[i].label.startsWith(QString("group %1 stage %2 · %3 ").arg(st.group).arg(st.stage).arg(qs(st.pool))),
               qPrintable(stage_bars[i].label));
      QCOMPARE(stage_bars[i].parts.size(), st.memory.parts.size());
      double total = 0;
      for (const auto& [name, bytes] : stage_bars[i].parts) total += bytes;
      QCOMPARE(total, static_cast<double>(st.memory.total().v));
      for (const analytic::DeviceEstimate& d : e.device_types)
        if (d.pool == st.pool) QCOMPARE(stage_bars[i].capacity, d.capacity.v);
    }
    w.plan_view()->bars_by_stage()->setChecked(false);
    QCOMPARE(w.plan_view()->memory_bars()->bars().size(), e.device_types.size());
    QVERIFY(w.plan_view()->memory_bars()->bars().front().other_peak.has_value());  // the simulated peak again
    QCOMPARE(w.plan_view()->critical_model()->rowCount(),
             static_cast<int>(sim->sim.summary.critical_by_kind.size()));
  }
};

HETSIM_GUI_SUITE(DocumentTest);

// What-if: a change of a value shows the estimate on the changed scenario at once (the numbers
// api::estimate gives for it), and its simulation after a pause.
class WhatIfTest : public QObject {
  Q_OBJECT

 private slots:
  void a_change_reestimates_at_once_and_resimulates_after() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString file = test::source_file("scenarios/mixed-h100-a100.toml");
    QVERIFY(w.open_file(file));
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);
    auto s = api::load(file.toStdString());
    QVERIFY(s.ok());
    const plan::Plan& p = *s->plan;
    const analytic::Estimate before = api::estimate(*s, p);
    // The controls start at the scenario's values.
    QCOMPARE(w.plan_view()->what_if().oversubscription, s->cluster.network.oversubscription);
    QCOMPARE(w.plan_view()->what_if().electricity_usd_per_kwh, s->cost.electricity_usd_per_kwh);
    QCOMPARE(w.plan_view()->what_if().nic_factor, 1.0);

    // A slower network: the estimate changes at once.
    w.plan_view()->what_if_control(0)->setValue(0.1);
    WhatIf wi = what_if_of(*s);
    wi.nic_factor = 0.1;
    const Scenario slow = apply_what_if(*s, wi);
    QCOMPARE(slow.cluster.pools[0].nic.bandwidth.v, 0.1 * s->cluster.pools[0].nic.bandwidth.v);
    const analytic::Estimate e = api::estimate(slow, p);
    QVERIFY(e.step_time.v > before.step_time.v);
    QVERIFY2(w.plan_view()->headline_text().contains("Step " + format_seconds(e.step_time.v)),
             qPrintable(w.plan_view()->headline_text()));
    QVERIFY(!w.plan_view()->simulation());  // not yet: it follows

    // Dearer devices (the scenario rents them): the cost to train follows.
    w.plan_view()->what_if_control(2)->setValue(2);
    wi.price_factor = 2;
    const Scenario dear = apply_what_if(*s, wi);
    const analytic::Estimate e2 = api::estimate(dear, p);
    QVERIFY(e2.cost_to_train_usd > e.cost_to_train_usd);
    QVERIFY(w.plan_view()->headline_text().contains("cost to train " + format_usd(e2.cost_to_train_usd)));

    // The simulation of the last change only.
    QSignalSpy finished(w.jobs(), &JobRunner::finished);
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);
    QCOMPARE(finished.count(), 1);
    auto sim = api::simulate(dear, p);
    QVERIFY(sim.ok());
    const double step = static_cast<double>(sim->sim.trace.makespan) * 1e-9;
    QVERIFY2(w.plan_view()->simulation_text().contains("Simulated step " + format_seconds(step)),
             qPrintable(w.plan_view()->simulation_text()));
  }

  // A uniform plan keeps its micro-batches even: the GUI shows what the reader makes of the same
  // file with the new global_batch. A batch the replicas cannot share shows the validator's
  // message, disables Run and simulates nothing; a good value brings Run back.
  void global_batch_of_an_even_plan_is_split_as_the_reader_splits_it() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString file = test::source_file("scenarios/llama3-8b-a100-l40s.toml");
    QVERIFY(w.open_file(file));
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);
    auto s = api::load(file.toStdString());
    QVERIFY(s.ok());
    QCOMPARE(w.plan_view()->what_if().global_batch, 256);
    QCOMPARE(w.plan_view()->global_batch_control()->value(), 256);

    // 512 sequences: the file with global_batch = 512, as the CLI reads it (32 replicas, 16 each).
    const std::string text = read_all(file).toStdString();
    const std::string from = "global_batch = 256", to = "global_batch = 512";
    std::string text512 = text;
    QVERIFY(text512.find(from) != std::string::npos);
    text512.replace(text512.find(from), from.size(), to);
    auto s512 = api::load_text(text512, file.toStdString());
    QVERIFY(s512.ok());
    const plan::Plan& p512 = *s512->plan;
    QCOMPARE(p512.sequences_per_step(), 512);
    QCOMPARE(p512.groups.front().micro_batches, 2 * s->plan->groups.front().micro_batches);
    w.plan_view()->global_batch_control()->setValue(512);
    const analytic::Estimate e = api::estimate(*s512, p512);
    QVERIFY2(w.plan_view()->headline_text().contains("Step " + format_seconds(e.step_time.v)),
             qPrintable(w.plan_view()->headline_text()));
    QVERIFY(w.plan_view()->headline_text().contains(qs(report::plan_summary(*s512, p512)).toHtmlEscaped()));
    QVERIFY(w.plan_view()->headline_text().contains("time to train " + format_seconds(e.time_to_train.v)));
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);
    auto sim = api::simulate(*s512, p512);
    QVERIFY(sim.ok());
    QVERIFY2(w.plan_view()->simulation_text().contains(
                 "Simulated step " + format_seconds(static_cast<double>(sim->sim.trace.makespan) * 1e-9)),
             qPrintable(w.plan_view()->simulation_text()));
    QVERIFY(w.run_action()->isEnabled());

    // 500 sequences over 32 replicas of micro_batch 1 do not split evenly: the validator's message.
    QSignalSpy finished(w.jobs(), &JobRunner::finished);
    w.plan_view()->global_batch_control()->setValue(500);
    WhatIf wi = what_if_of(*s);
    wi.global_batch = 500;
    const Scenario s500 = apply_what_if(*s, wi);
    QCOMPARE(s500.training.global_batch, 500);
    auto split = plan_for_batch(s500, *s->plan);
    QVERIFY(!split.ok());
    const Diagnostics expected = io::validate_plan(s500, *s->plan, SourceLoc{s500.file, 0, 0});
    QVERIFY(!expected.empty());
    QCOMPARE(split.errors().size(), expected.size());
    for (const Diagnostic& d : expected)
      QVERIFY2(w.plan_view()->headline_text().contains(qs(d.message).toHtmlEscaped()),
               qPrintable(w.plan_view()->headline_text()));
    QVERIFY(w.plan_view()->headline_text().contains("global_batch is 500"));
    QVERIFY(!w.plan_view()->simulation());
    QVERIFY(!w.run_action()->isEnabled());
    QVERIFY(!w.run());
    QVERIFY(w.plan_view()->global_batch_control()->isEnabled());
    QTest::qWait(600);  // past the pause after which a simulation would start
    QVERIFY(idle(w));
    QCOMPARE(finished.count(), 0);
    QVERIFY(!w.plan_view()->simulation());

    // Back to a batch that splits: estimated again, Run enabled.
    w.plan_view()->global_batch_control()->setValue(128);
    QVERIFY(w.run_action()->isEnabled());
    QVERIFY(w.plan_view()->headline_text().contains("Step "));
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);
  }

  // Unlike replica groups (92 and 36 micro-batches) are split again as the planner splits a batch;
  // a batch their replicas cannot take in whole micro-batches drops the simulation in flight.
  void global_batch_of_unlike_groups_is_split_as_the_planner_splits_it() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString file = test::source_file("scenarios/mixed-h100-a100.toml");
    QVERIFY(w.open_file(file));
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);
    auto s = api::load(file.toStdString());
    QVERIFY(s.ok());
    QVERIFY(s->plan->groups.size() == 2 && s->plan->groups[0].micro_batches != s->plan->groups[1].micro_batches);

    WhatIf wi = what_if_of(*s);
    wi.global_batch = 1024;
    const Scenario s1024 = apply_what_if(*s, wi);
    plan::Plan p1024 = *s->plan;
    QVERIFY(planner::split_batch(s1024, p1024));
    QCOMPARE(p1024.sequences_per_step(), 1024);
    QVERIFY(io::validate_plan(s1024, p1024, {}).empty());
    w.plan_view()->global_batch_control()->setValue(1024);
    const analytic::Estimate e = api::estimate(s1024, p1024);
    QVERIFY2(w.plan_view()->headline_text().contains("Step " + format_seconds(e.step_time.v)),
             qPrintable(w.plan_view()->headline_text()));
    QVERIFY(w.plan_view()->headline_text().contains(qs(report::plan_summary(s1024, p1024)).toHtmlEscaped()));

    // 1026 is not a multiple of the groups' 4 replicas: nothing to estimate, and the simulation
    // of 1024 that was about to start (or running) is dropped.
    QSignalSpy finished(w.jobs(), &JobRunner::finished);
    w.plan_view()->global_batch_control()->setValue(1026);
    QVERIFY(!w.run_action()->isEnabled());
    QVERIFY2(w.plan_view()->headline_text().contains("global_batch is 1026"),
             qPrintable(w.plan_view()->headline_text()));
    QTest::qWait(600);
    QTRY_VERIFY_WITH_TIMEOUT(idle(w), kSearchTimeoutMs);
    QCOMPARE(finished.count(), 0);
    QVERIFY(!w.plan_view()->simulation());

    // Back to the scenario's own batch: its own plan, as Run showed it.
    w.plan_view()->global_batch_control()->setValue(512);
    QVERIFY(w.run_action()->isEnabled());
    const analytic::Estimate own = api::estimate(*s, *s->plan);
    QVERIFY(w.plan_view()->headline_text().contains(qs(report::plan_summary(*s, *s->plan)).toHtmlEscaped()));
    QVERIFY(w.plan_view()->headline_text().contains("Step " + format_seconds(own.step_time.v)));
  }
};

HETSIM_GUI_SUITE(WhatIfTest);

// While a search runs: the UI thread keeps answering; Cancel, supersede and close.
class RunControlTest : public QObject {
  Q_OBJECT

  QString small_ = test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml");
  QString bad_ = test::source_file("tests/gui/data/bad-device.toml");

 private slots:
  void cancel_leaves_no_result() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    QVERIFY(w.open_file(small_));
    QSignalSpy finished(w.jobs(), &JobRunner::finished);
    QSignalSpy dropped(w.jobs(), &JobRunner::dropped);
    QVERIFY(w.run());
    w.cancel();
    QVERIFY(!w.jobs()->busy());
    QCOMPARE(w.status_text(), QString("Cancelled"));
    QTRY_VERIFY_WITH_TIMEOUT(w.jobs()->running() == 0, kSearchTimeoutMs);
    QCOMPARE(dropped.count(), 1);  // the stopped search's answer arrived and was dropped
    QCOMPARE(finished.count(), 0);
    QVERIFY(!w.purchase_view()->outcome());
    QCOMPARE(w.purchase_view()->model()->rowCount(), 0);
    QCOMPARE(w.purchase_view()->chart()->point_count(), 0);
    QVERIFY(!w.progress_bar()->isVisible());
  }

  // Cancel replaces what the cancelled job said it was doing: the plan search's "Searching the
  // best plan…" and the simulation's "Simulating one step…" never stay on screen after it.
  void cancel_replaces_the_searching_and_simulating_notes() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString text = mixed_without_parallel();
    QVERIFY(!text.isEmpty());
    QTemporaryDir dir;
    const QString file = dir.filePath("no-parallel.toml");
    QVERIFY(write_all(file, text));
    QVERIFY(w.open_file(file));
    QVERIFY(w.run());
    QVERIFY(w.plan_view()->headline_text().contains("Searching the best plan"));
    w.cancel();
    QVERIFY2(!w.plan_view()->headline_text().contains("Searching"), qPrintable(w.plan_view()->headline_text()));
    QVERIFY(w.plan_view()->headline_text().contains("Cancelled"));
    QVERIFY(!w.plan_view()->export_plan_button()->isEnabled());
    QCOMPARE(w.status_text(), QString("Cancelled"));
    w.jobs()->wait_all();
    QCoreApplication::processEvents();
    QVERIFY(w.plan_view()->headline_text().contains("Cancelled"));  // the stopped search's answer was dropped

    QVERIFY(w.open_file(test::source_file("scenarios/mixed-h100-a100.toml")));
    QVERIFY(w.run());
    QCOMPARE(w.plan_view()->simulation_text(), QString("Simulating one step…"));
    const QString estimate = w.plan_view()->headline_text();
    w.cancel();
    QVERIFY2(!w.plan_view()->simulation_text().contains("Simulating"), qPrintable(w.plan_view()->simulation_text()));
    QVERIFY(w.plan_view()->simulation_text().contains("Cancelled"));
    QCOMPARE(w.plan_view()->headline_text(), estimate);  // the estimate stays: it is not the job's
    w.jobs()->wait_all();
    QCoreApplication::processEvents();
    QVERIFY(!w.plan_view()->simulation());
    QVERIFY(w.plan_view()->simulation_text().contains("Cancelled"));
    QVERIFY(quiet.errors.isEmpty());
  }

  void a_newer_run_supersedes_the_older_one() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    QVERIFY(w.open_file(small_));
    QSignalSpy finished(w.jobs(), &JobRunner::finished);
    QSignalSpy dropped(w.jobs(), &JobRunner::dropped);
    QVERIFY(w.run());
    const quint64 first = w.jobs()->current();
    QVERIFY(w.run());
    const quint64 second = w.jobs()->current();
    QVERIFY(second != first);
    QTRY_VERIFY_WITH_TIMEOUT(idle(w), kSearchTimeoutMs);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.front().front().toULongLong(), second);
    QCOMPARE(dropped.count(), 1);
    QCOMPARE(dropped.front().front().toULongLong(), first);
    QVERIFY(w.purchase_view()->outcome());
    QVERIFY(!w.purchase_view()->outcome()->result.stopped);  // the complete answer, not the stopped one
  }

  void closing_during_a_search_stops_it() {
    Quiet quiet;
    auto* w = new MainWindow;
    w->set_prompts(quiet.prompts());
    w->show();
    QVERIFY(w->open_file(small_));
    QVERIFY(w->run());
    QVERIFY(w->close());
    const auto t0 = std::chrono::steady_clock::now();
    delete w;  // joins the stopped search
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120));
  }

  void the_ui_thread_keeps_answering_during_a_search() {
    // A watchdog timer on the UI thread: the longest gap between its ticks while the search runs
    // is how long the UI thread was blocked (the issue asks for at most 50 ms).
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.open_file(small_));
    // The UI thread's own CPU time in the longest gap is the GUI's work in it; the rest of the
    // gap is waiting for a core on a loaded machine (tests/gui/search_stall_perftest.cpp).
    QElapsedTimer clock;
    qint64 last = 0, worst = 0;
    double last_cpu = 0, worst_cpu = 0;
    int ticks = 0;
    // The wall gap is reported, not checked: on a loaded machine it measures the load (tests
    // check behaviour, not wall time). The UI thread's CPU time within any gap is its work.
    auto gap = [&] {
      const qint64 now = clock.elapsed();
      const double cpu = thread_cpu_ms();
      worst = std::max(worst, now - last);
      worst_cpu = std::max(worst_cpu, cpu - last_cpu);
      last = now;
      last_cpu = cpu;
    };
    QTimer watchdog;
    watchdog.setInterval(5);
    connect(&watchdog, &QTimer::timeout, [&] {
      gap();
      ++ticks;
    });
    clock.start();
    last_cpu = thread_cpu_ms();
    watchdog.start();
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w), kSearchTimeoutMs);
    watchdog.stop();
    gap();
    qInfo("UI thread: longest gap %lld ms, at most %.1f ms of its CPU time in a gap, over %lld ms of search (%d ticks)", worst,
          worst_cpu, clock.elapsed(), ticks);
    QVERIFY(w.purchase_view()->outcome());
    QVERIFY(ticks > 10);
    QVERIFY(worst_cpu >= 0);
    if (worst_cpu > kUiTargetMs) qInfo("above issue 13's %.0f ms target on this machine", kUiTargetMs);
    const double search_ms = static_cast<double>(clock.elapsed());
    QVERIFY2(worst_cpu <= kMaxUiShareOfSearch * search_ms,
             qPrintable(QString("the UI thread worked %1 ms without a break (longest gap %2 ms) in a %3 ms search")
                            .arg(worst_cpu, 0, 'f', 1)
                            .arg(worst)
                            .arg(search_ms, 0, 'f', 0)));
  }
};

HETSIM_GUI_SUITE(RunControlTest);


// Every bundled scenario (scenarios/**/*.toml) opens as the CLI reads it; each fixed plan runs.
class BundledScenariosTest : public QObject {
  Q_OBJECT

 private slots:
  void every_bundled_scenario_reads_as_the_cli_reads_it() {
    // scenarios/**/*.toml: the document holds what api::load makes of each (or its messages),
    // and Run on a fixed plan shows api::estimate's step at once.
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    int files = 0, estimated = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(test::source_file("scenarios").toStdString())) {
      if (e.path().extension() != ".toml" || e.path().parent_path().filename() == "profiles") continue;
      const QString file = QString::fromStdString(e.path().string());
      QVERIFY2(w.open_file(file), qPrintable(file));
      ++files;
      auto without_plan = api::load(e.path(), {.plan = false});
      const bool purchase = without_plan.ok() && without_plan->purchase.has_value();
      auto s = purchase ? std::move(without_plan) : api::load(e.path());
      QCOMPARE(w.document()->scenario().has_value(), s.ok());
      QCOMPARE(w.document()->is_purchase(), purchase);
      if (!s.ok()) {
        QCOMPARE(w.document()->diagnostics().size(), s.errors().size());
        continue;
      }
      QCOMPARE(w.document()->scenario()->name, s->name);
      QCOMPARE(w.document()->scenario()->cluster.devices(), s->cluster.devices());
      if (purchase || !s->plan) continue;
      QVERIFY(w.run());
      const analytic::Estimate e1 = api::estimate(*s, *s->plan);
      QVERIFY2(w.plan_view()->headline_text().contains("Step " + format_seconds(e1.step_time.v)), qPrintable(file));
      // Cancelled, the simulation is dropped, but api::simulate cannot be stopped: wait for it
      // rather than pile up threads.
      w.cancel();
      w.jobs()->wait_all();
      ++estimated;
    }
    QVERIFY(files > 50);
    QVERIFY(estimated > 40);
    QVERIFY(quiet.errors.isEmpty());
  }
};

HETSIM_GUI_SUITE(BundledScenariosTest);

// The bundled purchase scenario the issue names (5–6 s in an optimised build; labelled slow, so
// the sanitizer run leaves it out), and its recommended point's plan: a 48-device simulated step
// of some 5·10⁴ tasks and its timeline.
class BundledPurchaseTest : public QObject {
  Q_OBJECT

 private slots:
  void the_bundled_405b_search_shows_buys_front() {
    MainWindow w;
    Quiet quiet;
    w.set_prompts(quiet.prompts());
    const QString file = test::source_file("scenarios/purchase/llama3-405b-from-scratch-power.toml");
    QVERIFY(w.open_file(file));
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w), 600000);
    auto s = api::load(file.toStdString(), {.plan = false});
    QVERIFY(s.ok());
    auto r = api::buy(*s, {});
    QVERIFY(r.ok());
    const auto& o = w.purchase_view()->outcome();
    QVERIFY(o);
    QCOMPARE(o->result.front.size(), r->front.size());
    QCOMPARE(o->result.recommended, r->recommended);
    for (std::size_t i = 0; i < r->front.size(); ++i) {
      QCOMPARE(o->result.front[i].nodes, r->front[i].nodes);
      QCOMPARE(w.purchase_view()->model()->rows()[i].total_usd, r->front[i].total_usd);
      QCOMPARE(w.purchase_view()->model()->rows()[i].trained_in_s, r->front[i].trained_in_s);
    }
    QVERIFY(w.purchase_view()->details_text().contains(format_usd(r->front[r->recommended].total_usd)));

    // The recommended point's plan: some 5·10⁴ tasks on 48 simulated devices, timeline included.
    QVERIFY(w.show_point_plan(r->recommended));
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), 600000);
    const buy::Point& p = r->front[r->recommended];
    auto sim = api::simulate(p.scenario, p.best.plan);
    QVERIFY(sim.ok());
    QVERIFY(w.plan_view()->timeline()->data());
    QCOMPARE(w.plan_view()->timeline()->data()->tasks.size(), sim->sim.graph.size());
    QVERIFY(w.plan_view()->simulation_text().contains(
        "Simulated step " + format_seconds(static_cast<double>(sim->sim.trace.makespan) * 1e-9)));
  }
};

HETSIM_GUI_SUITE(BundledPurchaseTest);

}  // namespace
}  // namespace hetsim::gui

#include "walkthrough_test.moc"
