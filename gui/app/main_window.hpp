#pragma once
// The main window: File (open, recent, save, save as, exports), Edit (undo, redo: the
// document's edits), Run (run, cancel, copy as command), and three tabs: the scenario text with the reader's diagnostics, the purchase view
// (a scenario with [purchase]: api::buy) and the plan view (any other: api::estimate at once,
// api::plan when there is no [parallel], api::simulate in the background). One background job
// at a time: Run again supersedes it, Cancel drops it, closing the window stops it.

#include <QMainWindow>
#include <QMessageBox>

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

class QAction;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTimer;

namespace hetsim::gui {

class Document;
class JobRunner;
class PlanView;
class PurchaseView;
class ScenarioView;

/// Questions the window asks; tests replace them so that no dialog blocks.
struct Prompts {
  /// Unsaved changes: Save, Discard or Cancel.
  std::function<QMessageBox::StandardButton(QWidget* parent, const QString& question)> unsaved;
  /// A problem to tell (a file that cannot be read or written).
  std::function<void(QWidget* parent, const QString& title, const QString& message)> error;
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  void set_prompts(Prompts p) { prompts_ = std::move(p); }

  /// Opens `path` (asking about unsaved changes first); false when it was not opened.
  bool open_file(const QString& path);
  bool save();
  bool save_as(const QString& path);
  /// Runs what the scenario asks (buy, or estimate + plan/simulate); false when it cannot run
  /// (no scenario, or one with errors).
  bool run();
  void cancel();
  /// Edit > Undo and Redo: the document's last edit (pending typing handed over first), or the
  /// one undone last.
  void undo();
  void redo();
  /// Exports of the selected front point and of the front (false + the error told when not).
  bool export_plan(const QString& path);
  bool export_point(const QString& dir);
  bool export_csv(const QString& path);
  /// The simulated step shown in the Plan tab as a Chrome trace (what `hetsim simulate --trace`
  /// writes; opens in ui.perfetto.dev).
  bool export_trace(const QString& path);
  /// Shows front point `i`'s plan in the Plan tab: its estimate at once, its step simulated in
  /// the background. False while a job runs (it would supersede it) or without such a point.
  bool show_point_plan(std::size_t i);
  /// The CLI line that reproduces what Run does on the saved file.
  [[nodiscard]] QString command_line() const;

  [[nodiscard]] Document* document() const { return doc_; }
  [[nodiscard]] JobRunner* jobs() const { return jobs_; }
  [[nodiscard]] ScenarioView* scenario_view() const { return scenario_view_; }
  [[nodiscard]] PurchaseView* purchase_view() const { return purchase_view_; }
  [[nodiscard]] PlanView* plan_view() const { return plan_view_; }
  [[nodiscard]] QTabWidget* tabs() const { return tabs_; }
  [[nodiscard]] QAction* run_action() const { return run_; }
  [[nodiscard]] QAction* cancel_action() const { return cancel_; }
  [[nodiscard]] QAction* undo_action() const { return undo_; }
  [[nodiscard]] QAction* redo_action() const { return redo_; }
  [[nodiscard]] QProgressBar* progress_bar() const { return progress_; }
  [[nodiscard]] QString status_text() const;

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void build_menus();
  void update_actions();
  void update_title();
  void fill_recent_menu();
  bool maybe_save();
  void status(const QString& text);
  void tell(const QString& title, const QString& message);
  void start_buy(const Scenario& s);
  void start_plan(const Scenario& s);
  void start_simulate(const Scenario& s, const plan::Plan& p);
  /// The plan view now shows `p` on `s`: the what-if controls start from `s`'s values.
  void set_what_if_base(const Scenario& s, const plan::Plan& p, const QString& origin);
  void what_if_changed();
  /// The purchase view's what-if values changed: the search shown is priced again (api::reprice).
  void purchase_what_if_changed();
  void job_ended();

  Document* doc_ = nullptr;
  JobRunner* jobs_ = nullptr;
  ScenarioView* scenario_view_ = nullptr;
  PurchaseView* purchase_view_ = nullptr;
  PlanView* plan_view_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QAction* save_ = nullptr;
  QAction* run_ = nullptr;
  QAction* cancel_ = nullptr;
  QAction* undo_ = nullptr;
  QAction* redo_ = nullptr;
  QAction* export_plan_ = nullptr;
  QAction* export_point_ = nullptr;
  QAction* export_csv_ = nullptr;
  QAction* export_trace_ = nullptr;
  QMenu* recent_ = nullptr;
  QLabel* status_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  Prompts prompts_;
  struct WhatIfBase {
    Scenario scenario;
    plan::Plan plan;
    QString origin;
  };
  std::optional<WhatIfBase> what_if_base_;
  bool what_if_error_ = false;  ///< the what-if values cannot be evaluated (a batch that does not split)
  QTimer* what_if_pause_ = nullptr;  ///< the simulation follows the estimate after a pause
  std::optional<std::pair<Scenario, plan::Plan>> pending_simulation_;
  quint64 simulation_job_ = 0;
};

}  // namespace hetsim::gui
