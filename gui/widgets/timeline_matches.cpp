#include "gui/widgets/timeline_matches.hpp"

#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

TimelineMatchesModel::TimelineMatchesModel(QObject* parent) : QAbstractListModel(parent) {}

void TimelineMatchesModel::set_matches(std::shared_ptr<const TimelineData> data, std::vector<std::size_t> matches) {
  beginResetModel();
  data_ = std::move(data);
  matches_ = data_ ? std::move(matches) : std::vector<std::size_t>{};
  endResetModel();
}

int TimelineMatchesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(matches_.size());
}

QVariant TimelineMatchesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const std::size_t i = matches_[static_cast<std::size_t>(index.row())];
  const TimelineTask& t = data_->tasks[i];
  switch (role) {
    case Qt::DisplayRole:
      return tr("%1 · %2 · at %3 for %4")
          .arg(t.name, data_->lanes[t.lane],
               t.start_ns == 0 ? QStringLiteral("0") : format_seconds(static_cast<double>(t.start_ns) * 1e-9),
               format_seconds(static_cast<double>(t.end_ns - t.start_ns) * 1e-9));
    case Qt::ToolTipRole: return data_->kinds[t.kind];
    case kTaskRole: return QVariant::fromValue<qulonglong>(i);
    default: return {};
  }
}

}  // namespace hetsim::gui
