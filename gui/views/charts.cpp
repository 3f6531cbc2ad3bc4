#include "gui/views/charts.hpp"

#include <QCursor>
#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QHorizontalBarSeries>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QChartView>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hetsim::gui {

struct FrontChart::Impl {
  QChart* chart = nullptr;
  QChartView* view = nullptr;
  QValueAxis* x = nullptr;
  QValueAxis* y = nullptr;
  QLineSeries* line = nullptr;
  QScatterSeries* points = nullptr;
  QScatterSeries* highlighted = nullptr;
  QScatterSeries* selected = nullptr;
  QLineSeries* x_limit = nullptr;
  QLineSeries* y_limit = nullptr;
};

namespace {

// The small charts beside the front: labels a point smaller than the window's.
void compact(QChart* chart, QAbstractAxis* categories) {
  QFont f = categories->labelsFont();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() - 1));
  categories->setLabelsFont(f);
  QFont t = chart->titleFont();
  t.setPointSizeF(std::max(6.0, f.pointSizeF()));
  t.setBold(true);
  chart->setTitleFont(t);
}

// A horizontal bar chart's frame: categories on the left, values at the bottom, the series on
// both, and the chart's view filling `self`.
QChartView* mount_bars(QWidget* self, QChart* chart, QAbstractBarSeries* series, QBarCategoryAxis* categories,
                       QValueAxis* values) {
  chart->addSeries(series);
  chart->addAxis(categories, Qt::AlignLeft);
  chart->addAxis(values, Qt::AlignBottom);
  compact(chart, categories);
  series->attachAxis(categories);
  series->attachAxis(values);
  auto* view = new QChartView(chart, self);
  view->setRenderHint(QPainter::Antialiasing);
  auto* layout = new QVBoxLayout(self);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(view);
  return view;
}

void hide_from_legend(QChart* chart, QAbstractSeries* s) {
  for (QLegendMarker* m : chart->legend()->markers(s)) m->setVisible(false);
}

// A round upper bound for an axis: 1, 2 or 5 times a power of ten, above `v`.
double nice_ceiling(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

}  // namespace

FrontChart::FrontChart(QWidget* parent) : QWidget(parent), impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.chart = new QChart();
  d.chart->setAnimationOptions(QChart::NoAnimation);
  d.chart->legend()->setAlignment(Qt::AlignBottom);
  d.x = new QValueAxis();
  d.y = new QValueAxis();
  d.x->setLabelFormat("%.0f");
  d.y->setLabelFormat("%.3g");
  d.chart->addAxis(d.x, Qt::AlignBottom);
  d.chart->addAxis(d.y, Qt::AlignLeft);

  d.line = new QLineSeries();
  d.line->setName(tr("front"));
  d.points = new QScatterSeries();
  d.points->setMarkerSize(10);
  d.highlighted = new QScatterSeries();
  d.highlighted->setName(tr("recommended"));
  d.highlighted->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  d.highlighted->setMarkerSize(14);
  d.highlighted->setColor(QColor(0xe0, 0x8a, 0x00));
  d.selected = new QScatterSeries();
  d.selected->setName(tr("selected"));
  d.selected->setMarkerSize(22);
  d.selected->setColor(Qt::transparent);
  d.selected->setBorderColor(QColor(0xc0, 0x20, 0x20));
  QPen ring(QColor(0xc0, 0x20, 0x20));
  ring.setWidth(3);
  d.selected->setPen(ring);
  d.x_limit = new QLineSeries();
  d.y_limit = new QLineSeries();
  QPen dashed(QColor(0x80, 0x80, 0x80));
  dashed.setStyle(Qt::DashLine);
  dashed.setWidth(2);
  d.x_limit->setPen(dashed);
  QPen dashed_red = dashed;
  dashed_red.setColor(QColor(0xb0, 0x40, 0x40));
  d.y_limit->setPen(dashed_red);

  for (QAbstractSeries* s : std::initializer_list<QAbstractSeries*>{d.x_limit, d.y_limit, d.line, d.points,
                                                                     d.highlighted, d.selected}) {
    d.chart->addSeries(s);
    s->attachAxis(d.x);
    s->attachAxis(d.y);
  }
  d.line->setColor(QColor(0x30, 0x70, 0xb0));
  d.points->setColor(QColor(0x30, 0x70, 0xb0));
  hide_from_legend(d.chart, d.points);
  hide_from_legend(d.chart, d.selected);

  for (QScatterSeries* s : {d.points, d.highlighted, d.selected}) {
    connect(s, &QScatterSeries::hovered, this, [this](const QPointF& p, bool state) {
      const int i = nearest(p.x(), p.y());
      if (i < 0) return;
      if (state)
        QToolTip::showText(QCursor::pos(), points_[static_cast<std::size_t>(i)].tooltip, this);
      else
        QToolTip::hideText();
      emit point_hovered(i, state);
    });
  }

  d.view = new QChartView(d.chart, this);
  d.view->setRenderHint(QPainter::Antialiasing);
  // Clicks are matched to the nearest point in pixels here rather than through the series'
  // clicked(), which needs a press and a release on the marker item itself.
  d.view->viewport()->installEventFilter(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(d.view);
  rebuild();
}

