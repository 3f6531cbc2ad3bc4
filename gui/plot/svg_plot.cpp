// The plot module (sim/sweep/plot.hpp): draws a sweep's Chart with QPainter on Qt's
// QSvgGenerator and returns the SVG document. Built as libhetsim_plot.so next to hetsim, which
// opens it only for `hetsim sweep --plot`. Headless: a QGuiApplication on the offscreen platform
// when the process has none (fonts need one).

#include <QBuffer>
#include <QByteArray>
#include <QColor>
#include <QFont>
#include <QFontMetrics>
#include <QGuiApplication>
#include <QPainter>
#include <QPainterPath>
#include <QSvgGenerator>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/sweep/plot.hpp"

namespace hetsim::gui {
namespace {

using sweep::Chart;

constexpr int kWidth = 960, kHeight = 600;

void ensure_application() {
  if (QCoreApplication::instance() != nullptr) return;
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) qputenv("QT_QPA_PLATFORM", "offscreen");
  // Qt's notes about a headless session (no XDG_RUNTIME_DIR, …) are not the user's business.
  qInstallMessageHandler([](QtMsgType type, const QMessageLogContext&, const QString& msg) {
    if (type == QtCriticalMsg || type == QtFatalMsg) std::fprintf(stderr, "qt: %s\n", msg.toLocal8Bit().constData());
  });
  static int argc = 1;
  static char name[] = "hetsim";
  static char* argv[] = {name, nullptr};
  static std::unique_ptr<QGuiApplication> app = std::make_unique<QGuiApplication>(argc, argv);
}

QString q(const std::string& s) { return QString::fromStdString(s); }
QString num(double v) { return QString::number(v, 'g', 6); }

// Ticks at 1, 2 or 5 × 10^k covering [lo, hi], about `n` of them.
std::vector<double> nice_ticks(double lo, double hi, int n) {
  const double raw = (hi - lo) / std::max(n, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return t;
}

// Ten colours that stay apart (Tableau 10).
QColor series_colour(std::size_t i) {
  static const char* k[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                            "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return QColor(k[i % 10]);
}

// A perceptually even scale from dark blue through green to yellow (viridis' ends and middle).
QColor scale_colour(double f) {
  static const double stops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  f = std::clamp(f, 0.0, 1.0) * 4;
  const int i = std::min(static_cast<int>(f), 3);
  const double t = f - i;
  auto mix = [&](int c) { return static_cast<int>(std::lround(stops[i][c] + t * (stops[i + 1][c] - stops[i][c]))); };
  return QColor(mix(0), mix(1), mix(2));
}

std::pair<double, double> value_range(const Chart& c) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : c.series)
    for (const auto& y : s.y)
      if (y) {
        lo = std::min(lo, *y);
        hi = std::max(hi, *y);
      }
  if (!std::isfinite(lo)) return {0, 1};
  if (lo == hi) {
    const double d = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    return {lo - d, hi + d};
  }
  return {lo, hi};
}

void draw_titles(QPainter& p, const Chart& c) {
  QFont f = p.font();
  f.setPointSizeF(14);
  f.setBold(true);
  p.setFont(f);
  p.drawText(QRect(0, 8, kWidth, 26), Qt::AlignHCenter | Qt::AlignVCenter, q(c.title));
  f.setPointSizeF(10);
  f.setBold(false);
  p.setFont(f);
  if (!c.subtitle.empty()) p.drawText(QRect(0, 34, kWidth, 18), Qt::AlignHCenter | Qt::AlignVCenter, q(c.subtitle));
}

void draw_y_label(QPainter& p, const QString& text, int x, int top, int bottom) {
  p.save();
  p.translate(x, (top + bottom) / 2);
  p.rotate(-90);
  p.drawText(QRect(-(bottom - top) / 2, -10, bottom - top, 20), Qt::AlignCenter, text);
  p.restore();
}

void draw_lines(QPainter& p, const Chart& c) {
  const bool legend = c.series.size() > 1 || !c.series.front().name.empty();
  const QRect area(95, 70, kWidth - 95 - (legend ? 230 : 40), kHeight - 70 - 80);
  auto [lo, hi] = value_range(c);
  const auto yt = nice_ticks(lo, hi, 6);
  lo = std::min(lo, yt.front());
  hi = std::max(hi, yt.back());
  auto ypos = [&](double v) { return area.bottom() - (v - lo) / (hi - lo) * area.height(); };
  // x: numeric (linear or log) or categories, with half a step of margin for categories.
  double xlo = 0, xhi = 1;
  auto xv = [&](double v) { return c.x_log ? std::log10(v) : v; };
  if (!c.x.empty()) {
    xlo = xv(*std::min_element(c.x.begin(), c.x.end()));
    xhi = xv(*std::max_element(c.x.begin(), c.x.end()));
  }
  if (!c.x_numeric) {
    xlo -= 0.5;
    xhi += 0.5;
  }
  if (xlo == xhi) {
    xlo -= 1;
    xhi += 1;
  }
  auto xpos = [&](double v) { return area.left() + (xv(v) - xlo) / (xhi - xlo) * area.width(); };

  QFont f = p.font();
  f.setPointSizeF(9);
  p.setFont(f);
  const QFontMetrics fm(f);
  p.setPen(QPen(QColor("#dddddd"), 1));
  for (double t : yt) p.drawLine(QPointF(area.left(), ypos(t)), QPointF(area.right(), ypos(t)));
  p.setPen(QPen(Qt::black, 1));
  p.drawRect(area);
  for (double t : yt) {
    p.drawLine(QPointF(area.left() - 4, ypos(t)), QPointF(area.left(), ypos(t)));
    p.drawText(QRectF(0, ypos(t) - 8, area.left() - 8, 16), Qt::AlignRight | Qt::AlignVCenter, num(t));
  }
  // x ticks: every value when few enough to label, else nice ticks (powers of 10 on a log scale).
  std::vector<std::pair<double, QString>> xt;
  if (c.x.size() <= 12 || !c.x_numeric) {
    const std::size_t every = std::max<std::size_t>(1, c.x.size() / 12);
    for (std::size_t i = 0; i < c.x.size(); i += every) xt.emplace_back(c.x[i], q(c.x_text[i]));
  } else if (c.x_log) {
    for (double e = std::ceil(xlo); e <= xhi + 1e-9; ++e) xt.emplace_back(std::pow(10.0, e), num(std::pow(10.0, e)));
  } else {
    for (double t : nice_ticks(xlo, xhi, 8)) xt.emplace_back(t, num(t));
  }
  for (const auto& [v, text] : xt) {
    const double x = xpos(v);
    p.drawLine(QPointF(x, area.bottom()), QPointF(x, area.bottom() + 4));
    p.drawText(QRectF(x - 60, area.bottom() + 6, 120, 16), Qt::AlignHCenter | Qt::AlignTop, text);
  }
  f.setPointSizeF(10);
  p.setFont(f);
  p.drawText(QRect(area.left(), area.bottom() + 30, area.width(), 20), Qt::AlignCenter,
             q(c.x_label) + (c.x_log ? "  [log scale]" : ""));
  draw_y_label(p, q(c.y_label), 22, area.top(), area.bottom());

  for (std::size_t s = 0; s < c.series.size(); ++s) {
    const QColor col = series_colour(s);
    p.setPen(QPen(col, 2));
    p.setBrush(col);
    QPainterPath path;
    bool open = false;
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      const auto& y = c.series[s].y[i];
      if (!y) {  // a point that failed: a gap in the line
        open = false;
        continue;
      }
      const QPointF pt(xpos(c.x[i]), ypos(*y));
      if (open) path.lineTo(pt);
      else path.moveTo(pt);
      open = true;
    }
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    p.setBrush(col);
    for (std::size_t i = 0; i < c.x.size(); ++i)
      if (const auto& y = c.series[s].y[i]) p.drawEllipse(QPointF(xpos(c.x[i]), ypos(*y)), 3, 3);
    if (legend) {
      // The axis once as the legend's title, then each line's value.
      const std::string& name = c.series[s].name;
      const auto eq = name.find(" = ");
      if (s == 0 && eq != std::string::npos) {
        p.setPen(Qt::black);
        p.drawText(QRect(area.right() + 16, area.top() - 12, 210, 18), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(q(name.substr(0, eq)), Qt::ElideLeft, 210));
        p.setPen(QPen(col, 2));
      }
      const std::string label = eq == std::string::npos ? name : name.substr(eq + 3);
      const int ly = area.top() + 16 + static_cast<int>(s) * 20;
      p.drawLine(area.right() + 16, ly, area.right() + 40, ly);
      p.setPen(Qt::black);
      f.setPointSizeF(9);
      p.setFont(f);
      p.drawText(QRect(area.right() + 46, ly - 9, 180, 18), Qt::AlignLeft | Qt::AlignVCenter,
                 fm.elidedText(q(label), Qt::ElideRight, 180));
    }
  }
}

