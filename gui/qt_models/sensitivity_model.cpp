#include "gui/qt_models/sensitivity_model.hpp"

#include <QBrush>
#include <QColor>

#include <cmath>

#include "gui/qt_models/format.hpp"
#include "sim/report/buy_report.hpp"

namespace hetsim::gui {

std::vector<SensitivityRow> sensitivity_rows(const Scenario& s, const buy::Result& r) {
  std::vector<SensitivityRow> rows;
  if (!s.purchase) return rows;
  for (const buy::Sensitivity& x : r.sensitivity) {
    SensitivityRow row;
    row.what = qs(x.what);
    row.factor = x.factor;
    row.changes = x.changes;
    row.nothing_fits = x.nodes.empty();
    if (x.changes && !x.nodes.empty()) {
      buy::Point shown;
      shown.nodes = x.nodes;
      row.becomes = qs("buy " + report::what_is_bought(s, shown));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

SensitivityModel::SensitivityModel(QObject* parent) : QAbstractTableModel(parent) {}

void SensitivityModel::set_rows(std::vector<SensitivityRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int SensitivityModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int SensitivityModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant SensitivityModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const SensitivityRow& r = rows_[static_cast<std::size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case kWhat: return r.what;
        case kChange: {
          const long pct = std::lround(100 * (r.factor - 1));
          return (pct > 0 ? "+" : "") + QString::number(pct) + " %";
        }
        case kVerdict:
          if (r.nothing_fits) return tr("nothing fits the budget");
          return r.changes ? tr("yes: %1").arg(r.becomes) : tr("no");
        default: return {};
      }
    case kFactorRole: return r.factor;
    case kChangesRole: return r.changes;
    case Qt::ForegroundRole:
      return index.column() == kVerdict && (r.changes || r.nothing_fits) ? QVariant(QBrush(QColor(0xb0, 0x50, 0x00)))
                                                                         : QVariant();
    default: return {};
  }
}

QVariant SensitivityModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case kWhat: return tr("Price");
    case kChange: return tr("Change");
    case kVerdict: return tr("Does the recommendation change?");
    default: return {};
  }
}

}  // namespace hetsim::gui