FrontChart::~FrontChart() = default;

bool FrontChart::eventFilter(QObject* watched, QEvent* event) {
  if (watched == impl_->view->viewport() && event->type() == QEvent::MouseButtonRelease) {
    const auto* m = static_cast<QMouseEvent*>(event);
    if (m->button() == Qt::LeftButton) {
      const int i = point_at(impl_->view->viewport()->mapTo(this, m->position().toPoint()));
      if (i >= 0) emit point_clicked(i);
    }
  }
  return QWidget::eventFilter(watched, event);
}

void FrontChart::set_titles(const QString& title, const QString& x_axis, const QString& y_axis) {
  impl_->chart->setTitle(title);
  impl_->x->setTitleText(x_axis);
  impl_->y->setTitleText(y_axis);
}

void FrontChart::set_points(std::vector<ChartPoint> points) {
  points_ = std::move(points);
  selected_ = -1;
  rebuild();
}

void FrontChart::set_x_limit(std::optional<double> x, const QString& label) {
  x_limit_ = x;
  x_limit_label_ = label;
  rebuild();
}

void FrontChart::set_y_limit(std::optional<double> y, const QString& label) {
  y_limit_ = y;
  y_limit_label_ = label;
  rebuild();
}

void FrontChart::set_selected(int index) {
  selected_ = index >= 0 && index < point_count() ? index : -1;
  impl_->selected->clear();
  if (selected_ >= 0) {
    const ChartPoint& p = points_[static_cast<std::size_t>(selected_)];
    impl_->selected->append(p.x, p.y);
  }
}

void FrontChart::rebuild() {
  Impl& d = *impl_;
  d.line->clear();
  d.points->clear();
  d.highlighted->clear();
  double max_x = 0, max_y = 0;
  for (const ChartPoint& p : points_) {
    d.line->append(p.x, p.y);
    (p.highlighted ? d.highlighted : d.points)->append(p.x, p.y);
    max_x = std::max(max_x, p.x);
    max_y = std::max(max_y, p.y);
  }
  if (x_limit_) max_x = std::max(max_x, *x_limit_);
  if (y_limit_) max_y = std::max(max_y, *y_limit_);
  const double top_x = nice_ceiling(1.05 * max_x), top_y = nice_ceiling(1.05 * max_y);
  d.x->setRange(0, top_x);
  d.y->setRange(0, top_y);
  d.x->setTickCount(6);
  d.y->setTickCount(6);
  d.x_limit->clear();
  d.y_limit->clear();
  d.x_limit->setName(x_limit_label_);
  d.y_limit->setName(y_limit_label_);
  if (x_limit_) d.x_limit->append({QPointF(*x_limit_, 0), QPointF(*x_limit_, top_y)});
  if (y_limit_) d.y_limit->append({QPointF(0, *y_limit_), QPointF(top_x, *y_limit_)});
  for (QLegendMarker* m : d.chart->legend()->markers(d.x_limit)) m->setVisible(x_limit_.has_value());
  for (QLegendMarker* m : d.chart->legend()->markers(d.y_limit)) m->setVisible(y_limit_.has_value());
  set_selected(selected_);
}

