#pragma once
// Peak memory per device type (pool) against its capacity, from analytic::Estimate::device_types
// (the estimate's, or the simulation's timeline peaks): pool, device, devices used, peak,
// capacity, headroom, whether it fits, and the breakdown of the worst stage.

#include <QAbstractTableModel>

#include <vector>

#include "sim/analytic/estimate.hpp"

namespace hetsim::gui {

class MemoryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kPool, kDevice, kUsed, kPeak, kCapacity, kHeadroom, kFits, kWorstStage, kColumns };
  static constexpr int kBytesRole = Qt::UserRole + 1;  ///< peak, capacity, headroom in bytes (double)

  explicit MemoryModel(QObject* parent = nullptr);

  void set_devices(std::vector<analytic::DeviceEstimate> d);
  [[nodiscard]] const std::vector<analytic::DeviceEstimate>& devices() const { return devices_; }

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<analytic::DeviceEstimate> devices_;
};

}  // namespace hetsim::gui
