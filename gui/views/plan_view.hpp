#pragma once
// The plan view, for a scenario without [purchase]: the plan (the scenario's [parallel], or the
// planner's best), its closed-form estimate at once (step time and its breakdown, throughput,
// MFU, time and cost to train), memory per device type as bars against capacity, and the
// simulated step when the background simulation comes back. Its Export plan and Export trace
// buttons ask the window to write the plan shown (plan JSON) and the simulated step (Chrome trace).

#include <QWidget>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/analytic/estimate.hpp"
#include "sim/api/api.hpp"

class QDoubleSpinBox;
class QCheckBox;
class QGroupBox;
class QPushButton;
class QSpinBox;
class QLabel;
class QTabWidget;
class QTableView;

namespace hetsim::gui {

class BreakdownModel;
class MemoryBars;
struct MemoryBar;
class MemoryModel;
class TimelinePage;
class TimelineView;
struct TimelineData;

/// What the view keeps of a simulation: values only, no engine objects.
struct SimFigures {
  analytic::Estimate simulated;           ///< the estimate with the simulated step and peaks
  double step_s = 0;
  double estimate_step_s = 0;             ///< the closed form, for comparison
  double bubble_fraction = 0;
  double exposed_comm_s = 0;
  cost::TimeBreakdown critical_by_kind;   ///< the critical path by kind of task; sums to the step
  /// The step as a Chrome trace (report::chrome_trace, what `hetsim simulate --trace` writes);
  /// empty above kMaxTraceTasks tasks.
  std::string chrome_trace;
  /// The step as the timeline draws it; null above kMaxTraceTasks tasks.
  std::shared_ptr<const TimelineData> timeline;
};

/// The largest step whose Chrome trace (some 300 bytes a task) and timeline are kept.
inline constexpr std::size_t kMaxTraceTasks = 1000000;

/// What-if changes to a scenario's values: the estimate and the simulation of the same plan on
/// the changed scenario (what the CLI would print for a file with these values).
struct WhatIf {
  double nic_factor = 1;               ///< × every pool's NIC bandwidth
  double oversubscription = 1;         ///< the network's (≥ 1)
  double price_factor = 1;             ///< × every device's rental and purchase price
  double electricity_usd_per_kwh = 0;  ///< the scenario's [cost] value
  double mtbf_hours = 0;               ///< device-hours between interruptions; 0: the catalogue's
  int global_batch = 0;                ///< [training] global_batch, sequences per step; 0: unchanged
  bool operator==(const WhatIf&) const = default;
};
/// The what-if values of `s` as it is.
[[nodiscard]] WhatIf what_if_of(const Scenario& s);
/// `s` with `w` applied. A changed global batch needs the plan's batch split again: plan_for_batch.
[[nodiscard]] Scenario apply_what_if(Scenario s, const WhatIf& w);
/// `p` with its micro-batches split again for `s`'s global batch, so that
/// p.sequences_per_step() == s.training.global_batch (`p` itself when it already is). A plan
/// whose replicas all take the same number of micro-batches keeps them even, as the reader splits
/// a uniform [parallel] table; a plan with unlike groups is split as the planner splits one
/// (planner::split_batch: the groups finish together as nearly as whole micro-batches allow).
/// The result is checked by the reader's validator (io::validate_plan); its messages, about
/// `s.file`, when no split of this plan fits the batch.
[[nodiscard]] Result<plan::Plan> plan_for_batch(const Scenario& s, plan::Plan p);

/// Memory bars per stage of `e` (analytic::Estimate::stages, in its order): each stage's
/// breakdown against the capacity of its pool's device.
[[nodiscard]] std::vector<MemoryBar> stage_memory_bars(const analytic::Estimate& e);

/// The figures of api::simulate's result for `s`.
[[nodiscard]] SimFigures sim_figures(const Scenario& s, const api::Simulated& sim);

class PlanView : public QWidget {
  Q_OBJECT
 public:
  explicit PlanView(QWidget* parent = nullptr);

