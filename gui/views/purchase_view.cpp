#include "gui/views/purchase_view.hpp"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "gui/qt_models/format.hpp"
#include "gui/qt_models/front_model.hpp"
#include "gui/qt_models/sensitivity_model.hpp"
#include "gui/qt_models/why_model.hpp"
#include "gui/views/charts.hpp"
#include "sim/report/buy_report.hpp"
#include "sim/report/estimate_report.hpp"

namespace hetsim::gui {

namespace {

bool has_lead_times(const Scenario& s) {
  return s.purchase && std::any_of(s.purchase->candidates.begin(), s.purchase->candidates.end(),
                                   [](const PurchaseSpec::Candidate& c) { return c.lead_time_days > 0; });
}

QString esc(const std::string& s) { return qs(s).toHtmlEscaped(); }

}  // namespace

QString point_details(const Scenario& s, const buy::Result& r, std::size_t i) {
  if (!s.purchase || i >= r.front.size()) return {};
  const buy::Point& p = r.front[i];
  QString h;
  h += QObject::tr("<p><b>Point %1 of %2</b>%3</p>")
           .arg(i + 1)
           .arg(r.front.size())
           .arg(i == r.recommended ? QObject::tr(" — recommended") : QString());
  h += QObject::tr("<p><b>Buy:</b> %1</p>").arg(esc(report::what_is_bought(s, p)));
  h += QObject::tr("<p><b>Cost:</b> capex %1, run %2, <b>total %3</b></p>")
           .arg(format_usd(p.capex_usd), format_usd(p.run_usd), format_usd(p.total_usd));
  h += QObject::tr("<p><b>Time:</b> effective time to train %1").arg(format_seconds(p.effective_time_s));
  if (p.lead_time_s > 0)
    h += QObject::tr(" after a lead time of %1 (trained in %2)")
             .arg(format_seconds(p.lead_time_s), format_seconds(p.trained_in_s));
  if (s.purchase->deadline_days > 0)
    h += p.meets_deadline ? QObject::tr("; meets the deadline") : QObject::tr("; <b>misses the deadline</b>");
  h += "</p>";
  h += QObject::tr("<p><b>Power:</b> %1 kW &nbsp; <b>$/M tokens:</b> %2</p>")
           .arg(QString::number(p.power_kw, 'g', 4), QString::number(p.usd_per_million_tokens, 'g', 3));
  h += QObject::tr("<p><b>Step:</b> %1 (%2), MFU %3 %</p>")
           .arg(format_seconds(p.best.step_s()),
                p.best.verified() ? QObject::tr("simulated") : QObject::tr("estimated"),
                QString::number(100 * p.best.estimate.mfu, 'f', 1));
  if (p.idle_owned_devices > 0)
    h += QObject::tr("<p>Leaves %1 owned devices unused.</p>").arg(p.idle_owned_devices);
  h += QObject::tr("<p><b>Plan:</b> <code>%1</code></p>").arg(esc(report::plan_summary(p.scenario, p.best.plan)));
  // Against its neighbours on the front, as `hetsim buy` says it of the recommended point.
  if (i > 0) {
    const buy::Point& f = r.front[i - 1];
    h += QObject::tr("<p>vs #%1 (faster): %2 % less time for %3 more</p>")
             .arg(i)
             .arg(100 * (1 - f.trained_in_s / p.trained_in_s), 0, 'f', 1)
             .arg(format_usd(f.total_usd - p.total_usd));
  }
  if (i + 1 < r.front.size()) {
    const buy::Point& n = r.front[i + 1];
    h += QObject::tr("<p>vs #%1 (cheaper): saves %2 for %3 % more time%4</p>")
             .arg(i + 2)
             .arg(format_usd(p.total_usd - n.total_usd))
             .arg(100 * (n.trained_in_s / p.trained_in_s - 1), 0, 'f', 1)
             .arg(s.purchase->deadline_days > 0 && !n.meets_deadline ? QObject::tr(", and misses the deadline")
                                                                      : QString());
  }
  return h;
}

QString search_summary(const Scenario& s, const buy::Result& r, double seconds) {
  QString t = QObject::tr("%1 compositions searched in %2 s: %3 over budget, %4 over power, %5 too small, "
                          "%6 pruned by their bounds, %7 planned")
                  .arg(r.compositions)
                  .arg(seconds, 0, 'f', 2)
                  .arg(r.over_budget)
                  .arg(r.over_power)
                  .arg(r.too_small)
                  .arg(r.pruned)
                  .arg(r.planned);
  if (r.none_fits > 0) t += QObject::tr(" (%1 with no plan that fits)").arg(r.none_fits);
  if (r.first_point_s >= 0) t += QObject::tr("; the first point after %1 s").arg(r.first_point_s, 0, 'f', 2);
  if (r.stopped) t += QObject::tr("; STOPPED early: the front of what was searched");
  if (!r.front.empty()) return t;
  t += QObject::tr(". No composition has a plan that fits within the limits.");
  if (r.smallest_fit) {
    const buy::Point& p = *r.smallest_fit;
    t += QObject::tr(" The smallest that would fit: buy %1 (capex %2, total %3, %4 kW, %5).")
             .arg(qs(report::what_is_bought(s, p)), format_usd(p.capex_usd), format_usd(p.total_usd),
                  QString::number(p.power_kw, 'g', 4), format_seconds(p.effective_time_s));
  }
  return t;
}

PurchaseView::PurchaseView(QWidget* parent) : QWidget(parent) {
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  chart_ = new FrontChart(this);
  chart_->setMinimumSize(420, 300);
  details_ = new QLabel(this);
  details_->setWordWrap(true);
  details_->setTextFormat(Qt::RichText);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  details_->setMinimumWidth(280);
  details_->setObjectName("details");

  model_ = new FrontModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(FrontModel::kSortRole);
  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(FrontModel::kPoint, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);

  sensitivity_ = new SensitivityModel(this);
  sensitivity_table_ = new QTableView(this);
  sensitivity_table_->setModel(sensitivity_);
  sensitivity_table_->verticalHeader()->hide();
  sensitivity_table_->horizontalHeader()->setStretchLastSection(true);
  sensitivity_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  sensitivity_table_->setSelectionMode(QAbstractItemView::NoSelection);
  sensitivity_table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  sensitivity_table_->setToolTip(tr("Each price alone, over the compositions planned: does the recommended "
                                    "point change?"));
  show_plan_ = new QPushButton(tr("Show this point's plan"), this);
  show_plan_->setToolTip(tr("Its estimate, memory bars and simulated step in the Plan tab"));
  show_plan_->setEnabled(false);
  // Beside the chart: the chosen point, the sensitivity, and why the recommended point.
  side_ = new QTabWidget(this);
  auto* point_page = new QWidget(this);
  auto* point_layout = new QVBoxLayout(point_page);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(details_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  point_layout->addWidget(scroll, 1);
  point_layout->addWidget(show_plan_, 0, Qt::AlignLeft);
  side_->addTab(point_page, tr("Point"));

  tornado_model_ = new TornadoModel(this);
  tornado_ = new TornadoChart(this);
  tornado_->setMinimumHeight(220);
  auto* sensitivity_page = new QWidget(this);
  auto* sensitivity_layout = new QVBoxLayout(sensitivity_page);
  sensitivity_layout->addWidget(tornado_, 1);
  sensitivity_layout->addWidget(sensitivity_table_, 0);
  side_->addTab(sensitivity_page, tr("Sensitivity"));

  why_ = new QLabel(this);
  why_->setWordWrap(true);
  time_parts_ = new PartsModel(PartUnit::Seconds, this);
  cost_parts_ = new PartsModel(PartUnit::Usd, this);
  time_waterfall_ = new WaterfallChart(this);
  cost_waterfall_ = new WaterfallChart(this);
  time_waterfall_->setMinimumHeight(250);  // up to 9 bars
  cost_waterfall_->setMinimumHeight(190);  // up to 6
  auto* why_page = new QWidget(this);
  auto* why_layout = new QVBoxLayout(why_page);
  why_layout->addWidget(why_, 0);
  why_layout->addWidget(time_waterfall_, 3);
  why_layout->addWidget(cost_waterfall_, 2);
  auto* why_scroll = new QScrollArea(this);
  why_scroll->setWidget(why_page);
  why_scroll->setWidgetResizable(true);
  why_scroll->setFrameShape(QFrame::NoFrame);
  side_->addTab(why_scroll, tr("Why this one"));
  QWidget* side = side_;
  auto* top = new QSplitter(Qt::Horizontal, this);
  top->addWidget(chart_);
  top->addWidget(side);
  top->setStretchFactor(0, 3);
  top->setStretchFactor(1, 2);
  top->setSizes({780, 460});
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(top);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({470, 300});
  // What-if: the search's planned compositions priced again at once (api::reprice).
  what_if_box_ = new PurchaseWhatIfBox(this);
  connect(what_if_box_, &PurchaseWhatIfBox::changed, this, [this] { emit what_if_changed(); });
  what_if_box_->setEnabled(false);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(summary_);
  layout->addWidget(what_if_box_);
  layout->addWidget(split, 1);

  connect(chart_, &FrontChart::point_clicked, this, [this](int i) { select_point(static_cast<std::size_t>(i)); });
  connect(show_plan_, &QPushButton::clicked, this, [this] {
    if (selected_) emit plan_requested(*selected_);
  });
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& at) {
    emit plan_requested(static_cast<std::size_t>(at.data(FrontModel::kPointRole).toULongLong()));
  });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          [this] { on_table_selection(); });
  clear(tr("Open a scenario with a [purchase] table and press Run."));
}

