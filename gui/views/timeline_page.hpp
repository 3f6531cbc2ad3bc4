#pragma once
// The plan view's Timeline page: the simulated step's timeline, a button per kind of task (the
// kinds picked are shown in colour and the others faded; none picked: every kind), a search by
// name with Next, and the list of the tasks found (a click centres the timeline on one).

#include <QWidget>

#include <cstddef>
#include <memory>
#include <vector>

class QLabel;
class QLineEdit;
class QListView;
class QPushButton;
class QToolButton;
class QHBoxLayout;

namespace hetsim::gui {

struct TimelineData;
class TimelineMatchesModel;
class TimelineView;

class TimelinePage : public QWidget {
  Q_OBJECT
 public:
  explicit TimelinePage(QWidget* parent = nullptr);

  /// Shows a step (null: none). The kinds picked are cleared; the search is kept.
  void set_data(std::shared_ptr<const TimelineData> step);

  [[nodiscard]] TimelineView* timeline() const { return timeline_; }
  [[nodiscard]] QLineEdit* find_control() const { return find_; }
  /// Kind `k`'s button (TimelineData::kinds order): checked, the kind is picked.
  [[nodiscard]] QToolButton* kind_button(std::size_t k) const { return kind_buttons_.at(k); }
  [[nodiscard]] std::size_t kind_button_count() const { return kind_buttons_.size(); }
  /// Unpicks every kind: every kind shown.
  [[nodiscard]] QPushButton* every_kind_button() const { return every_kind_; }
  /// The tasks found, in the timeline's match order; a click centres the timeline on one.
  [[nodiscard]] QListView* matches_list() const { return matches_list_; }
  [[nodiscard]] TimelineMatchesModel* matches_model() const { return matches_; }
  /// "12 task(s)" with a search, else empty.
  [[nodiscard]] QString found_text() const;

 private:
  void kinds_picked();
  void show_found();

  TimelineView* timeline_ = nullptr;
  QHBoxLayout* kind_row_ = nullptr;
  std::vector<QToolButton*> kind_buttons_;
  QPushButton* every_kind_ = nullptr;
  QLineEdit* find_ = nullptr;
  QLabel* found_ = nullptr;
  TimelineMatchesModel* matches_ = nullptr;
  QListView* matches_list_ = nullptr;
};

}  // namespace hetsim::gui
