#pragma once
// The charts of the purchase view, the one file pair over Qt Charts (its header includes no Qt
// Charts type, so moving to Qt Graphs changes charts.cpp only):
//   - FrontChart: a cost-versus-time scatter with the front's line through it, limit lines
//     (budget, deadline), hover tooltips and clickable points;
//   - TornadoChart: horizontal bars from a baseline, two per row (a value's low and high change);
//   - WaterfallChart: vertical bars floating from a running level (a total, its changes by part,
//     the other total).

#include <QString>
#include <QStringList>
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

/// One row of a tornado: the change at the low and the high setting of one value, in the
/// value axis' units, from a baseline of 0.
struct TornadoRow {
  QString label;
  double low = 0, high = 0;
};

class TornadoChart : public QWidget {
  Q_OBJECT
 public:
  explicit TornadoChart(QWidget* parent = nullptr);
  ~TornadoChart() override;

  /// `low_name` and `high_name` name the two bars of every row ("−20 %", "+20 %").
  void set_titles(const QString& title, const QString& value_axis, const QString& low_name, const QString& high_name);
  [[nodiscard]] QString title() const;
  /// The rows, the first drawn at the top.
  void set_rows(std::vector<TornadoRow> rows);
  [[nodiscard]] const std::vector<TornadoRow>& rows() const { return rows_; }
  /// The value axis' range, for tests.
  [[nodiscard]] std::pair<double, double> value_range() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<TornadoRow> rows_;
};

/// One bar of a waterfall: from `from` to `to`; a total stands on 0.
struct WaterfallBar {
  QString label;
  double from = 0, to = 0;
  bool total = false;
  QString tooltip;
};

/// Bars from a first total through its changes by part to a last total: builds the running
/// levels of `parts` from `first` (each bar from the level before to the level after).
[[nodiscard]] std::vector<WaterfallBar> waterfall(const QString& first_label, double first,
                                                  const std::vector<std::pair<QString, double>>& parts,
                                                  const QString& last_label, double last);

class WaterfallChart : public QWidget {
  Q_OBJECT
 public:
  explicit WaterfallChart(QWidget* parent = nullptr);
  ~WaterfallChart() override;

  void set_titles(const QString& title, const QString& value_axis);
  /// Totals in one colour, rises in another, falls in a third.
  void set_bars(std::vector<WaterfallBar> bars);
  [[nodiscard]] const std::vector<WaterfallBar>& bars() const { return bars_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<WaterfallBar> bars_;
};

}  // namespace hetsim::gui
