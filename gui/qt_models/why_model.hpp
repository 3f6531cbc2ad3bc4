#pragma once
// Why the recommended point, as tables behind the purchase view's charts:
//   - TornadoModel: for each price of the sensitivity (buy::Result::sensitivity), by how much the
//     recommendation's total cost changes at its low and its high setting (api::buy's figures;
//     the largest swing first), the rows of the tornado chart;
//   - PartsModel: the recommended point against the runner-up by part (buy::versus): the time
//     until trained (compute, exposed communication, bubble, recompute, optimizer, failures, lead
//     time) or the total cost (capex, energy, rent, amortisation), the bars of a waterfall.

#include <QAbstractTableModel>
#include <QString>

#include <vector>

#include "sim/plan/buy_pricing.hpp"

namespace hetsim::gui {

/// One price of the sensitivity, at its low and high setting.
struct TornadoModelRow {
  QString what;                           ///< "h100-sxm5 price", "electricity"
  double low_factor = 1, high_factor = 1;  ///< 0.8 and 1.2; 0.5 and 1.5
  double low_change_usd = 0, high_change_usd = 0;  ///< the recommendation's total cost change
  double low_time_change_s = 0, high_time_change_s = 0;
  bool low_changes = false, high_changes = false;  ///< whether the recommendation changes
  bool low_nothing = false, high_nothing = false;  ///< nothing fits the budget at that setting
};

/// `r.sensitivity` a row per price, in order of the largest cost change first (the search's
/// order among equal swings).
[[nodiscard]] std::vector<TornadoModelRow> tornado_rows(const buy::Result& r);
/// The same prices for front point `i` of `r` (searched or re-priced under `s`): by how much its
/// own total cost and time move at each setting of the sensitivity (buy::point_sensitivity).
/// `changes` and `nothing` stay false (the point is the same composition). Empty when `i` is not
/// on the front or its composition is not among r.planned_points.
[[nodiscard]] std::vector<TornadoModelRow> point_tornado_rows(const Scenario& s, const buy::Result& r, std::size_t i);

class TornadoModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kWhat, kLow, kHigh, kColumns };
  /// The cost change in $ (double) of kLow or kHigh.
  static constexpr int kValueRole = Qt::UserRole + 1;

  explicit TornadoModel(QObject* parent = nullptr);
  void set_rows(std::vector<TornadoModelRow> rows);
  [[nodiscard]] const std::vector<TornadoModelRow>& rows() const { return rows_; }

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<TornadoModelRow> rows_;
};

/// A part of two points' time (s) or cost ($): the other point's (the runner-up, or the
/// recommended point when another is chosen), the chosen point's and the difference (chosen −
/// other), as buy::versus gives them.
struct PartRow {
  QString part;
  double other = 0, chosen = 0, difference = 0;
};

enum class PartUnit { Seconds, Usd };

/// The time parts (Seconds) or the cost parts (Usd) of `v`.
[[nodiscard]] std::vector<PartRow> part_rows(const buy::Versus& v, PartUnit unit);

class PartsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kPart, kOther, kChosen, kDifference, kColumns };
  /// The raw number (double: seconds or $) of kOther, kChosen, kDifference.
  static constexpr int kValueRole = Qt::UserRole + 1;

  explicit PartsModel(PartUnit unit, QObject* parent = nullptr);
  void set_rows(std::vector<PartRow> rows);
  [[nodiscard]] const std::vector<PartRow>& rows() const { return rows_; }
  [[nodiscard]] PartUnit unit() const { return unit_; }

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  PartUnit unit_;
  std::vector<PartRow> rows_;
};

}  // namespace hetsim::gui