PurchaseView::~PurchaseView() = default;

void PurchaseView::clear(const QString& message) {
  outcome_.reset();
  searched_.reset();
  what_if_box_->setEnabled(false);
  selected_.reset();
  model_->clear();
  chart_->set_points({});
  chart_->set_x_limit(std::nullopt, {});
  chart_->set_y_limit(std::nullopt, {});
  details_->clear();
  show_plan_->setEnabled(false);
  sensitivity_->set_rows({});
  sensitivity_table_->hide();
  show_why();
  summary_->setText(message);
}

void PurchaseView::show_outcome(std::shared_ptr<const BuyOutcome> outcome) {
  outcome_ = std::move(outcome);
  selected_.reset();
  const Scenario& s = outcome_->scenario;
  const buy::Result& r = outcome_->result;
  if (!outcome_->what_if && outcome_ != searched_) {
    // A new search (finished or growing): the what-if values start from its scenario's. (The
    // search shown again after the values went back to its own keeps them as they are.)
    searched_ = outcome_->partial ? nullptr : outcome_;
    what_if_box_->set_scenario(s);
    what_if_box_->setEnabled(searched_ != nullptr);
  }
  model_->set_rows(front_rows(s, r));
  table_->resizeColumnsToContents();
  table_->setColumnWidth(FrontModel::kBuy, std::min(table_->columnWidth(FrontModel::kBuy), 320));

  const bool leads = has_lead_times(s);
  chart_->set_titles(tr("%1: total cost against time to train").arg(qs(s.name)),
                     leads ? tr("lead time + effective time to train (days)") : tr("effective time to train (days)"),
                     tr("total cost (M$)"));
  // Without lead times, "trained in" is the time to train: one column says it.
  table_->setColumnHidden(FrontModel::kLead, !leads);
  table_->setColumnHidden(FrontModel::kTrainedIn, !leads);
  std::vector<ChartPoint> points;
  for (std::size_t i = 0; i < r.front.size(); ++i) {
    const buy::Point& p = r.front[i];
    ChartPoint c;
    c.x = p.trained_in_s / 86400;
    c.y = p.total_usd / 1e6;
    c.highlighted = i == r.recommended;
    c.tooltip = tr("#%1%2: buy %3\ntotal %4 in %5")
                    .arg(i + 1)
                    .arg(c.highlighted ? tr(" (recommended)") : QString())
                    .arg(qs(report::what_is_bought(s, p)), format_usd(p.total_usd), format_seconds(p.trained_in_s));
    points.push_back(c);
  }
  chart_->set_points(std::move(points));
  const PurchaseSpec& ps = *s.purchase;
  if (ps.deadline_days > 0)
    chart_->set_x_limit(ps.deadline_days, tr("deadline"));
  else
    chart_->set_x_limit(std::nullopt, {});
  if (ps.budget_usd > 0)
    chart_->set_y_limit(ps.budget_usd / 1e6, s.cost.mode == CostSpec::Mode::Own ? tr("budget (capex)")
                                                                                 : tr("budget (rent)"));
  else
    chart_->set_y_limit(std::nullopt, {});
  const QString summary = outcome_->partial
                              ? tr("Searching… %n point(s) on the front so far, after %1 s (the recommendation "
                                   "comes at the end)", "", static_cast<int>(r.front.size()))
                                    .arg(outcome_->seconds, 0, 'f', 1)
                              : search_summary(s, r, outcome_->seconds);
  if (outcome_->what_if)
    summary_->setText(tr("<b>What if</b> %1: the %2 compositions the search planned, priced again without "
                         "planning again (%3 over the limits now). ")
                          .arg(describe(searched_ ? searched_->scenario : s, what_if()).toHtmlEscaped())
                          .arg(r.planned_points.size())
                          .arg(outcome_->refused) +
                      (outcome_->may_join > 0
                           ? tr("<b>%n composition(s) never planned could join the front</b>: put these values in "
                                "the scenario and run the search again. ",
                                "", static_cast<int>(outcome_->may_join))
                           : QString()) +
                      "<br>" + summary.toHtmlEscaped());
  else
    summary_->setText(summary);
  sensitivity_->set_rows(sensitivity_rows(s, r));
  sensitivity_table_->setVisible(sensitivity_->rowCount() > 0);
  sensitivity_table_->resizeColumnsToContents();
  sensitivity_table_->setFixedHeight(sensitivity_table_->horizontalHeader()->height() +
                                     sensitivity_table_->verticalHeader()->length() + 4);
  show_why();
  if (!outcome_->partial && !r.front.empty()) select_point(r.recommended);
}

