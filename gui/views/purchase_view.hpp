#pragma once
// The purchase view: a search's Pareto front (total cost against time to train) as a chart with
// the budget and deadline lines, the front as a sortable table, and the chosen point's details
// (what to buy, cost, time, plan in one line). Chart, table and details follow one selection.

#include <QWidget>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "gui/views/purchase_what_if.hpp"
#include "sim/plan/buy.hpp"

class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;

namespace hetsim::gui {

class FrontChart;
class FrontModel;
class PartsModel;
class SensitivityModel;
class TornadoChart;
class TornadoModel;
class WaterfallChart;

/// A finished search, as a value: the scenario searched, the text it was read from (for the
/// exports) and api::buy's result.
struct BuyOutcome {
  Scenario scenario;
  std::string source_text;
  buy::Result result;
  double seconds = 0;
  /// The front so far of a search still running (buy::Options::on_front): no recommendation
  /// yet, nothing to export.
  bool partial = false;
  /// The search's result priced again under the what-if values (api::reprice): `scenario` has
  /// them; nothing to export (the files would be the scenario's, at its own prices).
  bool what_if = false;
  std::size_t refused = 0;   ///< api::reprice: planned compositions the limits now refuse
  std::size_t may_join = 0;  ///< api::reprice: compositions never planned that could now join
};

/// The chosen point in words (HTML): what to buy, capex/run/total, time to train, lead time,
/// deadline, power, $/M tokens, step, MFU, what its neighbours on the front gain or cost (as
/// `hetsim buy` says it of the recommended point), the plan in one line.
[[nodiscard]] QString point_details(const Scenario& s, const buy::Result& r, std::size_t i);
/// What the search looked at, in one line ("24 compositions in 5.7 s: 3 over power, 21 planned"),
/// and, when nothing fits the limits, the smallest composition that would.
[[nodiscard]] QString search_summary(const Scenario& s, const buy::Result& r, double seconds);

class PurchaseView : public QWidget {
  Q_OBJECT
 public:
  explicit PurchaseView(QWidget* parent = nullptr);
  ~PurchaseView() override;

  /// Shows a search's front and selects its recommended point.
  void show_outcome(std::shared_ptr<const BuyOutcome> outcome);
  /// Shows the front so far of the search of `s` still running, `seconds` after its start.
  void show_partial(const Scenario& s, const std::vector<buy::Point>& front, double seconds);
  /// Empties the view with a message ("searching…", "cancelled").
  void clear(const QString& message);
  /// The search last shown (not a what-if re-pricing of it): what the what-if values re-price.
  [[nodiscard]] const std::shared_ptr<const BuyOutcome>& searched() const { return searched_; }
  /// The what-if values: what differs from the scenario searched (api::reprice's inputs).
  [[nodiscard]] PurchaseWhatIf what_if() const;
  [[nodiscard]] PurchaseWhatIfBox* what_if_box() const { return what_if_box_; }
  /// × every device's price, electricity $/kWh (what the controls show).
  [[nodiscard]] double price_factor() const;
  [[nodiscard]] double electricity_usd_per_kwh() const;
  [[nodiscard]] QDoubleSpinBox* price_control() const;
  [[nodiscard]] QDoubleSpinBox* electricity_control() const;
  /// Selects front point `i` (in api::buy's order) in the chart, the table and the details.
  void select_point(std::size_t i);

  [[nodiscard]] const std::shared_ptr<const BuyOutcome>& outcome() const { return outcome_; }
  [[nodiscard]] std::optional<std::size_t> selected_point() const { return selected_; }
  [[nodiscard]] QString details_text() const;
  [[nodiscard]] QString summary_text() const;
  [[nodiscard]] FrontModel* model() const { return model_; }
  [[nodiscard]] QSortFilterProxyModel* proxy() const { return proxy_; }
  [[nodiscard]] QTableView* table() const { return table_; }
  [[nodiscard]] QPushButton* show_plan_button() const { return show_plan_; }
  [[nodiscard]] SensitivityModel* sensitivity_model() const { return sensitivity_; }
  [[nodiscard]] FrontChart* chart() const { return chart_; }
  /// The sensitivity as a tornado (the recommendation's, or the selected point's own), and the
  /// selected point by part against the runner-up (when recommended) or the recommended point.
  [[nodiscard]] TornadoModel* tornado_model() const { return tornado_model_; }
  [[nodiscard]] TornadoChart* tornado() const { return tornado_; }
  [[nodiscard]] PartsModel* time_parts_model() const { return time_parts_; }
  [[nodiscard]] PartsModel* cost_parts_model() const { return cost_parts_; }
  [[nodiscard]] WaterfallChart* time_waterfall() const { return time_waterfall_; }
  [[nodiscard]] WaterfallChart* cost_waterfall() const { return cost_waterfall_; }
  [[nodiscard]] QString why_text() const;
  /// The side pages: the point (0), the sensitivity (1), why this one (2).
  [[nodiscard]] QTabWidget* side_pages() const { return side_; }

 signals:
  void point_selected(std::size_t i);
  /// "Show this point's plan" (the button, or a double click on a row).
  void plan_requested(std::size_t i);
  /// A what-if value changed (by the user).
  void what_if_changed();

 private:
  void on_table_selection();
  /// The tornado and the waterfalls of the selected point (none selected, or a partial front:
  /// the recommendation's tornado, or empty).
  void show_why();

  std::shared_ptr<const BuyOutcome> outcome_;
  std::shared_ptr<const BuyOutcome> searched_;
  PurchaseWhatIfBox* what_if_box_ = nullptr;
  std::optional<std::size_t> selected_;
  bool selecting_ = false;
  QLabel* summary_ = nullptr;
  FrontChart* chart_ = nullptr;
  QLabel* details_ = nullptr;
  QPushButton* show_plan_ = nullptr;
  SensitivityModel* sensitivity_ = nullptr;
  QTableView* sensitivity_table_ = nullptr;
  QTabWidget* side_ = nullptr;
  TornadoModel* tornado_model_ = nullptr;
  TornadoChart* tornado_ = nullptr;
  QLabel* why_ = nullptr;
  PartsModel* time_parts_ = nullptr;
  PartsModel* cost_parts_ = nullptr;
  WaterfallChart* time_waterfall_ = nullptr;
  WaterfallChart* cost_waterfall_ = nullptr;
  FrontModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
};

}  // namespace hetsim::gui