void draw_heatmap(QPainter& p, const Chart& c) {
  const QRect area(150, 70, kWidth - 150 - 150, kHeight - 70 - 90);
  const auto [lo, hi] = value_range(c);
  const std::size_t cols = c.x_text.size(), rows = c.series.size();
  const double cw = static_cast<double>(area.width()) / static_cast<double>(std::max<std::size_t>(cols, 1));
  const double ch = static_cast<double>(area.height()) / static_cast<double>(std::max<std::size_t>(rows, 1));
  QFont f = p.font();
  f.setPointSizeF(8);
  p.setFont(f);
  const QFontMetrics fm(f);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < cols; ++i) {
      // The first row at the bottom, as on a y axis.
      const QRectF cell(area.left() + static_cast<double>(i) * cw, area.bottom() - static_cast<double>(r + 1) * ch, cw, ch);
      const auto& y = c.series[r].y[i];
      const QColor col = y ? scale_colour((*y - lo) / (hi - lo)) : QColor("#e0e0e0");
      p.setRenderHint(QPainter::Antialiasing, false);  // no seams between cells
      p.fillRect(cell, col);
      p.setRenderHint(QPainter::Antialiasing, true);
      if (cw >= 34 && ch >= 14) {
        p.setPen(!y ? QColor("#888888") : col.lightnessF() > 0.55 ? Qt::black : Qt::white);
        p.drawText(cell, Qt::AlignCenter, y ? num(*y) : QString("failed"));
      }
    }
  p.setPen(Qt::black);
  p.setBrush(Qt::NoBrush);
  p.drawRect(area);
  const std::size_t xevery = std::max<std::size_t>(1, cols / 16), yevery = std::max<std::size_t>(1, rows / 24);
  for (std::size_t i = 0; i < cols; i += xevery) {
    const double x = area.left() + (static_cast<double>(i) + 0.5) * cw;
    p.drawText(QRectF(x - 50, area.bottom() + 4, 100, 16), Qt::AlignHCenter | Qt::AlignTop,
               fm.elidedText(q(c.x_text[i]), Qt::ElideRight, 100));
  }
  for (std::size_t r = 0; r < rows; r += yevery) {
    const double y = area.bottom() - (static_cast<double>(r) + 0.5) * ch;
    p.drawText(QRectF(0, y - 8, area.left() - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
               fm.elidedText(q(c.series[r].name), Qt::ElideLeft, area.left() - 30));
  }
  f.setPointSizeF(10);
  p.setFont(f);
  p.drawText(QRect(area.left(), area.bottom() + 30, area.width(), 20), Qt::AlignCenter, q(c.x_label));
  draw_y_label(p, q(c.y_label), 14, area.top(), area.bottom());
  // The colour scale with the figure's unit.
  const QRect bar(area.right() + 30, area.top(), 20, area.height());
  for (int k = 0; k < bar.height(); ++k)
    p.fillRect(QRect(bar.left(), bar.bottom() - k, bar.width(), 1), scale_colour(static_cast<double>(k) / bar.height()));
  p.drawRect(bar);
  f.setPointSizeF(9);
  p.setFont(f);
  for (double t : nice_ticks(lo, hi, 5)) {
    const double y = bar.bottom() - (t - lo) / (hi - lo) * bar.height();
    p.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + 4, y));
    p.drawText(QRectF(bar.right() + 6, y - 8, 60, 16), Qt::AlignLeft | Qt::AlignVCenter, num(t));
  }
  f.setPointSizeF(10);
  p.setFont(f);
  draw_y_label(p, q(c.value_label), bar.right() + 78, bar.top(), bar.bottom());
}