void PurchaseView::show_why() {
  const BuyOutcome* o = outcome_ && !outcome_->partial ? outcome_.get() : nullptr;
  const buy::Result* r = o ? &o->result : nullptr;
  const std::optional<std::size_t> at = r && selected_ && *selected_ < r->front.size() ? selected_ : std::nullopt;
  const bool recommended = at && *at == r->recommended;
  // The sensitivity as a tornado: by how much the recommendation's total cost moves with each
  // price (api::buy's or api::reprice's figures; scaled to the axis' unit only), or, for another
  // point, that point's own cost (its composition priced by buy::price at each setting).
  std::vector<TornadoModelRow> rows;
  if (r && (recommended || !at)) rows = tornado_rows(*r);
  if (r && at && !recommended) rows = point_tornado_rows(o->scenario, *r, *at);
  tornado_model_->set_rows(std::move(rows));
  double swing = 0;
  for (const TornadoModelRow& t : tornado_model_->rows())
    swing = std::max({swing, std::abs(t.low_change_usd), std::abs(t.high_change_usd)});
  const bool millions = swing >= 1e6;
  const double unit = millions ? 1e6 : 1e3;
  std::vector<TornadoRow> bars;
  for (const TornadoModelRow& t : tornado_model_->rows())
    bars.push_back({t.what, t.low_change_usd / unit, t.high_change_usd / unit});
  tornado_->set_titles(at && !recommended ? tr("Point #%1's total cost, each price alone").arg(*at + 1)
                                          : tr("The recommendation's total cost, each price alone"),
                       millions ? tr("change (M$)") : tr("change (k$)"), tr("lower price"), tr("higher price"));
  tornado_->set_rows(std::move(bars));

  // Why this point: the recommended one against the runner-up, any other against the
  // recommended one; their difference by part (buy::versus).
  const std::size_t other_i = !at ? 0 : recommended ? r->runner_up : r->recommended;
  if (!at || other_i == *at) {
    time_parts_->set_rows({});
    cost_parts_->set_rows({});
    time_waterfall_->set_bars({});
    cost_waterfall_->set_bars({});
    why_->setText(r && !r->front.empty() && r->front.size() == 1
                      ? tr("The front has one point: nothing to compare it with.")
                      : QString());
    return;
  }
  const buy::Point& chosen = r->front[*at];
  const buy::Point& other = r->front[other_i];
  const buy::Versus v = buy::versus(chosen, other);
  time_parts_->set_rows(part_rows(v, PartUnit::Seconds));
  cost_parts_->set_rows(part_rows(v, PartUnit::Usd));
  const QString against = recommended ? tr("Recommended #%1 against the runner-up #%2 (the objective's second choice)")
                                      : tr("#%1 against the recommended #%2");
  why_->setText(tr("%1: %2 until trained instead of %3, %4 instead of %5.")
                    .arg(against.arg(*at + 1).arg(other_i + 1))
                    .arg(format_seconds(chosen.trained_in_s), format_seconds(other.trained_in_s),
                         format_usd(chosen.total_usd), format_usd(other.total_usd)));
  // Parts that are nothing in both points (rent when owning, a lead time of 0) are left out.
  auto bars_of = [](const PartsModel& m, double scale) {
    std::vector<std::pair<QString, double>> parts;
    for (const PartRow& p : m.rows())
      if (p.other != 0 || p.chosen != 0) parts.emplace_back(p.part, p.difference / scale);
    return parts;
  };
  const QString first = recommended ? tr("runner-up #%1").arg(other_i + 1) : tr("recommended #%1").arg(other_i + 1);
  const QString last = recommended ? tr("recommended #%1").arg(*at + 1) : tr("#%1").arg(*at + 1);
  time_waterfall_->set_titles(tr("Time until trained: red adds, green saves"), tr("days"));
  time_waterfall_->set_bars(
      waterfall(first, other.trained_in_s / 86400, bars_of(*time_parts_, 86400), last, chosen.trained_in_s / 86400));
  cost_waterfall_->set_titles(tr("Total cost: red adds, green saves"), tr("M$"));
  cost_waterfall_->set_bars(
      waterfall(first, other.total_usd / 1e6, bars_of(*cost_parts_, 1e6), last, chosen.total_usd / 1e6));
}

