// The item models of gui/qt_models under QAbstractItemModelTester, filled from sim/api's own
// answers, and the numbers they hold equal to those answers.
#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "gui/qt_models/breakdown_model.hpp"
#include "gui/qt_models/diagnostics_model.hpp"
#include "gui/qt_models/format.hpp"
#include "gui/qt_models/front_model.hpp"
#include "gui/qt_models/memory_model.hpp"
#include "gui/qt_models/sensitivity_model.hpp"
#include "gui/qt_models/why_model.hpp"
#include "sim/api/api.hpp"
#include "sim/report/buy_report.hpp"
#include "tests/gui/gui_test.hpp"

namespace hetsim::gui {
namespace {

using Tester = QAbstractItemModelTester;

class ModelsTest : public QObject {
  Q_OBJECT

  std::optional<Scenario> purchase_;
  std::optional<buy::Result> bought_;

 private slots:
  void initTestCase() {
    auto s = api::load(test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml").toStdString(), {.plan = false});
    QVERIFY(s.ok());
    purchase_ = *s;
    auto r = api::buy(*purchase_, {});
    QVERIFY(r.ok());
    QVERIFY(r->front.size() >= 3);
    bought_ = *r;
  }

  void formats_money_and_time_as_the_cli() {
    QCOMPARE(format_usd(93.1e6), QString("$93.1M"));
    QCOMPARE(format_usd(412e3), QString("$412k"));
    QCOMPARE(format_usd(950), QString("$950"));
    QCOMPARE(format_seconds(311 * 86400.0), QString::fromStdString(format_duration(Duration{311 * 86400.0})));
  }

  void front_model_passes_the_tester_and_holds_buys_numbers() {
    FrontModel m;
    Tester tester(&m, Tester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    m.set_rows(front_rows(*purchase_, *bought_));
    const buy::Result& r = *bought_;
    QCOMPARE(m.rowCount(), static_cast<int>(r.front.size()));
    QCOMPARE(m.columnCount(), static_cast<int>(FrontModel::kColumns));
    for (int row = 0; row < m.rowCount(); ++row) {
      const buy::Point& p = r.front[static_cast<std::size_t>(row)];
      auto raw = [&](int col) { return m.index(row, col).data(FrontModel::kSortRole); };
      auto shown = [&](int col) { return m.index(row, col).data(Qt::DisplayRole).toString(); };
      QCOMPARE(raw(FrontModel::kTotal).toDouble(), p.total_usd);
      QCOMPARE(raw(FrontModel::kCapex).toDouble(), p.capex_usd);
      QCOMPARE(raw(FrontModel::kRun).toDouble(), p.run_usd);
      QCOMPARE(raw(FrontModel::kTime).toDouble(), p.effective_time_s);
      QCOMPARE(raw(FrontModel::kTrainedIn).toDouble(), p.trained_in_s);
      QCOMPARE(raw(FrontModel::kPower).toDouble(), p.power_kw);
      QCOMPARE(raw(FrontModel::kStep).toDouble(), p.best.step_s());
      QCOMPARE(shown(FrontModel::kTotal), format_usd(p.total_usd));
      QCOMPARE(shown(FrontModel::kTime), format_seconds(p.effective_time_s));
      QCOMPARE(shown(FrontModel::kBuy), QString::fromStdString(report::what_is_bought(*purchase_, p)));
      QCOMPARE(shown(FrontModel::kPoint), QString::number(row + 1) + (static_cast<std::size_t>(row) == r.recommended ? "*" : ""));
      QCOMPARE(m.index(row, FrontModel::kPlan).data(FrontModel::kPointRole).toULongLong(), static_cast<qulonglong>(row));
    }
    m.clear();
    QCOMPARE(m.rowCount(), 0);
  }

  void front_sorts_by_raw_values_through_a_proxy() {
    FrontModel m;
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&m);
    proxy.setSortRole(FrontModel::kSortRole);
    Tester tester(&proxy, Tester::FailureReportingMode::QtTest);
    m.set_rows(front_rows(*purchase_, *bought_));
    // The front is fastest first, so the dearest first: cheapest first is the reverse order.
    proxy.sort(FrontModel::kTotal, Qt::AscendingOrder);
    for (int row = 1; row < proxy.rowCount(); ++row)
      QVERIFY(proxy.index(row - 1, FrontModel::kTotal).data(FrontModel::kSortRole).toDouble() <=
              proxy.index(row, FrontModel::kTotal).data(FrontModel::kSortRole).toDouble());
    // "$950" sorts below "$1.2k": by value, not by text.
    proxy.sort(FrontModel::kRun, Qt::DescendingOrder);
    for (int row = 1; row < proxy.rowCount(); ++row)
      QVERIFY(proxy.index(row - 1, FrontModel::kRun).data(FrontModel::kSortRole).toDouble() >=
              proxy.index(row, FrontModel::kRun).data(FrontModel::kSortRole).toDouble());
    proxy.sort(FrontModel::kPoint, Qt::AscendingOrder);
    QCOMPARE(proxy.index(0, 0).data(FrontModel::kPointRole).toULongLong(), 0ULL);
  }

  void sensitivity_model_says_whether_the_recommendation_changes() {
    SensitivityModel m;
    Tester tester(&m, Tester::FailureReportingMode::QtTest);
    m.set_rows(sensitivity_rows(*purchase_, *bought_));
    const buy::Result& r = *bought_;
    QCOMPARE(m.rowCount(), static_cast<int>(r.sensitivity.size()));
    QCOMPARE(m.rowCount(), 6);  // two candidates' prices ±20 %, electricity ±50 %
    for (int row = 0; row < m.rowCount(); ++row) {
      const buy::Sensitivity& x = r.sensitivity[static_cast<std::size_t>(row)];
      QCOMPARE(m.index(row, SensitivityModel::kWhat).data().toString(), QString::fromStdString(x.what));
      QCOMPARE(m.index(row, 0).data(SensitivityModel::kFactorRole).toDouble(), x.factor);
      QCOMPARE(m.index(row, 0).data(SensitivityModel::kChangesRole).toBool(), x.changes);
      const QString verdict = m.index(row, SensitivityModel::kVerdict).data().toString();
      if (x.nodes.empty()) {
        QCOMPARE(verdict, QString("nothing fits the budget"));
      } else if (x.changes) {
        buy::Point shown;
        shown.nodes = x.nodes;
        QCOMPARE(verdict, "yes: buy " + QString::fromStdString(report::what_is_bought(*purchase_, shown)));
      } else {
        QCOMPARE(verdict, QString("no"));
      }
    }
    QCOMPARE(m.index(0, SensitivityModel::kChange).data().toString(),
             r.sensitivity[0].factor < 1 ? QString("-20 %") : QString("+20 %"));
    m.set_rows({});
    QCOMPARE(m.rowCount(), 0);
  }

  // The tornado: a row per price, both settings' cost changes as buy::Sensitivity gives them,
  // the largest swing first.
  void tornado_model_holds_the_sensitivitys_cost_changes() {
    TornadoModel m;
    Tester tester(&m, Tester::FailureReportingMode::QtTest);
    const buy::Result& r = *bought_;
    m.set_rows(tornado_rows(r));
    QCOMPARE(m.rowCount(), 3);  // two candidates' prices, electricity
    double last = std::numeric_limits<double>::infinity();
    int seen = 0;
    for (int row = 0; row < m.rowCount(); ++row) {
      const QString what = m.index(row, TornadoModel::kWhat).data().toString();
      const double low = m.index(row, TornadoModel::kLow).data(TornadoModel::kValueRole).toDouble();
      const double high = m.index(row, TornadoModel::kHigh).data(TornadoModel::kValueRole).toDouble();
      for (const buy::Sensitivity& x : r.sensitivity) {
        if (QString::fromStdString(x.what) != what) continue;
        QCOMPARE(x.factor < 1 ? low : high, x.total_change_usd);
        ++seen;
      }
      const double swing = std::max(std::abs(low), std::abs(high));
      QVERIFY(swing <= last);
      last = swing;
    }
    QCOMPARE(seen, static_cast<int>(r.sensitivity.size()));
    // The electricity row at +50 % changes the cost by half the recommended point's energy when
    // the recommendation stays.
    for (const buy::Sensitivity& x : r.sensitivity)
      if (x.what == "electricity" && x.factor > 1 && !x.changes)
        QVERIFY(std::abs(x.total_change_usd - 0.5 * r.front[r.recommended].energy_usd) <=
                1e-9 * r.front[r.recommended].total_usd);
    m.set_rows({});
    QCOMPARE(m.rowCount(), 0);
  }

  // Why this one: the recommended point against the runner-up by part, as buy::versus splits
  // them; the parts add up to each point's time and cost.
  void parts_models_hold_the_recommended_against_the_runner_up() {
    const buy::Result& r = *bought_;
    QVERIFY(r.runner_up != r.recommended);
    const buy::Point& a = r.front[r.recommended];
    const buy::Point& b = r.front[r.runner_up];
    const buy::Versus v = buy::versus(a, b);
    for (PartUnit unit : {PartUnit::Seconds, PartUnit::Usd}) {
      PartsModel m(unit);
      Tester tester(&m, Tester::FailureReportingMode::QtTest);
      m.set_rows(part_rows(v, unit));
      const bool time = unit == PartUnit::Seconds;
      QCOMPARE(m.rowCount(), static_cast<int>(time ? v.time_s.size() : v.cost_usd.size()));
      double chosen = 0, other = 0, difference = 0;
      for (int row = 0; row < m.rowCount(); ++row) {
        chosen += m.index(row, PartsModel::kChosen).data(PartsModel::kValueRole).toDouble();
        other += m.index(row, PartsModel::kOther).data(PartsModel::kValueRole).toDouble();
        difference += m.index(row, PartsModel::kDifference).data(PartsModel::kValueRole).toDouble();
      }
      const double ta = time ? a.trained_in_s : a.total_usd, tb = time ? b.trained_in_s : b.total_usd;
      QVERIFY(std::abs(chosen - ta) <= 1e-9 * ta);
      QVERIFY(std::abs(other - tb) <= 1e-9 * tb);
      QVERIFY(std::abs(difference - (ta - tb)) <= 1e-9 * std::max(ta, tb));
      QCOMPARE(m.index(0, PartsModel::kPart).data().toString(), time ? QString("compute") : QString("capex"));
      if (!time)
        QCOMPARE(m.index(0, PartsModel::kChosen).data().toString(), format_usd(a.capex_usd));
    }
  }

  void diagnostics_model_lists_the_readers_messages() {
    DiagnosticsModel m;
    Tester tester(&m, Tester::FailureReportingMode::QtTest);
    const std::string file = test::source_file("tests/gui/data/bad-device.toml").toStdString();
    auto bad = api::load(file, {.plan = false});
    QVERIFY(!bad.ok());
    m.set_diagnostics(bad.errors());
    QCOMPARE(m.rowCount(), static_cast<int>(bad.errors().size()));
    QCOMPARE(m.rowCount(), 2);
    const Diagnostic& d = bad.errors().front();
    QCOMPARE(m.index(0, DiagnosticsModel::kMessage).data().toString(), QString::fromStdString(d.message));
    QCOMPARE(m.index(0, DiagnosticsModel::kKey).data().toString(), QString("purchase.candidate[0].device"));
    QCOMPARE(m.index(0, DiagnosticsModel::kHint).data().toString(), QString("did you mean 'h100-sxm5'?"));
    QCOMPARE(m.index(0, DiagnosticsModel::kWhere).data().toString(), QString("bad-device.toml:21:10"));
    QCOMPARE(m.index(0, 0).data(DiagnosticsModel::kLineRole).toInt(), 21);
    QCOMPARE(m.index(1, 0).data(DiagnosticsModel::kLineRole).toInt(), 26);
    QCOMPARE(m.index(0, 0).data(Qt::ToolTipRole).toString(), QString::fromStdString(to_string(d)));
    m.set_diagnostics({});
    QCOMPARE(m.rowCount(), 0);
  }

  void breakdown_and_memory_models_hold_the_estimate() {
    auto s = api::load(test::source_file("scenarios/mixed-h100-a100.toml").toStdString());
    QVERIFY(s.ok());
    QVERIFY(s->plan.has_value());
    const analytic::Estimate e = api::estimate(*s, *s->plan);

    BreakdownModel b;
    Tester bt(&b, Tester::FailureReportingMode::QtTest);
    b.set_breakdown(e.step);
    QCOMPARE(b.rowCount(), static_cast<int>(e.step.parts.size()));
    double sum = 0;
    for (int row = 0; row < b.rowCount(); ++row) {
      QCOMPARE(b.index(row, BreakdownModel::kPart).data().toString(),
               QString::fromStdString(e.step.parts[static_cast<std::size_t>(row)].first));
      sum += b.index(row, 0).data(BreakdownModel::kSecondsRole).toDouble();
    }
    QVERIFY(std::abs(sum - e.step.total().v) <= 1e-9 * e.step.total().v);
    b.set_breakdown({});
    QCOMPARE(b.rowCount(), 0);

    MemoryModel m;
    Tester mt(&m, Tester::FailureReportingMode::QtTest);
    m.set_devices(e.device_types);
    QCOMPARE(m.rowCount(), 2);  // h100 and a100
    for (int row = 0; row < m.rowCount(); ++row) {
      const auto& d = e.device_types[static_cast<std::size_t>(row)];
      QCOMPARE(m.index(row, MemoryModel::kPool).data().toString(), QString::fromStdString(d.pool));
      QCOMPARE(m.index(row, MemoryModel::kPeak).data(MemoryModel::kBytesRole).toDouble(), d.peak_memory.v);
      QCOMPARE(m.index(row, MemoryModel::kCapacity).data(MemoryModel::kBytesRole).toDouble(), d.capacity.v);
      QCOMPARE(m.index(row, MemoryModel::kFits).data().toString(), d.fits ? QString("yes") : QString("NO"));
    }
    m.set_devices({});
    QCOMPARE(m.rowCount(), 0);
  }
};

HETSIM_GUI_SUITE(ModelsTest);

}  // namespace
}  // namespace hetsim::gui

#include "models_test.moc"
