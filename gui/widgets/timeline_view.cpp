#include "gui/widgets/timeline_view.hpp"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

namespace {
constexpr int kLabelWidth = 230;
constexpr int kAxisHeight = 26;
constexpr int kLaneHeight = 18;
constexpr int kLegendHeight = 24;
constexpr double kMinSpanNs = 1000;  // zoomed in to 1 µs at most

// A tick step of 1, 2 or 5 × 10^k ns giving about `n` ticks over `span`.
double tick_step(double span, int n) {
  const double raw = span / std::max(n, 1);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}
}  // namespace

QColor TimelineView::kind_color(int kind) {
  static const QColor palette[] = {
      QColor(0x3b, 0x6e, 0xa8), QColor(0x6f, 0x9f, 0xd8), QColor(0x9a, 0x6f, 0xb0), QColor(0x80, 0x80, 0x80),
      QColor(0xe0, 0x8a, 0x3c), QColor(0x5a, 0xa8, 0x6e), QColor(0x8c, 0xc0, 0x70), QColor(0xd0, 0x60, 0x60),
      QColor(0xc0, 0xa0, 0x40)};
  constexpr int n = static_cast<int>(std::size(palette));
  return palette[((kind % n) + n) % n];
}

QColor TimelineView::faded_color() { return QColor(0xdc, 0xdc, 0xdc); }
QColor TimelineView::critical_color() { return QColor(0xc0, 0x10, 0x10); }

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void TimelineView::set_data(std::shared_ptr<const TimelineData> data) {
  data_ = std::move(data);
  lane_begin_.clear();
  if (data_) {
    lane_begin_.assign(data_->lanes.size() + 1, data_->tasks.size());
    for (std::size_t i = data_->tasks.size(); i-- > 0;) lane_begin_[data_->tasks[i].lane] = i;
    // Lanes without tasks start where the next one does.
    for (std::size_t l = data_->lanes.size(); l-- > 0;) lane_begin_[l] = std::min(lane_begin_[l], lane_begin_[l + 1]);
  }
  critical_.clear();
  if (data_)
    for (std::size_t i = 0; i < data_->tasks.size(); ++i)
      if (data_->tasks[i].critical) critical_.push_back(i);
  std::stable_sort(critical_.begin(), critical_.end(), [this](std::size_t a, std::size_t b) {
    const TimelineTask& x = data_->tasks[a];
    const TimelineTask& y = data_->tasks[b];
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns < y.end_ns;
  });
  kind_shown_.clear();
  set_search(search_);
  reset_view();
  updateGeometry();
}

QSize TimelineView::sizeHint() const {
  const int lanes = data_ ? static_cast<int>(data_->lanes.size()) : 4;
  return {900, kAxisHeight + lanes * kLaneHeight + kLegendHeight + 8};
}

QSize TimelineView::minimumSizeHint() const { return {400, kAxisHeight + 2 * kLaneHeight + kLegendHeight}; }

int TimelineView::plot_left() const { return kLabelWidth; }
int TimelineView::plot_width() const { return std::max(1, width() - kLabelWidth - 8); }
double TimelineView::x_of(double ns) const { return plot_left() + (ns - t0_) / (t1_ - t0_) * plot_width(); }
double TimelineView::ns_of(double x) const { return t0_ + (x - plot_left()) / plot_width() * (t1_ - t0_); }

void TimelineView::reset_view() {
  t0_ = 0;
  t1_ = data_ && data_->makespan_ns > 0 ? static_cast<double>(data_->makespan_ns) : 1.0;
  update();
}

void TimelineView::clamp() {
  const double full = data_ && data_->makespan_ns > 0 ? static_cast<double>(data_->makespan_ns) : 1.0;
  double span = std::clamp(t1_ - t0_, std::min(kMinSpanNs, full), full);
  t0_ = std::clamp(t0_, 0.0, full - span);
  t1_ = t0_ + span;
}