std::string render_svg(const Chart& c, std::string* error) {
  ensure_application();
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator gen;
  gen.setOutputDevice(&buffer);
  gen.setSize(QSize(kWidth, kHeight));
  gen.setViewBox(QRect(0, 0, kWidth, kHeight));
  gen.setTitle(q(c.title));
  gen.setDescription("hetsim sweep --plot");
  QPainter p;
  if (!p.begin(&gen)) {
    if (error != nullptr) *error = "QPainter could not draw on the SVG generator";
    return "";
  }
  p.fillRect(QRect(0, 0, kWidth, kHeight), Qt::white);
  p.setRenderHint(QPainter::Antialiasing);
  draw_titles(p, c);
  if (c.series.empty() || c.x.empty()) {
    p.drawText(QRect(0, 0, kWidth, kHeight), Qt::AlignCenter, "no points to plot");
  } else if (c.heatmap) {
    draw_heatmap(p, c);
  } else {
    draw_lines(p, c);
  }
  p.end();
  return std::string(bytes.constData(), static_cast<std::size_t>(bytes.size()));
}

}  // namespace
}  // namespace hetsim::gui

extern "C" __attribute__((visibility("default"))) const hetsim::sweep::PlotModule* hetsim_plot_module() {
  static const hetsim::sweep::PlotModule m{hetsim::sweep::kPlotModuleAbi, &hetsim::gui::render_svg};
  return &m;
}
