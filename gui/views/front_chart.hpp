#pragma once
// A cost-versus-time scatter with the front's line through it, limit lines (budget, deadline),
// hover tooltips and clickable points. The one file pair over Qt Charts: its header includes no
// Qt Charts type, so moving to Qt Graphs changes front_chart.cpp only.

#include <QString>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

namespace hetsim::gui {

/// One point, in the axes' units; `tooltip` is shown on hover; `highlighted` marks the
/// recommended one.
struct ChartPoint {
  double x = 0;
  double y = 0;
  QString tooltip;
  bool highlighted = false;
};

class FrontChart : public QWidget {
  Q_OBJECT
 public:
  explicit FrontChart(QWidget* parent = nullptr);
  ~FrontChart() override;

  void set_titles(const QString& title, const QString& x_axis, const QString& y_axis);
  /// The points, joined by a line in the order given.
  void set_points(std::vector<ChartPoint> points);
  /// A vertical line at x (a deadline) or a horizontal one at y (a budget); nullopt removes it.
  void set_x_limit(std::optional<double> x, const QString& label);
  void set_y_limit(std::optional<double> y, const QString& label);
  /// Rings point `index` (-1: none).
  void set_selected(int index);
  [[nodiscard]] int selected() const { return selected_; }
  [[nodiscard]] int point_count() const { return static_cast<int>(points_.size()); }
  /// Where point `index` is drawn, in this widget's coordinates (for tests that click it).
  [[nodiscard]] QPoint point_position(int index) const;
  /// The point nearest to `pos` (this widget's coordinates) within `radius` pixels, or -1.
  [[nodiscard]] int point_at(QPoint pos, double radius = 12) const;

 signals:
  /// A click near point `index` (within 12 pixels).
  void point_clicked(int index);
  void point_hovered(int index, bool entered);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  struct Impl;
  void rebuild();
  int nearest(double x, double y) const;

  std::unique_ptr<Impl> impl_;
  std::vector<ChartPoint> points_;
  std::optional<double> x_limit_, y_limit_;
  QString x_limit_label_, y_limit_label_;
  int selected_ = -1;
};

}  // namespace hetsim::gui