void PurchaseView::show_partial(const Scenario& s, const std::vector<buy::Point>& front, double seconds) {
  auto o = std::make_shared<BuyOutcome>();
  o->scenario = s;
  o->result.front = front;
  o->result.recommended = front.size();  // none yet
  o->seconds = seconds;
  o->partial = true;
  show_outcome(std::move(o));
}

void PurchaseView::select_point(std::size_t i) {
  if (!outcome_ || i >= outcome_->result.front.size() || selecting_) return;
  selecting_ = true;
  selected_ = i;
  chart_->set_selected(static_cast<int>(i));
  details_->setText(point_details(outcome_->scenario, outcome_->result, i));
  show_plan_->setEnabled(true);
  for (int row = 0; row < proxy_->rowCount(); ++row) {
    const QModelIndex at = proxy_->index(row, 0);
    if (at.data(FrontModel::kPointRole).toULongLong() == i) {
      table_->selectionModel()->select(at, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
      table_->scrollTo(at);
      break;
    }
  }
  selecting_ = false;
  show_why();
  emit point_selected(i);
}

void PurchaseView::on_table_selection() {
  if (selecting_) return;
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return;
  select_point(static_cast<std::size_t>(rows.front().data(FrontModel::kPointRole).toULongLong()));
}

QString PurchaseView::details_text() const { return details_->text(); }
PurchaseWhatIf PurchaseView::what_if() const { return what_if_box_->values(); }
double PurchaseView::price_factor() const { return what_if_box_->price_factor()->value(); }
double PurchaseView::electricity_usd_per_kwh() const { return what_if_box_->electricity()->value(); }
QDoubleSpinBox* PurchaseView::price_control() const { return what_if_box_->price_factor(); }
QDoubleSpinBox* PurchaseView::electricity_control() const { return what_if_box_->electricity(); }
QString PurchaseView::summary_text() const { return summary_->text(); }
QString PurchaseView::why_text() const { return why_->text(); }

}  // namespace hetsim::gui
