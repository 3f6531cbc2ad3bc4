#include "gui/qt_models/memory_model.hpp"

#include <QBrush>
#include <QColor>

#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

MemoryModel::MemoryModel(QObject* parent) : QAbstractTableModel(parent) {}

void MemoryModel::set_devices(std::vector<analytic::DeviceEstimate> d) {
  beginResetModel();
  devices_ = std::move(d);
  endResetModel();
}

int MemoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(devices_.size());
}

int MemoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant MemoryModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const analytic::DeviceEstimate& d = devices_[static_cast<std::size_t>(index.row())];
  const double headroom = d.capacity.v - d.peak_memory.v;
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case kPool: return qs(d.pool);
        case kDevice: return qs(d.device);
        case kUsed: return d.idle > 0 ? tr("%1 (%2 idle)").arg(d.count).arg(d.idle) : QString::number(d.count);
        case kPeak: return format_gib(d.peak_memory.v);
        case kCapacity: return format_gib(d.capacity.v);
        case kHeadroom: return headroom >= 0 ? format_gib(headroom) : "-" + format_gib(-headroom);
        case kFits: return d.fits ? tr("yes") : tr("NO");
        case kWorstStage: return qs(d.worst_stage);
        default: return {};
      }
    case kBytesRole:
      switch (index.column()) {
        case kPeak: return d.peak_memory.v;
        case kCapacity: return d.capacity.v;
        case kHeadroom: return headroom;
        default: return {};
      }
    case Qt::ForegroundRole:
      return index.column() == kFits && !d.fits ? QVariant(QBrush(QColor(0xc0, 0x20, 0x20))) : QVariant();
    default: return {};
  }
}

QVariant MemoryModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case kPool: return tr("Pool");
    case kDevice: return tr("Device");
    case kUsed: return tr("Devices used");
    case kPeak: return tr("Peak");
    case kCapacity: return tr("Capacity");
    case kHeadroom: return tr("Headroom");
    case kFits: return tr("Fits");
    case kWorstStage: return tr("Worst stage");
    default: return {};
  }
}

}  // namespace hetsim::gui
