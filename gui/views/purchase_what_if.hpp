#pragma once
// The purchase view's what-if controls: the values api::reprice may change without planning
// again (every device's price ×, each candidate's prices and lead time, electricity, PUE,
// amortisation, rent or own, budget, power limit, deadline), and the scenario they make from the
// one searched.

#include <QGroupBox>

#include <optional>
#include <vector>

#include "sim/scenario/scenario.hpp"

class QComboBox;
class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;

namespace hetsim::gui {

/// What-if values as changes to the scenario searched: each value that is set replaces the
/// scenario's, then every device's prices (owned and candidates, purchase and rent) are
/// multiplied by price_factor. Default: no change.
struct PurchaseWhatIf {
  double price_factor = 1;
  std::optional<double> electricity_usd_per_kwh, pue, amortisation_years;
  std::optional<CostSpec::Mode> mode;
  std::optional<double> budget_usd, power_kw, deadline_days;  ///< 0: no limit, as in the TOML
  struct Prices {
    std::optional<double> purchase_usd, usd_per_hour;  ///< per device
    std::optional<double> lead_time_days;              ///< from the order to the nodes in service
  };
  std::vector<Prices> candidates;  ///< by [purchase] candidate; missing ones unchanged

  [[nodiscard]] bool changes_nothing() const;
};

/// `s` with `w` applied. Requires: s.purchase when w changes the budget, power limit, deadline
/// or a candidate's prices.
[[nodiscard]] Scenario apply_purchase_what_if(Scenario s, const PurchaseWhatIf& w);

/// The changes `w` makes to `s`, in words ("h100-sxm5 at $30k a device, PUE 1.5, renting"):
/// the purchase view's summary of a re-pricing.
[[nodiscard]] QString describe(const Scenario& s, const PurchaseWhatIf& w);

/// The controls. set_scenario puts them at a searched scenario's values; values() reports what
/// differs from those (a control set back to its value is no change, so the values shown with
/// the spin boxes' rounding never count as changes). `changed` is emitted on each edit by the user.
class PurchaseWhatIfBox : public QGroupBox {
  Q_OBJECT
 public:
  explicit PurchaseWhatIfBox(QWidget* parent = nullptr);

  /// The controls at `s`'s values, one price pair per candidate; without signals.
  void set_scenario(const Scenario& s);
  [[nodiscard]] PurchaseWhatIf values() const;

  [[nodiscard]] QDoubleSpinBox* price_factor() const { return price_; }
  [[nodiscard]] QDoubleSpinBox* electricity() const { return electricity_; }
  [[nodiscard]] QDoubleSpinBox* pue() const { return pue_; }
  [[nodiscard]] QDoubleSpinBox* amortisation() const { return amortisation_; }
  [[nodiscard]] QComboBox* mode() const { return mode_; }
  [[nodiscard]] QDoubleSpinBox* budget() const { return budget_; }
  [[nodiscard]] QDoubleSpinBox* power() const { return power_; }
  [[nodiscard]] QDoubleSpinBox* deadline() const { return deadline_; }
  /// Candidate `k`'s price per device ($) and per device-hour ($); k < candidate_count().
  [[nodiscard]] QDoubleSpinBox* candidate_purchase(std::size_t k) const { return candidates_.at(k).purchase; }
  [[nodiscard]] QDoubleSpinBox* candidate_rent(std::size_t k) const { return candidates_.at(k).rent; }
  /// Candidate `k`'s lead time (days).
  [[nodiscard]] QDoubleSpinBox* candidate_lead_time(std::size_t k) const { return candidates_.at(k).lead; }
  [[nodiscard]] std::size_t candidate_count() const { return candidates_.size(); }

 signals:
  void changed();

 private:
  struct CandidateControls {
    QString name;
    QLabel* label = nullptr;
    QDoubleSpinBox* purchase = nullptr;
    QDoubleSpinBox* rent = nullptr;
    QDoubleSpinBox* lead = nullptr;
  };
  QDoubleSpinBox* spin(double min, double max, int decimals, double step, const QString& tip);

  QDoubleSpinBox* price_ = nullptr;
  QDoubleSpinBox* electricity_ = nullptr;
  QDoubleSpinBox* pue_ = nullptr;
  QDoubleSpinBox* amortisation_ = nullptr;
  QComboBox* mode_ = nullptr;
  QDoubleSpinBox* budget_ = nullptr;
  QDoubleSpinBox* power_ = nullptr;
  QDoubleSpinBox* deadline_ = nullptr;
  QHBoxLayout* candidate_row_ = nullptr;
  std::vector<CandidateControls> candidates_;
  /// The controls' values as set_scenario left them (after rounding), and the scenario's mode.
  double shown_electricity_ = 0, shown_pue_ = 0, shown_amortisation_ = 0, shown_budget_ = 0, shown_power_ = 0,
         shown_deadline_ = 0;
  int shown_mode_ = 0;
  struct ShownCandidate {
    double purchase = 0, rent = 0, lead = 0;
  };
  std::vector<ShownCandidate> shown_candidates_;
};

}  // namespace hetsim::gui
