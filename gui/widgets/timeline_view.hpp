#pragma once
// The simulated step as a Gantt chart: one lane per simulated device and stream, one bar per
// task coloured by its kind, the critical path underlined and drawn across lanes (a line from
// each of its tasks to the next). Wheel zooms around the pointer, a drag pans, a double click
// shows the whole step; hovering a bar names the task, its kind and its duration. A set of kinds
// can be picked (the others fade), and tasks found by name (matches outlined, the others fade; the
// view moves from match to match, or to the one picked). Drawing visits only the bars in view (binary search per lane) and
// at most one bar per pixel column, so 10⁵ tasks pan smoothly.

#include <QColor>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

class QPainter;

namespace hetsim::gui {

/// One task as drawn: its lane, its time span (ns from the step's start) and what it is.
struct TimelineTask {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t lane = 0;
  std::uint16_t kind = 0;  ///< index into TimelineData::kinds
  bool critical = false;   ///< on the critical path
  QString name;            ///< "F L12-23 mb5"
};

/// What the timeline shows, as values (made from the engine's graph and trace by the view that
/// owns it; the widget sees no engine type).
struct TimelineData {
  std::vector<QString> lanes;         ///< "g0 s3 h100-sxm5 tp8 ×4 · compute"
  std::vector<QString> kinds;         ///< "forward", "backward", …
  std::vector<TimelineTask> tasks;    ///< sorted by lane, then start
  std::int64_t makespan_ns = 0;
};

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);

  void set_data(std::shared_ptr<const TimelineData> data);
  [[nodiscard]] const std::shared_ptr<const TimelineData>& data() const { return data_; }

  /// The time shown, in ns: [first, last].
  [[nodiscard]] std::pair<double, double> visible_range() const { return {t0_, t1_}; }
  /// Zooms by `factor` (> 1 in) keeping time `at_ns` where it is; pans by `ns`; shows it all.
  void zoom(double factor, double at_ns);
  void pan(double ns);
  void reset_view();
  /// The task under `pos` (index into data()->tasks), or -1.
  [[nodiscard]] int task_at(QPoint pos) const;
  /// Where task `i` is drawn (its bar's centre), for tests; null when out of view.
  [[nodiscard]] QPoint task_position(int i) const;
  /// The colour of a kind (the same kind, the same colour).
  [[nodiscard]] static QColor kind_color(int kind);
  /// The colour of a task faded by the kind filter or the search.
  [[nodiscard]] static QColor faded_color();
  /// The critical path's colour (underlines and the line across lanes).
  [[nodiscard]] static QColor critical_color();

  /// The critical path's tasks in time order (indices into data()->tasks): the chain the line
  /// across lanes joins.
  [[nodiscard]] const std::vector<std::size_t>& critical_chain() const { return critical_; }
  /// Shows the tasks of `kinds` (indices into data()->kinds; others are ignored) in their colours
  /// and fades the others; empty: every kind.
  void set_kinds_shown(const std::vector<int>& kinds);
  /// The kinds picked, ascending; empty: every kind.
  [[nodiscard]] std::vector<int> kinds_shown() const;
  /// Finds the tasks whose name contains `text` (case-insensitive; empty: no search) among those
  /// of the kinds shown; returns how many.
  int set_search(const QString& text);
  /// The matches of the search, in lane then time order.
  [[nodiscard]] const std::vector<std::size_t>& matches() const { return matches_; }
  /// Centres the view on match `k` (k < matches().size()), keeping the zoom, or zooming in to 100
  /// times the task's length when the task is shorter than a pixel; Next continues from it.
  /// Returns its index into data()->tasks, or -1 when there is no match `k`.
  int show_match(std::size_t k);
  /// show_match of the match after the last one shown (wraps); -1 without matches.
  int next_match();
  /// The match last shown (index into matches()), or -1.
  [[nodiscard]] int current_match() const { return match_at_; }
  /// Whether task `i` is drawn in its colour (not faded by the kind filter or the search).
  [[nodiscard]] bool task_shown(std::size_t i) const;

  [[nodiscard]] QSize sizeHint() const override;
  [[nodiscard]] QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;

 private:
  [[nodiscard]] double x_of(double ns) const;
  [[nodiscard]] double ns_of(double x) const;
  [[nodiscard]] int plot_left() const;
  [[nodiscard]] int plot_width() const;
  void clamp();
  [[nodiscard]] double lane_middle(std::uint32_t lane) const;
  void paint_critical_line(QPainter& p, int bottom) const;

  std::shared_ptr<const TimelineData> data_;
  std::vector<std::size_t> lane_begin_;  ///< first task of each lane, plus the end
  std::vector<std::size_t> critical_;    ///< the critical path's tasks by start time
  std::vector<char> kind_shown_;         ///< per kind; empty: every kind
  QString search_;
  std::vector<std::size_t> matches_;
  std::vector<char> matched_;            ///< per task, with a search
  int match_at_ = -1;                    ///< the match last shown
  double t0_ = 0, t1_ = 1;
  bool dragging_ = false;
  int drag_x_ = 0;
};

}  // namespace hetsim::gui
