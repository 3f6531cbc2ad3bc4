#include "gui/qt_models/breakdown_model.hpp"

#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

BreakdownModel::BreakdownModel(QObject* parent) : QAbstractTableModel(parent), part_title_(tr("Part of the step")) {}

void BreakdownModel::set_part_title(const QString& title) {
  part_title_ = title;
  emit headerDataChanged(Qt::Horizontal, kPart, kPart);
}

void BreakdownModel::set_breakdown(cost::TimeBreakdown b) {
  beginResetModel();
  breakdown_ = std::move(b);
  total_s_ = breakdown_.total().v;
  endResetModel();
}

int BreakdownModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(breakdown_.parts.size());
}

int BreakdownModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant BreakdownModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const auto& [name, d] = breakdown_.parts[static_cast<std::size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case kPart: return qs(name);
        case kTime: return format_seconds(d.v);
        case kShare: return total_s_ > 0 ? QString::number(100 * d.v / total_s_, 'f', 1) + " %" : QStringLiteral("-");
        default: return {};
      }
    case kSecondsRole: return d.v;
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(index.column() == kPart ? Qt::Alignment(Qt::AlignLeft | Qt::AlignVCenter)
                                                         : Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    default: return {};
  }
}

QVariant BreakdownModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case kPart: return part_title_;
    case kTime: return tr("Time");
    case kShare: return tr("Share");
    default: return {};
  }
}

}  // namespace hetsim::gui