int FrontChart::nearest(double x, double y) const {
  // In pixels, so that both axes count alike.
  int best = -1;
  double best_d = std::numeric_limits<double>::infinity();
  const QPointF at = impl_->chart->mapToPosition(QPointF(x, y), impl_->points);
  for (int i = 0; i < point_count(); ++i) {
    const ChartPoint& p = points_[static_cast<std::size_t>(i)];
    const QPointF q = impl_->chart->mapToPosition(QPointF(p.x, p.y), impl_->points);
    const double dist = std::hypot(q.x() - at.x(), q.y() - at.y());
    if (dist < best_d) {
      best_d = dist;
      best = i;
    }
  }
  return best;
}

QPoint FrontChart::point_position(int index) const {
  if (index < 0 || index >= point_count()) return {};
  const ChartPoint& p = points_[static_cast<std::size_t>(index)];
  const QPointF scene = impl_->chart->mapToScene(impl_->chart->mapToPosition(QPointF(p.x, p.y), impl_->points));
  const QPoint in_view = impl_->view->mapFromScene(scene);
  return impl_->view->viewport()->mapTo(this, in_view);
}

int FrontChart::point_at(QPoint pos, double radius) const {
  int best = -1;
  double best_d = radius;
  for (int i = 0; i < point_count(); ++i) {
    const QPoint q = point_position(i);
    const double dist = std::hypot(q.x() - pos.x(), q.y() - pos.y());
    if (dist <= best_d) {
      best_d = dist;
      best = i;
    }
  }
  return best;
}

struct TornadoChart::Impl {
  QChart* chart = nullptr;
  QChartView* view = nullptr;
  QHorizontalBarSeries* series = nullptr;
  QBarSet* low = nullptr;
  QBarSet* high = nullptr;
  QBarCategoryAxis* rows = nullptr;
  QValueAxis* values = nullptr;
};

TornadoChart::TornadoChart(QWidget* parent) : QWidget(parent), impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.chart = new QChart();
  d.chart->setAnimationOptions(QChart::NoAnimation);
  d.chart->legend()->setAlignment(Qt::AlignBottom);
  d.chart->setMargins(QMargins(4, 4, 4, 4));
  d.series = new QHorizontalBarSeries();
  d.low = new QBarSet(QString());
  d.high = new QBarSet(QString());
  d.low->setColor(QColor(0x3a, 0x8f, 0x5a));
  d.high->setColor(QColor(0xc0, 0x5a, 0x30));
  d.series->append(d.low);
  d.series->append(d.high);
  d.rows = new QBarCategoryAxis();
  d.values = new QValueAxis();
  d.values->setLabelFormat("%.3g");
  d.view = mount_bars(this, d.chart, d.series, d.rows, d.values);
}

TornadoChart::~TornadoChart() = default;

void TornadoChart::set_titles(const QString& title, const QString& value_axis, const QString& low_name,
                              const QString& high_name) {
  impl_->chart->setTitle(title);
  impl_->values->setTitleText(value_axis);
  impl_->low->setLabel(low_name);
  impl_->high->setLabel(high_name);
}

QString TornadoChart::title() const { return impl_->chart->title(); }

void TornadoChart::set_rows(std::vector<TornadoRow> rows) {
  rows_ = std::move(rows);
  Impl& d = *impl_;
  d.low->remove(0, d.low->count());
  d.high->remove(0, d.high->count());
  QStringList labels;
  double lo = 0, hi = 0;
  // A horizontal bar chart draws its first category at the bottom: the rows go in reversed.
  for (auto it = rows_.rbegin(); it != rows_.rend(); ++it) {
    labels << it->label;
    d.low->append(it->low);
    d.high->append(it->high);
    lo = std::min({lo, it->low, it->high});
    hi = std::max({hi, it->low, it->high});
  }
  d.rows->clear();
  d.rows->append(labels);
  // Symmetric about the baseline, so that the two sides compare by eye.
  const double span = nice_ceiling(1.05 * std::max(-lo, hi));
  d.values->setRange(-span, span);
  d.values->setTickCount(5);
}

