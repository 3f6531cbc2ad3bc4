#include "gui/qt_models/diagnostics_model.hpp"

#include <QFileInfo>

#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

QString where_text(const SourceLoc& where) {
  QString t = QFileInfo(qs(where.file)).fileName();
  if (where.line > 0) t += ":" + QString::number(where.line);
  if (where.line > 0 && where.col > 0) t += ":" + QString::number(where.col);
  return t;
}

DiagnosticsModel::DiagnosticsModel(QObject* parent) : QAbstractTableModel(parent) {}

void DiagnosticsModel::set_diagnostics(Diagnostics d) {
  beginResetModel();
  diagnostics_ = std::move(d);
  endResetModel();
}

int DiagnosticsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(diagnostics_.size());
}

int DiagnosticsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant DiagnosticsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Diagnostic& d = diagnostics_[static_cast<std::size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case kWhere: return where_text(d.where);
        case kKey: return qs(d.key);
        case kMessage: return qs(d.message);
        case kHint: return qs(d.hint);
        default: return {};
      }
    case Qt::ToolTipRole: return qs(to_string(d));
    case kLineRole: return static_cast<uint>(d.where.line);
    case kColumnRole: return static_cast<uint>(d.where.col);
    default: return {};
  }
}

QVariant DiagnosticsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case kWhere: return tr("Where");
    case kKey: return tr("Key");
    case kMessage: return tr("Message");
    case kHint: return tr("Hint");
    default: return {};
  }
}

}  // namespace hetsim::gui
