#pragma once
// The Pareto front of a purchase search as a table: one row per point, fastest first, the
// numbers of api::buy's buy::Point as they are (kSortRole) and as the CLI prints them
// (DisplayRole). Sort it through a QSortFilterProxyModel with setSortRole(kSortRole).

#include <QAbstractTableModel>
#include <QString>

#include <cstddef>
#include <vector>

#include "sim/plan/buy.hpp"

namespace hetsim::gui {

/// One front point as the table shows it: the raw numbers and the texts.
struct FrontRow {
  std::size_t index = 0;  ///< in buy::Result::front
  bool recommended = false;
  QString buy;            ///< report::what_is_bought
  int devices_bought = 0;
  double capex_usd = 0, run_usd = 0, total_usd = 0;
  double effective_time_s = 0, lead_time_s = 0, trained_in_s = 0;
  double usd_per_million_tokens = 0, power_kw = 0;
  bool has_deadline = false, meets_deadline = true;
  double step_s = 0;  ///< the best plan's step: simulated when verified, else the estimate
  double mfu = 0;
  QString plan;       ///< report::plan_summary
};

/// The rows of `r`'s front (`s` is the scenario searched).
[[nodiscard]] std::vector<FrontRow> front_rows(const Scenario& s, const buy::Result& r);

class FrontModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    kPoint, kBuy, kDevices, kCapex, kRun, kTotal, kTime, kLead, kTrainedIn, kUsdPerMTok, kPower, kDeadline,
    kStep, kMfu, kPlan, kColumns
  };
  /// The raw value of a cell (double, int or QString), for sorting and for tests.
  static constexpr int kSortRole = Qt::UserRole + 1;
  /// The row's index in the front (std::size_t as qulonglong), whatever the column.
  static constexpr int kPointRole = Qt::UserRole + 2;

  explicit FrontModel(QObject* parent = nullptr);

  void set_rows(std::vector<FrontRow> rows);
  void clear();
  [[nodiscard]] const std::vector<FrontRow>& rows() const { return rows_; }

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<FrontRow> rows_;
};

}  // namespace hetsim::gui
