#include "gui/widgets/memory_bars.hpp"

#include <QFontMetrics>
#include <QPainter>

#include <algorithm>

#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

namespace {
constexpr int kRow = 44;       // pixels per bar, label line included
constexpr int kBar = 20;
constexpr int kMargin = 10;
constexpr int kLegendRow = 20;

// The parts that cost::MemoryBreakdown names, in a fixed palette; others take a grey.
const std::vector<std::pair<QString, QColor>>& part_palette() {
  static const std::vector<std::pair<QString, QColor>> p = {
      {"weights", QColor(0x3b, 0x6e, 0xa8)},       {"gradients", QColor(0x6f, 0x9f, 0xd8)},
      {"optimizer", QColor(0x9a, 0x6f, 0xb0)},     {"activations", QColor(0xe0, 0x8a, 0x3c)},
      {"transient", QColor(0xf0, 0xc0, 0x60)},     {"comm buffers", QColor(0x5a, 0xa8, 0x6e)},
      {"fragmentation", QColor(0xb0, 0xb0, 0xb0)}, {"runtime reserve", QColor(0x80, 0x80, 0x80)},
  };
  return p;
}

}  // namespace

QColor MemoryBars::part_color(const QString& part) {
  for (const auto& [name, c] : part_palette())
    if (name == part) return c;
  return QColor(0xc8, 0xc8, 0xc8);
}

MemoryBars::MemoryBars(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Minimum);
}

void MemoryBars::set_bars(std::vector<MemoryBar> bars) {
  bars_ = std::move(bars);
  updateGeometry();
  update();
}

QSize MemoryBars::sizeHint() const {
  return {520, 2 * kMargin + static_cast<int>(bars_.size()) * kRow + 3 * kLegendRow};
}

QSize MemoryBars::minimumSizeHint() const { return {300, sizeHint().height()}; }

void MemoryBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), palette().color(QPalette::Base));
  if (bars_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("no memory figures yet"));
    return;
  }
  double scale_max = 0;
  for (const MemoryBar& b : bars_) {
    double total = 0;
    for (const auto& part : b.parts) total += part.second;
    scale_max = std::max({scale_max, total, b.capacity, b.other_peak.value_or(0)});
  }
  scale_max *= 1.08;
  const QFontMetrics fm(font());
  const int left = kMargin, right = width() - kMargin;
  const double px_per_byte = scale_max > 0 ? (right - left) / scale_max : 0;
  int y = kMargin;
  std::vector<QString> seen;
  for (const MemoryBar& b : bars_) {
    double total = 0;
    for (const auto& part : b.parts) total += part.second;
    p.setPen(palette().color(QPalette::Text));
    const QString verdict = b.fits ? tr("fits") : tr("DOES NOT FIT");
    p.drawText(left, y + fm.ascent(),
               tr("%1: %2 of %3, %4").arg(b.label, format_gib(total), format_gib(b.capacity), verdict));
    const int bar_top = y + fm.height() + 2;
    double x = left;
    for (const auto& [name, bytes] : b.parts) {
      const double w = bytes * px_per_byte;
      if (w <= 0) continue;
      p.fillRect(QRectF(x, bar_top, w, kBar), part_color(name));
      x += w;
      if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
    }
    // The capacity: a solid line, red when the peak passes it.
    const double cx = left + b.capacity * px_per_byte;
    p.setPen(QPen(b.fits ? QColor(0x20, 0x20, 0x20) : QColor(0xc0, 0x20, 0x20), 2));
    p.drawLine(QPointF(cx, bar_top - 4), QPointF(cx, bar_top + kBar + 4));
    if (b.other_peak) {
      const double ox = left + *b.other_peak * px_per_byte;
      p.setPen(QPen(QColor(0x20, 0x20, 0x20), 2, Qt::DotLine));
      p.drawLine(QPointF(ox, bar_top - 2), QPointF(ox, bar_top + kBar + 2));
    }
    y += kRow;
  }
  // Legend: the parts drawn, the capacity line, the simulated peak.
  int lx = left;
  int ly = y + 4;
  p.setPen(palette().color(QPalette::Text));
  auto legend_entry = [&](const QString& text, auto draw_mark) {
    const int w = 16 + 6 + fm.horizontalAdvance(text) + 14;
    if (lx + w > right && lx > left) {
      lx = left;
      ly += kLegendRow;
    }
    draw_mark(QRect(lx, ly + 3, 16, 12));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(lx + 22, ly + fm.ascent(), text);
    lx += w;
  };
  for (const QString& name : seen)
    legend_entry(name, [&](QRect r) { p.fillRect(r, part_color(name)); });
  legend_entry(tr("capacity"), [&](QRect r) {
    p.setPen(QPen(QColor(0x20, 0x20, 0x20), 2));
    p.drawLine(r.center().x(), r.top() - 2, r.center().x(), r.bottom() + 2);
  });
  if (std::any_of(bars_.begin(), bars_.end(), [](const MemoryBar& b) { return b.other_peak.has_value(); }))
    legend_entry(tr("simulated peak"), [&](QRect r) {
      p.setPen(QPen(QColor(0x20, 0x20, 0x20), 2, Qt::DotLine));
      p.drawLine(r.center().x(), r.top() - 2, r.center().x(), r.bottom() + 2);
    });
}

}  // namespace hetsim::gui