std::pair<double, double> TornadoChart::value_range() const { return {impl_->values->min(), impl_->values->max()}; }

std::vector<WaterfallBar> waterfall(const QString& first_label, double first,
                                    const std::vector<std::pair<QString, double>>& parts, const QString& last_label,
                                    double last) {
  std::vector<WaterfallBar> bars;
  bars.push_back({first_label, 0, first, true, {}});
  double level = first;
  for (const auto& [label, change] : parts) {
    bars.push_back({label, level, level + change, false, {}});
    level += change;
  }
  bars.push_back({last_label, 0, last, true, {}});
  return bars;
}

struct WaterfallChart::Impl {
  QChart* chart = nullptr;
  QChartView* view = nullptr;
  QHorizontalStackedBarSeries* series = nullptr;
  QBarSet* base = nullptr;  ///< transparent: where each floating bar starts
  QBarSet* total = nullptr;
  QBarSet* rise = nullptr;
  QBarSet* fall = nullptr;
  QBarCategoryAxis* labels = nullptr;
  QValueAxis* values = nullptr;
};

WaterfallChart::WaterfallChart(QWidget* parent) : QWidget(parent), impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.chart = new QChart();
  d.chart->setAnimationOptions(QChart::NoAnimation);
  d.chart->setMargins(QMargins(4, 4, 4, 4));
  d.chart->legend()->hide();  // the title says what the colours mean
  d.series = new QHorizontalStackedBarSeries();
  d.series->setBarWidth(0.7);
  d.base = new QBarSet(QString());
  d.base->setColor(Qt::transparent);
  d.base->setBorderColor(Qt::transparent);
  d.total = new QBarSet(tr("total"));
  d.total->setColor(QColor(0x30, 0x70, 0xb0));
  d.rise = new QBarSet(tr("more"));
  d.rise->setColor(QColor(0xc0, 0x5a, 0x30));
  d.fall = new QBarSet(tr("less"));
  d.fall->setColor(QColor(0x3a, 0x8f, 0x5a));
  for (QBarSet* set : {d.base, d.total, d.rise, d.fall}) d.series->append(set);
  d.labels = new QBarCategoryAxis();
  d.values = new QValueAxis();
  d.values->setLabelFormat("%.4g");
  d.view = mount_bars(this, d.chart, d.series, d.labels, d.values);
}

WaterfallChart::~WaterfallChart() = default;

void WaterfallChart::set_titles(const QString& title, const QString& value_axis) {
  impl_->chart->setTitle(title);
  impl_->values->setTitleText(value_axis);
}

void WaterfallChart::set_bars(std::vector<WaterfallBar> bars) {
  bars_ = std::move(bars);
  Impl& d = *impl_;
  for (QBarSet* set : {d.base, d.total, d.rise, d.fall}) set->remove(0, set->count());
  QStringList labels;
  double low = std::numeric_limits<double>::infinity(), top = 0;
  // A horizontal bar chart draws its first category at the bottom: the bars go in reversed, so
  // that the first total is at the top.
  for (auto it = bars_.rbegin(); it != bars_.rend(); ++it) {
    const WaterfallBar& b = *it;
    labels << b.label;
    const double lo = std::min(b.from, b.to), hi = std::max(b.from, b.to);
    d.base->append(b.total ? 0 : lo);
    d.total->append(b.total ? hi : 0);
    d.rise->append(!b.total && b.to > b.from ? hi - lo : 0);
    d.fall->append(!b.total && b.to < b.from ? hi - lo : 0);
    low = std::min({low, b.total ? b.to : lo});
    top = std::max(top, hi);
  }
  d.labels->clear();
  d.labels->append(labels);
  // The axis starts near the lowest level, not at 0, so that changes of a few per cent show;
  // the totals are cut at its start (its labels say where it starts).
  if (bars_.empty()) low = 0;
  const double pad = std::max(0.25 * (top - low), 1e-3 * top);
  d.values->setRange(std::max(0.0, low - pad), top + pad);
  d.values->setTickCount(5);
}

}  // namespace hetsim::gui
