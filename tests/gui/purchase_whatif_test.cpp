// What-if on a purchase search: the prices and electricity of the purchase view re-price the
// search's front at once, as api::reprice does for the changed scenario; nothing is exported
// from a re-pricing; the scenario's values bring the search's own answer back. Each of the other
// controls (a candidate's prices, PUE, rent or own, budget, power limit, deadline) re-prices the
// front as api::reprice does for the scenario with that one value changed, amortisation and lead
// times included. A point picked other than the recommended one gets its own sensitivity and
// "why this one" against the recommended point.
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <functional>

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

// The table's rows and the chart's points are `x`'s front, with its recommendation marked.
void expect_rows(const PurchaseView& pv, const buy::Result& x) {
  const auto& rows = pv.model()->rows();
  QCOMPARE(rows.size(), x.front.size());
  QCOMPARE(pv.chart()->point_count(), static_cast<int>(x.front.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    QCOMPARE(rows[i].total_usd, x.front[i].total_usd);
    QCOMPARE(rows[i].capex_usd, x.front[i].capex_usd);
    QCOMPARE(rows[i].run_usd, x.front[i].run_usd);
    QCOMPARE(rows[i].trained_in_s, x.front[i].trained_in_s);
    QCOMPARE(rows[i].power_kw, x.front[i].power_kw);
    QCOMPARE(rows[i].meets_deadline, x.front[i].meets_deadline);
    QCOMPARE(rows[i].recommended, i == x.recommended);
  }
}

// The front the view shows equals `x`'s: the table's numbers, the chart's points, the
// recommendation.
void expect_shown(const PurchaseView& pv, const buy::Result& x) {
  expect_rows(pv, x);
  QCOMPARE(pv.selected_point(), std::optional<std::size_t>(x.recommended));
  QCOMPARE(pv.sensitivity_model()->rowCount(), static_cast<int>(x.sensitivity.size()));
  // The tornado: a bar pair per price, the cost changes of x's sensitivity in k$ or M$.
  const auto tornado = tornado_rows(x);
  QCOMPARE(pv.tornado()->rows().size(), tornado.size());
  for (std::size_t i = 0; i < tornado.size(); ++i) {
    QCOMPARE(pv.tornado()->rows()[i].label, tornado[i].what);
    const double ratio = tornado[i].high_change_usd != 0 ? pv.tornado()->rows()[i].high / tornado[i].high_change_usd : 0;
    // In k$ or M$: x / 1000 / x is 1e-3 to within rounding, not always exactly.
    QVERIFY2(ratio == 0 || qFuzzyCompare(ratio, 1e-3) || qFuzzyCompare(ratio, 1e-6), qPrintable(QString::number(ratio, 'g', 17)));
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

// The front, recommendation and sensitivity the view shows are `x`'s (`x`'s front may be empty
// or hold one point, which expect_shown does not allow).
void expect_front(const PurchaseView& pv, const buy::Result& x) {
  expect_rows(pv, x);
  QCOMPARE(pv.sensitivity_model()->rowCount(), static_cast<int>(x.sensitivity.size()));
  if (!x.front.empty() && x.runner_up != x.recommended) expect_shown(pv, x);
}

// Whether two results have the same front: compositions, figures, deadline and recommendation.
bool same_front(const buy::Result& a, const buy::Result& b) {
  if (a.front.size() != b.front.size() || a.recommended != b.recommended) return false;
  for (std::size_t i = 0; i < a.front.size(); ++i) {
    const buy::Point &p = a.front[i], &q = b.front[i];
    if (p.nodes != q.nodes || p.total_usd != q.total_usd || p.trained_in_s != q.trained_in_s ||
        p.power_kw != q.power_kw || p.meets_deadline != q.meets_deadline)
      return false;
  }
  return true;
}

class PurchaseWhatIfTest : public QObject {
  Q_OBJECT

 private slots:
  void prices_and_electricity_reprice_the_front() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    const QString file = test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml");
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

  // Each control alone: the shown front is api::reprice's for the searched scenario with that one
  // value changed (set here on the scenario, not through the view's code), it differs from the
  // search's, and setting the control back brings the search's own answer back.
  void each_control_reprices_as_api_reprice_says() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    QVERIFY(w.open_file(test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml")));
    PurchaseView* pv = w.purchase_view();
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && pv->outcome() && !pv->outcome()->partial, kSearchTimeoutMs);
    const auto searched = pv->searched();
    QVERIFY(searched);
    const Scenario& s = searched->scenario;
    const buy::Result& r = searched->result;
    QVERIFY(r.front.size() >= 2);
    PurchaseWhatIfBox* box = pv->what_if_box();
    QVERIFY(box->isEnabled());
    QCOMPARE(box->candidate_count(), s.purchase->candidates.size());
    QCOMPARE(box->candidate_count(), std::size_t{2});
    QVERIFY(pv->what_if().changes_nothing());
    // The controls start at the scenario's values.
    QCOMPARE(box->pue()->value(), s.cost.pue);
    QCOMPARE(box->budget()->value(), s.purchase->budget_usd);
    QCOMPARE(box->deadline()->value(), s.purchase->deadline_days);
    QCOMPARE(box->power()->value(), 0.0);
    QCOMPARE(box->mode()->currentText(), QString("own"));
    QCOMPARE(box->candidate_purchase(0)->value(), s.purchase->candidates[0].pool.device.purchase_usd);
    QCOMPARE(box->candidate_rent(1)->value(), s.purchase->candidates[1].pool.device.price_usd_per_hour);

    // Limits that refuse part of the front, or move the deadline across it.
    double max_capex = 0, max_kw = 0;
    bool any_meets = false;
    for (const buy::Point& p : r.front) {
      max_capex = std::max(max_capex, p.capex_usd);
      max_kw = std::max(max_kw, p.power_kw);
      any_meets = any_meets || p.meets_deadline;
    }
    QVERIFY(max_capex > 0);
    const double deadline = any_meets ? std::floor(r.front.front().trained_in_s / 86400 / 2)
                                      : std::ceil(2 * r.front.back().trained_in_s / 86400);
    QVERIFY(deadline > 0);

    struct Case {
      QString what;
      std::function<void()> set, reset;
      std::function<void(Scenario&)> change;  // the same value, on the scenario
    };
    auto spin_case = [](QString what, QDoubleSpinBox* spin, double v, std::function<void(Scenario&, double)> put) {
      const double before = spin->value();
      return Case{what, [spin, v] { spin->setValue(v); }, [spin, before] { spin->setValue(before); },
                  [spin, put](Scenario& x) { put(x, spin->value()); }};
    };
    auto candidate = [&](std::size_t k) -> const hw::DeviceSpec& { return s.purchase->candidates[k].pool.device; };
    std::vector<Case> cases;
    cases.push_back(spin_case("h100 price", box->candidate_purchase(0), 3 * candidate(0).purchase_usd,
                              [](Scenario& x, double v) { x.purchase->candidates[0].pool.device.purchase_usd = v; }));
    cases.push_back(spin_case("h200 price", box->candidate_purchase(1), 0.4 * candidate(1).purchase_usd,
                              [](Scenario& x, double v) { x.purchase->candidates[1].pool.device.purchase_usd = v; }));
    cases.push_back(spin_case("PUE", box->pue(), 2.0, [](Scenario& x, double v) { x.cost.pue = v; }));
    QCOMPARE(box->amortisation()->value(), s.cost.amortisation_years);
    cases.push_back(spin_case("amortisation", box->amortisation(), 2.0,
                              [](Scenario& x, double v) { x.cost.amortisation_years = v; }));
    QCOMPARE(box->candidate_lead_time(0)->value(), s.purchase->candidates[0].lead_time_days);
    cases.push_back(spin_case("h100 lead time", box->candidate_lead_time(0), 60,
                              [](Scenario& x, double v) { x.purchase->candidates[0].lead_time_days = v; }));
    cases.push_back(spin_case("budget", box->budget(), std::round(max_capex / 2),
                              [](Scenario& x, double v) { x.purchase->budget_usd = v; }));
    cases.push_back(spin_case("power limit", box->power(), std::floor(max_kw * 0.9),
                              [](Scenario& x, double v) { x.purchase->power_kw = v; }));
    cases.push_back(spin_case("deadline", box->deadline(), deadline,
                              [](Scenario& x, double v) { x.purchase->deadline_days = v; }));
    QComboBox* mode = box->mode();
    cases.push_back(Case{"rent", [mode] { mode->setCurrentIndex(mode->findText("rent")); },
                         [mode] { mode->setCurrentIndex(mode->findText("own")); },
                         [](Scenario& x) { x.cost.mode = CostSpec::Mode::Rent; }});
    // A candidate's rent counts when renting: with the mode, the rent of the first candidate.
    QDoubleSpinBox* rent0 = box->candidate_rent(0);
    const double rent_before = rent0->value();
    QVERIFY(rent_before > 0);
    cases.push_back(Case{"rent h100 dearer",
                         [mode, rent0, rent_before] {
                           mode->setCurrentIndex(mode->findText("rent"));
                           rent0->setValue(5 * rent_before);
                         },
                         [mode, rent0, rent_before] {
                           rent0->setValue(rent_before);
                           mode->setCurrentIndex(mode->findText("own"));
                         },
                         [rent0](Scenario& x) {
                           x.cost.mode = CostSpec::Mode::Rent;
                           x.purchase->candidates[0].pool.device.price_usd_per_hour = rent0->value();
                         }});
    const Scenario rent_only = [&] {
      Scenario x = s;
      x.cost.mode = CostSpec::Mode::Rent;
      return x;
    }();
    auto rent_front = api::reprice(s, rent_only, r);
    QVERIFY(rent_front.ok());

    for (const Case& c : cases) {
      c.set();
      QVERIFY2(pv->outcome()->what_if, qPrintable(c.what));
      Scenario changed = s;
      c.change(changed);
      auto x = api::reprice(s, changed, r);
      QVERIFY2(x.ok(), qPrintable(c.what));
      expect_front(*pv, x->result);
      if (QTest::currentTestFailed()) QFAIL(qPrintable("shown front differs from api::reprice's: " + c.what));
      QVERIFY2(!same_front(x->result, r), qPrintable(c.what + ": the front did not change"));
      if (c.what == "rent h100 dearer") QVERIFY(!same_front(x->result, rent_front->result));
      QCOMPARE(pv->outcome()->refused, x->refused);
      QVERIFY2(pv->summary_text().contains("What if"), qPrintable(pv->summary_text()));
      c.reset();
      QVERIFY2(pv->what_if().changes_nothing(), qPrintable(c.what));
      QCOMPARE(pv->outcome().get(), searched.get());
    }

    // A power limit below what the owned node draws: nothing fits, an empty re-priced front, as
    // api::reprice says.
    box->power()->setValue(1);
    Scenario starved = s;
    starved.purchase->power_kw = 1;
    auto none = api::reprice(s, starved, r);
    QVERIFY(none.ok());
    QVERIFY(none->result.front.empty());
    expect_front(*pv, none->result);
    QVERIFY2(pv->summary_text().contains("power limit 1 kW"), qPrintable(pv->summary_text()));
  }
  void a_picked_point_has_its_own_sensitivity_and_why() {
    Quiet quiet;
    MainWindow w;
    w.set_prompts(quiet.prompts());
    QVERIFY(w.open_file(test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml")));
    PurchaseView* pv = w.purchase_view();
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(idle(w) && pv->outcome() && !pv->outcome()->partial, kSearchTimeoutMs);
    const auto searched = pv->searched();
    const Scenario& s = searched->scenario;
    const buy::Result& r = searched->result;
    QVERIFY(r.front.size() >= 2);
    QAbstractItemModelTester tornado_tester(pv->tornado_model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester time_tester(pv->time_parts_model(), QAbstractItemModelTester::FailureReportingMode::QtTest);

    // Each point other than the recommended one, picked in the table.
    for (std::size_t i = 0; i < r.front.size(); ++i) {
      if (i == r.recommended) continue;
      for (int row = 0; row < pv->proxy()->rowCount(); ++row)
        if (pv->proxy()->index(row, 0).data(FrontModel::kPointRole).toULongLong() == i)
          pv->table()->selectRow(row);
      QCOMPARE(pv->selected_point(), std::optional<std::size_t>(i));
      const buy::Point& picked = r.front[i];
      const buy::Point& rec = r.front[r.recommended];

      // Why: against the recommended point, by buy::versus's parts, from its total to the picked one's.
      QVERIFY2(pv->why_text().startsWith(QString("#%1 against the recommended #%2").arg(i + 1).arg(r.recommended + 1)),
               qPrintable(pv->why_text()));
      const buy::Versus v = buy::versus(picked, rec);
      QCOMPARE(pv->time_parts_model()->rows().size(), v.time_s.size());
      for (std::size_t k = 0; k < v.time_s.size(); ++k) {
        QCOMPARE(pv->time_parts_model()->rows()[k].difference, v.time_s[k].value);
        QCOMPARE(pv->time_parts_model()->rows()[k].chosen, v.chosen_time[k].value);
      }
      const auto& time = pv->time_waterfall()->bars();
      QVERIFY(time.size() >= 3);
      QCOMPARE(time.front().to, rec.trained_in_s / 86400);
      QCOMPARE(time.back().to, picked.trained_in_s / 86400);
      QVERIFY(std::abs(time[time.size() - 2].to - time.back().to) <= 1e-9 * time.back().to);
      const auto& cost = pv->cost_waterfall()->bars();
      QCOMPARE(cost.front().to, rec.total_usd / 1e6);
      QCOMPARE(cost.back().to, picked.total_usd / 1e6);
      QVERIFY(std::abs(cost[cost.size() - 2].to - cost.back().to) <= 1e-9 * cost.back().to);

      // Sensitivity: this point's own cost at each of the search's settings. Where the point
      // stays on the front api::reprice gives at that setting (the price set through the what-if
      // values), the change is that front's figure.
      const auto& rows = pv->tornado_model()->rows();
      QCOMPARE(rows.size(), tornado_rows(r).size());
      QVERIFY(pv->tornado()->title().contains(QString("Point #%1").arg(i + 1)));
      int checked = 0;
      for (const buy::Sensitivity& x : r.sensitivity) {
        PurchaseWhatIf wi;
        if (x.what == "electricity") {
          wi.electricity_usd_per_kwh = s.cost.electricity_usd_per_kwh * x.factor;
        } else {
          wi.candidates.resize(s.purchase->candidates.size());
          for (std::size_t k = 0; k < s.purchase->candidates.size(); ++k)
            if (s.purchase->candidates[k].pool.name + " price" == x.what) {
              const hw::DeviceSpec& d = s.purchase->candidates[k].pool.device;
              wi.candidates[k] = {d.purchase_usd * x.factor, d.price_usd_per_hour * x.factor, std::nullopt};
            }
          QVERIFY(!wi.changes_nothing());
        }
        auto y = api::reprice(s, apply_purchase_what_if(s, wi), r);
        QVERIFY(y.ok());
        const auto row = std::find_if(rows.begin(), rows.end(),
                                      [&](const TornadoModelRow& t) { return t.what == QString::fromStdString(x.what); });
        QVERIFY(row != rows.end());
        const double shown = x.factor < 1 ? row->low_change_usd : row->high_change_usd;
        for (const buy::Point& p : y->result.front)
          if (p.nodes == picked.nodes) {
            QCOMPARE(shown, p.total_usd - picked.total_usd);
            ++checked;
          }
        // Dearer is dearer, cheaper cheaper (or the same, for a price the point does not pay).
        QVERIFY(x.factor > 1 ? shown >= 0 : shown <= 0);
      }
      QVERIFY2(checked > 0, "the picked point left every re-priced front");
      QVERIFY(std::any_of(rows.begin(), rows.end(), [](const TornadoModelRow& t) { return t.high_change_usd > 0; }));
    }

    // The recommended point again: the search's sensitivity, against the runner-up.
    pv->select_point(r.recommended);
    expect_shown(*pv, r);
    QVERIFY(pv->tornado()->title().contains("recommendation"));
    QVERIFY(quiet.errors.isEmpty());
  }
};

HETSIM_GUI_SUITE(PurchaseWhatIfTest);

}  // namespace
}  // namespace hetsim::gui

#include "purchase_whatif_test.moc"