  /// Shows `p`'s estimate on `s`; `origin` says where the plan comes from.
  void show_estimate(const Scenario& s, const plan::Plan& p, const analytic::Estimate& e, const QString& origin);
  /// Adds the simulated step to what show_estimate showed.
  void show_simulation(const SimFigures& f);
  /// A line about the simulation in progress or why there is none ("simulating…", an error).
  void set_simulation_note(const QString& note);
  void clear(const QString& message);
  /// The what-if values cannot be evaluated (`message` says why): the figures are cleared, the
  /// what-if controls stay as they are so that the value can be changed back.
  void show_what_if_error(const QString& message);

  /// The last simulation shown (since the last estimate), if any.
  [[nodiscard]] const std::optional<SimFigures>& simulation() const { return figures_; }
  [[nodiscard]] QString headline_text() const;
  [[nodiscard]] QString simulation_text() const;
  [[nodiscard]] BreakdownModel* breakdown_model() const { return breakdown_; }
  [[nodiscard]] BreakdownModel* critical_model() const { return critical_; }
  [[nodiscard]] MemoryModel* memory_model() const { return memory_; }
  [[nodiscard]] MemoryBars* memory_bars() const { return bars_; }
  /// "By stage": the memory bars per pipeline stage of each replica group (each stage's own
  /// breakdown, analytic::Estimate::stages, against its device's capacity) instead of per device
  /// type (its worst stage, with the simulated peak when there is one).
  [[nodiscard]] QCheckBox* bars_by_stage() const { return by_stage_; }
  [[nodiscard]] TimelineView* timeline() const;
  /// The Timeline page: the timeline, its kinds, its search and the list of what it found.
  [[nodiscard]] TimelinePage* timeline_page() const { return timeline_page_; }
  /// Shows the "Step and memory" page (0) or the "Timeline" page (1).
  void show_page(int page);
  /// Sets the what-if controls (without emitting what_if_changed) and enables them.
  void set_what_if(const WhatIf& w);
  [[nodiscard]] WhatIf what_if() const;
  /// The controls, for tests: NIC ×, oversubscription, prices ×, electricity, MTBF.
  [[nodiscard]] QDoubleSpinBox* what_if_control(int i) const { return controls_[static_cast<std::size_t>(i)]; }
  /// The global batch's control (sequences per step).
  [[nodiscard]] QSpinBox* global_batch_control() const { return batch_; }
  /// "Export plan…" (the plan shown, as plan JSON) and "Export trace…" (the simulated step as a
  /// Chrome trace): they emit export_plan_requested and export_trace_requested; the window
  /// enables them.
  [[nodiscard]] QPushButton* export_plan_button() const { return export_plan_; }
  [[nodiscard]] QPushButton* export_trace_button() const { return export_trace_; }

 signals:
  /// A what-if control changed (by the user).
  void what_if_changed();
  void export_plan_requested();
  void export_trace_requested();

 private:
  void clear_figures();
  void refresh_bars();

  QLabel* headline_ = nullptr;
  QLabel* simulation_ = nullptr;
  BreakdownModel* breakdown_ = nullptr;
  BreakdownModel* critical_ = nullptr;
  MemoryModel* memory_ = nullptr;
  MemoryBars* bars_ = nullptr;
  QCheckBox* by_stage_ = nullptr;
  TimelinePage* timeline_page_ = nullptr;
  QTabWidget* pages_ = nullptr;
  std::array<QDoubleSpinBox*, 5> controls_{};
  QSpinBox* batch_ = nullptr;
  QGroupBox* what_if_box_ = nullptr;
  QPushButton* export_plan_ = nullptr;
  QPushButton* export_trace_ = nullptr;
  QTableView* breakdown_table_ = nullptr;
  QTableView* critical_table_ = nullptr;
  QTableView* memory_table_ = nullptr;
  analytic::Estimate estimate_;
  std::optional<SimFigures> figures_;
};

}  // namespace hetsim::gui
