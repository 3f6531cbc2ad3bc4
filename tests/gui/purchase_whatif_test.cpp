// What-if on a purchase search: the prices and electricity of the purchase view re-price the
// search's front at once, as api::reprice does for the changed scenario; nothing is exported
// from a re-pricing; the scenario's values bring the search's own answer back.
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

#include "gui/app/main_window.hpp"
#include "gui/qt_models/front_model.hpp"
#include "gui/qt_models/sensitivity_model.hpp"
#include "gui/qt_models/why_model.hpp"
#include "gui/views/charts.hpp"
#include "gui/views/plan_view.hpp"
#include "gui/views/purchase_view.hpp"
#include "sim/api/api.hpp"
#include "tests/gui/gui_test.hpp"
#include "tests/gui/window_support.hpp"

namespace hetsim::gui {
namespace {

// The front the view shows equals `x`'s: the table's numbers, the chart's points, the
// recommendation.
void expect_shown(const PurchaseView& pv, const buy::Result& x) {
  const auto& rows = pv.model()->rows();
  QCOMPARE(rows.size(), x.front.size());
  QCOMPARE(pv.chart()->point_count(), static_cast<int>(x.front.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    QCOMPARE(rows[i].total_usd, x.front[i].total_usd);
    QCOMPARE(rows[i].capex_usd, x.front[i].capex_usd);
    QCOMPARE(rows[i].run_usd, x.front[i].run_usd);
    QCOMPARE(rows[i].trained_in_s, x.front[i].trained_in_s);
    QCOMPARE(rows[i].recommended, i == x.recommended);
  }
  QCOMPARE(pv.selected_point(), std::optional<std::size_t>(x.recommended));
  QCOMPARE(pv.sensitivity_model()->rowCount(), static_cast<int>(x.sensitivity.size()));
  // The tornado: a bar pair per price, the cost changes of x's sensitivity in k$ or M$.
  const auto tornado = tornado_rows(x);
  QCOMPARE(pv.tornado()->rows().size(), tornado.size());
  for (std::size_t i = 0; i < tornado.size(); ++i) {
    QCOMPARE(pv.tornado()->rows()[i].label, tornado[i].what);
    const double ratio = tornado[i].high_change_usd != 0 ? pv.tornado()->rows()[i].high / tornado[i].high_change_usd : 0;
    QVERIFY(ratio == 0 || ratio == 1e-3 || ratio == 1e-6);
  }
  // The waterfalls: from the runner-up's total to the recommended's, through the parts that
  // buy::versus gives.
  QVERIFY(x.runner_up != x.recommended);
  const auto& time = pv.time_waterfall()->bars();
  QVERIFY(time.size() >= 3);
  QCOMPARE(time.front().to, x.front[x.runner_up].trained_in_s / 86400);
  QCOMPARE(time.back().to, x.front[x.recommended].trained_in_s / 86400);
  QVERIFY(std::abs(time[time.size() - 2].to - time.back().to) <= 1e-9 * time.back().to);
  const auto& cost = pv.cost_waterfall()->bars();
  QCOMPARE(cost.front().to, x.front[x.runner_up].total_usd / 1e6);
  QCOMPARE(cost.back().to, x.front[x.recommended].total_usd / 1e6);
  QVERIFY(std::abs(cost[cost.size() - 2].to - cost.back().to) <= 1e-9 * cost.back().to);
  QCOMPARE(pv.cost_parts_model()->rowCount(), 4);
  QVERIFY(pv.why_text().contains(QString("runner-up #%1").arg(x.runner_up + 1)));
}

class PurchaseWhatIfTest : public QObject {
  Q_OBJECT

 private slots:
  void prices_and_electricity_reprice_the_front() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString file = test::source_file("tests/gui/data/small-purchase.toml");
    QVERIFY(w.open_file(file));
    PurchaseView* pv = w.purchase_view();
    QVERIFY(!pv->price_control()->isEnabled());  // nothing to re-price yet
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && pv->outcome() && !pv->outcome()->partial, kSearchTimeoutMs);
    const auto searched = pv->searched();
    QVERIFY(searched);
    QCOMPARE(searched.get(), pv->outcome().get());
    const Scenario& s = searched->scenario;
    QVERIFY(!searched->result.front.empty());
    // The controls start at the scenario's values and are enabled.
    QCOMPARE(pv->price_factor(), 1.0);
    QCOMPARE(pv->electricity_usd_per_kwh(), s.cost.electricity_usd_per_kwh);
    QVERIFY(pv->price_control()->isEnabled() && pv->price_control()->isVisibleTo(pv));

    // Dearer devices: the front is api::reprice's for the scenario with those prices.
    pv->price_control()->setValue(2.0);
    QVERIFY(pv->outcome()->what_if);
    WhatIf wi = what_if_of(s);
    wi.price_factor = 2.0;
    const Scenario dear = apply_what_if(s, wi);
    auto x = api::reprice(s, dear, searched->result);
    QVERIFY(x.ok());
    expect_shown(*pv, x->result);
    // Doubled prices make every point that buys something dearer than at the scenario's prices.
    bool dearer = false;
    for (const buy::Point& p : x->result.front)
      for (const buy::Point& q : searched->result.front)
        if (p.nodes == q.nodes && p.capex_usd > 0) {
          QCOMPARE(p.capex_usd, 2 * q.capex_usd);
          dearer = true;
        }
    QVERIFY(dearer);
    QVERIFY2(pv->summary_text().contains("What if"), qPrintable(pv->summary_text()));
    // Nothing to export from a re-pricing.
    QVERIFY(!w.export_csv(QDir::temp().filePath("never-written.csv")));
    QVERIFY(!QFile::exists(QDir::temp().filePath("never-written.csv")));
    QVERIFY(!quiet.errors.isEmpty());

    // Dearer electricity on top.
    pv->electricity_control()->setValue(0.4);
    wi.electricity_usd_per_kwh = 0.4;
    const Scenario both = apply_what_if(s, wi);
    auto y = api::reprice(s, both, searched->result);
    QVERIFY(y.ok());
    expect_shown(*pv, y->result);
    QVERIFY(y->result.front[0].energy_usd > x->result.front[0].energy_usd ||
            y->result.front[0].nodes != x->result.front[0].nodes);

    // A re-priced point's plan is shown at the new prices.
    const std::size_t rec = y->result.recommended;
    QVERIFY(w.show_point_plan(rec));
    QCOMPARE(w.plan_view()->what_if().electricity_usd_per_kwh, 0.4);
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && w.plan_view()->simulation(), kSearchTimeoutMs);

    // The scenario's values again: the search's own answer, exports back.
    pv->price_control()->setValue(1.0);
    pv->electricity_control()->setValue(s.cost.electricity_usd_per_kwh);
    QCOMPARE(pv->outcome().get(), searched.get());
    expect_shown(*pv, searched->result);
    QTemporaryDir dir;
    QVERIFY(w.export_csv(dir.filePath("front.csv")));
  }
};

HETSIM_GUI_SUITE(PurchaseWhatIfTest);

}  // namespace
}  // namespace hetsim::gui

#include "purchase_whatif_test.moc"
