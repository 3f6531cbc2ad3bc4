#pragma once
// A step's time breakdown (analytic::Estimate::step: compute, recompute, tp comm, pp comm,
// pipeline bubble, dp comm, optimizer) as a table: part, time, share of the step.

#include <QAbstractTableModel>

#include "models/cost/breakdown.hpp"

namespace hetsim::gui {

class BreakdownModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kPart, kTime, kShare, kColumns };
  static constexpr int kSecondsRole = Qt::UserRole + 1;  ///< the part in seconds (double)

  explicit BreakdownModel(QObject* parent = nullptr);

  void set_breakdown(cost::TimeBreakdown b);
  /// The first column's title ("Part of the step" unless set).
  void set_part_title(const QString& title);
  [[nodiscard]] const cost::TimeBreakdown& breakdown() const { return breakdown_; }

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  cost::TimeBreakdown breakdown_;
  double total_s_ = 0;
  QString part_title_;
};

}  // namespace hetsim::gui