void TimelineView::zoom(double factor, double at_ns) {
  if (!(factor > 0)) return;
  t0_ = at_ns - (at_ns - t0_) / factor;
  t1_ = at_ns + (t1_ - at_ns) / factor;
  clamp();
  update();
}

void TimelineView::pan(double ns) {
  t0_ += ns;
  t1_ += ns;
  clamp();
  update();
}

int TimelineView::task_at(QPoint pos) const {
  if (!data_ || pos.x() < plot_left()) return -1;
  const int lane = (pos.y() - kAxisHeight) / kLaneHeight;
  if (pos.y() < kAxisHeight || lane < 0 || lane >= static_cast<int>(data_->lanes.size())) return -1;
  const double at = ns_of(pos.x());
  const double slack = (t1_ - t0_) / plot_width() * 2;  // two pixels
  const auto first = data_->tasks.begin() + static_cast<std::ptrdiff_t>(lane_begin_[static_cast<std::size_t>(lane)]);
  const auto last = data_->tasks.begin() + static_cast<std::ptrdiff_t>(lane_begin_[static_cast<std::size_t>(lane) + 1]);
  // The last task starting at or before the pointer (tasks of a lane do not overlap: one stream).
  auto it = std::upper_bound(first, last, at + slack,
                             [](double t, const TimelineTask& x) { return t < static_cast<double>(x.start_ns); });
  if (it == first) return -1;
  --it;
  if (static_cast<double>(it->end_ns) + slack < at) return -1;
  return static_cast<int>(it - data_->tasks.begin());
}

QPoint TimelineView::task_position(int i) const {
  if (!data_ || i < 0 || i >= static_cast<int>(data_->tasks.size())) return {};
  const TimelineTask& t = data_->tasks[static_cast<std::size_t>(i)];
  const double mid = (static_cast<double>(t.start_ns) + static_cast<double>(t.end_ns)) / 2;
  if (mid < t0_ || mid > t1_) return {};
  return {static_cast<int>(std::lround(x_of(mid))), kAxisHeight + static_cast<int>(t.lane) * kLaneHeight + kLaneHeight / 2};
}

void TimelineView::set_kinds_shown(const std::vector<int>& kinds) {
  kind_shown_.clear();
  if (data_)
    for (int k : kinds) {
      if (k < 0 || k >= static_cast<int>(data_->kinds.size())) continue;
      kind_shown_.resize(data_->kinds.size(), 0);
      kind_shown_[static_cast<std::size_t>(k)] = 1;
    }
  set_search(search_);  // the matches keep to the kinds shown
  update();
}

std::vector<int> TimelineView::kinds_shown() const {
  std::vector<int> kinds;
  for (std::size_t k = 0; k < kind_shown_.size(); ++k)
    if (kind_shown_[k]) kinds.push_back(static_cast<int>(k));
  return kinds;
}

int TimelineView::set_search(const QString& text) {
  search_ = text;
  matches_.clear();
  matched_.clear();
  match_at_ = -1;
  if (data_ && !text.isEmpty()) {
    matched_.assign(data_->tasks.size(), 0);
    for (std::size_t i = 0; i < data_->tasks.size(); ++i) {
      const TimelineTask& t = data_->tasks[i];
      if (!kind_shown_.empty() && !kind_shown_[t.kind]) continue;
      if (!t.name.contains(text, Qt::CaseInsensitive)) continue;
      matched_[i] = 1;
      matches_.push_back(i);
    }
  }
  update();
  return static_cast<int>(matches_.size());
}

bool TimelineView::task_shown(std::size_t i) const {
  if (!data_ || i >= data_->tasks.size()) return false;
  if (!matched_.empty()) return matched_[i] != 0;
  return kind_shown_.empty() || kind_shown_[data_->tasks[i].kind];
}

int TimelineView::next_match() {
  if (matches_.empty()) return -1;
  return show_match(static_cast<std::size_t>(match_at_ + 1) % matches_.size());
}

