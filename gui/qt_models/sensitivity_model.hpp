#pragma once
// Whether a purchase search's recommendation survives a change of one price (buy::Result::
// sensitivity: each candidate's price ±20 %, electricity ±50 %), as a table: what changed, by how
// much, whether the recommendation changes, and to what.

#include <QAbstractTableModel>

#include <vector>

#include "sim/plan/buy.hpp"

namespace hetsim::gui {

/// One sensitivity row as shown.
struct SensitivityRow {
  QString what;       ///< "h100-sxm5 price", "electricity"
  double factor = 1;  ///< 0.8, 1.2, 0.5, 1.5
  bool changes = false;
  bool nothing_fits = false;  ///< nothing fits the budget at that price
  QString becomes;    ///< the recommendation then ("buy 1 × h200-sxm (8 devices)"), when it changes
};

/// The rows of `r.sensitivity` (`s` is the scenario searched).
[[nodiscard]] std::vector<SensitivityRow> sensitivity_rows(const Scenario& s, const buy::Result& r);

class SensitivityModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kWhat, kChange, kVerdict, kColumns };
  static constexpr int kFactorRole = Qt::UserRole + 1;   ///< the factor (double), any column
  static constexpr int kChangesRole = Qt::UserRole + 2;  ///< whether the recommendation changes (bool)

  explicit SensitivityModel(QObject* parent = nullptr);

  void set_rows(std::vector<SensitivityRow> rows);
  [[nodiscard]] const std::vector<SensitivityRow>& rows() const { return rows_; }

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<SensitivityRow> rows_;
};

}  // namespace hetsim::gui
