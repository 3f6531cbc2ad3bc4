#pragma once
// The main window: File (open, recent, save, save as, exports), Edit (undo, redo: the
// document's edits), Run (run, cancel, copy as command), and three tabs: the scenario text with the reader's diagnostics, the purchase view
// (a scenario with [purchase]: api::buy) and the plan view (any other: api::estimate at once,
// api::plan when there is no [parallel], api::simulate in the background). One background job
// at a time: Run again supersedes it, Cancel drops it, closing the window stops it. The plan the
// Plan tab shows (the scenario's own, the planner's best, a front point's, with what-if values or
// not) is kept with the scenario it runs on, for its export and for Copy as Command.

#include <QMainWindow>
#include <QMessageBox>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "gui/views/plan_view.hpp"
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
class PurchaseView;
struct BuyOutcome;
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
  /// The plan shown in the Plan tab as plan JSON, written by the CLI's writer (io::plan_to_json,
  /// what `hetsim estimate --save-plan` and `hetsim plan --out` write) for the scenario it runs
  /// on: the file's, a front point's composition, or the file with the what-if values. Refused
  /// (false, the reason told) without a plan shown or for a plan that does not fit in memory,
  /// which the CLI does not write either.
  bool export_shown_plan(const QString& path);
  /// Shows front point `i`'s plan in the Plan tab: its estimate at once, its step simulated in
  /// the background. False while a job runs (it would supersede it) or without such a point.
  bool show_point_plan(std::size_t i);
  /// The CLI line that reproduces what is on screen: on the Plan tab, the plan shown
  /// (`hetsim simulate SCENARIO --plan PLAN.json` for a front point's or an exported plan, the
  /// file names it was exported to, or placeholders and a comment saying what to export first);
  /// elsewhere what Run does on the saved file. Paths are quoted for a POSIX shell. A comment
  /// (`# …`) says what the line does not carry: unsaved text, what-if values.
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
  /// Where the plan shown comes from.
  enum class PlanFrom { File, Planner, FrontPoint };

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
  void set_what_if_base(const Scenario& s, const plan::Plan& p, const QString& origin, PlanFrom from,
                        std::size_t point = 0, bool repriced = false);
  void what_if_changed();
  /// The purchase view's what-if values changed: the search shown is priced again (api::reprice).
  void purchase_what_if_changed();
  void job_ended();
  /// The Plan tab now shows `p` on `s` (its estimate): what its export and command line use.
  void show_plan(const Scenario& s, const plan::Plan& p, const QString& origin);
  void clear_plan(const QString& message);
  void ask_export_shown_plan();
  void ask_export_trace();
  /// Front point `i` of `o` was exported: its scenario (when not empty) and plan files, for the
  /// command line.
  void remember_point_export(const std::shared_ptr<const BuyOutcome>& o, std::size_t i, const QString& scenario,
                             const QString& plan);
  [[nodiscard]] QString plan_command_line() const;

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
  QAction* export_shown_plan_ = nullptr;
  QMenu* recent_ = nullptr;
  QLabel* status_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  Prompts prompts_;
  struct WhatIfBase {
    Scenario scenario;
    plan::Plan plan;
    QString origin;
    PlanFrom from = PlanFrom::File;
    std::size_t point = 0;   ///< the front point (0-based) when from == FrontPoint
    bool repriced = false;   ///< a point of a what-if re-pricing: its prices are not the file's
    WhatIf controls;         ///< the what-if values as the controls showed them for this plan
  };
  /// The plan the Plan tab shows, on the scenario it runs on (what-if values applied).
  struct ShownPlan {
    Scenario scenario;
    plan::Plan plan;
    bool fits = true;
    bool what_if = false;  ///< its values differ from the file's (what-if controls, a re-pricing)
    QString exported_to;   ///< where export_shown_plan wrote it last
  };
  std::optional<ShownPlan> shown_;
  /// The front points' files written by export_point / export_plan, for the command line; they
  /// belong to exports_of_ (the search then shown).
  std::map<std::size_t, QString> point_scenarios_, point_plans_;
  std::weak_ptr<const BuyOutcome> exports_of_;
  quint64 buy_job_ = 0;
  quint64 plan_job_ = 0;
  std::optional<WhatIfBase> what_if_base_;
  bool what_if_error_ = false;  ///< the what-if values cannot be evaluated (a batch that does not split)
  QTimer* what_if_pause_ = nullptr;  ///< the simulation follows the estimate after a pause
  std::optional<std::pair<Scenario, plan::Plan>> pending_simulation_;
  quint64 simulation_job_ = 0;
};

}  // namespace hetsim::gui
