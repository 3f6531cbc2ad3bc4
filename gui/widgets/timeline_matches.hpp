#pragma once
// The matches of a timeline's search as a list (one row per task found, in the timeline's lane
// then time order), so that a click can centre the timeline on one of them.

#include <QAbstractListModel>

#include <cstddef>
#include <memory>
#include <vector>

#include "gui/widgets/timeline_view.hpp"

namespace hetsim::gui {

class TimelineMatchesModel : public QAbstractListModel {
  Q_OBJECT
 public:
  /// The task's index into TimelineData::tasks (std::size_t as qulonglong).
  static constexpr int kTaskRole = Qt::UserRole + 1;

  explicit TimelineMatchesModel(QObject* parent = nullptr);

  /// The rows: `matches` (indices into data->tasks, as TimelineView::matches gives them).
  void set_matches(std::shared_ptr<const TimelineData> data, std::vector<std::size_t> matches);

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  /// Display: "F L12-23 mb5 · g0 s1 … · compute · at 12.3 ms for 1.2 ms"; tooltip: its kind.
  [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const TimelineData> data_;
  std::vector<std::size_t> matches_;
};

}  // namespace hetsim::gui