int TimelineView::show_match(std::size_t k) {
  if (k >= matches_.size()) return -1;
  match_at_ = static_cast<int>(k);
  const TimelineTask& t = data_->tasks[matches_[k]];
  const double length = static_cast<double>(t.end_ns - t.start_ns);
  double span = t1_ - t0_;
  if (length < span / plot_width()) span = std::max(100 * length, kMinSpanNs);
  const double mid = (static_cast<double>(t.start_ns) + static_cast<double>(t.end_ns)) / 2;
  t0_ = mid - span / 2;
  t1_ = mid + span / 2;
  clamp();
  update();
  return static_cast<int>(matches_[k]);
}

double TimelineView::lane_middle(std::uint32_t lane) const {
  return kAxisHeight + static_cast<double>(lane) * kLaneHeight + kLaneHeight / 2.0;
}

// The critical path across lanes: from the end of each of its tasks to the start of the next,
// for the pairs that touch the time in view; several in one pixel column are drawn once.
void TimelineView::paint_critical_line(QPainter& p, int bottom) const {
  if (critical_.size() < 2) return;
  p.save();
  p.setClipRect(plot_left(), kAxisHeight, plot_width(), bottom - kAxisHeight);
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setPen(QPen(critical_color(), 1.5));
  const auto& tasks = data_->tasks;
  // The first link k (from critical_[k] to critical_[k + 1]) that does not end before the view
  // (links are in time order).
  std::size_t lo = 0, hi = critical_.size() - 1;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (static_cast<double>(tasks[critical_[mid + 1]].start_ns) < t0_) lo = mid + 1;
    else hi = mid;
  }
  auto it = critical_.begin() + static_cast<std::ptrdiff_t>(lo);
  int last_x = -1;
  std::uint32_t last_lanes = ~0u;
  for (; it + 1 != critical_.end(); ++it) {
    const TimelineTask& a = tasks[*it];
    const TimelineTask& b = tasks[*(it + 1)];
    if (static_cast<double>(a.end_ns) > t1_) break;
    if (a.lane == b.lane) continue;  // the underline already joins them
    const QPointF from(x_of(static_cast<double>(a.end_ns)), lane_middle(a.lane));
    const QPointF to(x_of(static_cast<double>(b.start_ns)), lane_middle(b.lane));
    const int x = static_cast<int>(from.x());
    const std::uint32_t lanes = a.lane * 65536u + b.lane;
    if (x == last_x && lanes == last_lanes) continue;
    last_x = x;
    last_lanes = lanes;
    p.drawLine(from, to);
  }
  p.restore();
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  if (!data_ || data_->tasks.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("no simulated step yet"));
    return;
  }
  const QFontMetrics fm(font());
  const int right = plot_left() + plot_width();
  const int lanes = static_cast<int>(data_->lanes.size());
  const int bottom = kAxisHeight + lanes * kLaneHeight;

  // Axis: ticks at round times.
  const double step = tick_step(t1_ - t0_, std::max(2, plot_width() / 110));
  p.setPen(palette().color(QPalette::Mid));
  for (double t = std::ceil(t0_ / step) * step; t <= t1_; t += step) {
    const double x = x_of(t);
    p.setPen(QColor(0xe4, 0xe4, 0xe4));
    p.drawLine(QPointF(x, kAxisHeight), QPointF(x, bottom));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QPointF(x + 2, kAxisHeight - 8), t == 0 ? QStringLiteral("0") : format_seconds(t * 1e-9));
  }
  // Lanes: label, stripe, bars in view.
  p.setClipRect(0, kAxisHeight, width(), bottom - kAxisHeight);
  for (int lane = 0; lane < lanes; ++lane) {
    const int y = kAxisHeight + lane * kLaneHeight;
    if (lane % 2 == 1) p.fillRect(0, y, right, kLaneHeight, QColor(0xf6, 0xf6, 0xf6));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(4, y, kLabelWidth - 8, kLaneHeight), Qt::AlignVCenter | Qt::AlignLeft,
               fm.elidedText(data_->lanes[static_cast<std::size_t>(lane)], Qt::ElideMiddle, kLabelWidth - 8));
    const auto first = data_->tasks.begin() + static_cast<std::ptrdiff_t>(lane_begin_[static_cast<std::size_t>(lane)]);
    const auto last = data_->tasks.begin() + static_cast<std::ptrdiff_t>(lane_begin_[static_cast<std::size_t>(lane) + 1]);
    // First task ending in view.
    auto it = std::partition_point(first, last, [this](const TimelineTask& t) { return static_cast<double>(t.end_ns) < t0_; });
    int last_px = -1;
    for (; it != last && static_cast<double>(it->start_ns) <= t1_; ++it) {
      const double x0 = std::max(x_of(static_cast<double>(it->start_ns)), static_cast<double>(plot_left()));
      const double x1 = std::min(x_of(static_cast<double>(it->end_ns)), static_cast<double>(right));
      const int px = static_cast<int>(x1);
      if (px == last_px && x1 - x0 < 1 && !it->critical) continue;  // one bar per pixel column
      last_px = px;
      const QRectF bar(x0, y + 2, std::max(1.0, x1 - x0), kLaneHeight - 4);
      const auto index = static_cast<std::size_t>(it - data_->tasks.begin());
      const bool shown = task_shown(index);
      p.fillRect(bar, shown ? kind_color(it->kind) : faded_color());
      if (shown && !matched_.empty()) {
        p.setPen(QPen(palette().color(QPalette::Text), 1));
        p.drawRect(bar);
      }
      if (it->critical) {
        p.setPen(QPen(critical_color(), 2));
        p.drawLine(bar.bottomLeft(), bar.bottomRight());
      }
    }
  }
  p.setClipping(false);
  paint_critical_line(p, bottom);
  p.setPen(palette().color(QPalette::Mid));
  p.drawLine(plot_left(), kAxisHeight, plot_left(), bottom);
  // Legend: the kinds, then the critical path.
  int lx = 4;
  const int ly = bottom + 6;
  for (std::size_t k = 0; k < data_->kinds.size(); ++k) {
    p.fillRect(lx, ly + 3, 12, 10, kind_color(static_cast<int>(k)));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(lx + 16, ly + fm.ascent(), data_->kinds[k]);
    lx += 16 + fm.horizontalAdvance(data_->kinds[k]) + 12;
  }
  p.setPen(QPen(critical_color(), 2));
  p.drawLine(lx, ly + 12, lx + 12, ly + 12);
  p.setPen(palette().color(QPalette::Text));
  p.drawText(lx + 16, ly + fm.ascent(), tr("critical path"));
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0 || !data_) return;
  zoom(std::pow(1.25, steps), ns_of(event->position().x()));
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    dragging_ = true;
    drag_x_ = event->position().toPoint().x();
    setCursor(Qt::ClosedHandCursor);
  }
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (dragging_) {
    pan(-(pos.x() - drag_x_) * (t1_ - t0_) / plot_width());
    drag_x_ = pos.x();
    return;
  }
  const int i = task_at(pos);
  if (i < 0) {
    QToolTip::hideText();
    return;
  }
  const TimelineTask& t = data_->tasks[static_cast<std::size_t>(i)];
  QToolTip::showText(event->globalPosition().toPoint(),
                     tr("%1 (%2)\n%3, from %4 to %5%6")
                         .arg(t.name, data_->kinds[t.kind], format_seconds(static_cast<double>(t.end_ns - t.start_ns) * 1e-9),
                              format_seconds(static_cast<double>(t.start_ns) * 1e-9),
                              format_seconds(static_cast<double>(t.end_ns) * 1e-9),
                              t.critical ? tr("\non the critical path") : QString()),
                     this);
}

void TimelineView::mouseReleaseEvent(QMouseEvent*) {
  dragging_ = false;
  unsetCursor();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent*) { reset_view(); }

}  // namespace hetsim::gui
