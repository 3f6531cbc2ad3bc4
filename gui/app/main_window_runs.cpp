// MainWindow's runs: what Run starts for each kind of scenario (buy; estimate + simulate; plan
// first without [parallel]), a front point's plan, and what-if changes. Each is a background job
// of jobs_ (gui/app/job_runner.hpp); main_window.cpp has the rest of the window.
#include "gui/app/main_window.hpp"

#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QTimer>

#include <chrono>
#include <optional>

#include "gui/app/document.hpp"
#include "gui/app/exports.hpp"
#include "gui/app/job_runner.hpp"
#include "gui/qt_models/format.hpp"
#include "gui/views/plan_view.hpp"
#include "gui/views/purchase_view.hpp"
#include "gui/views/scenario_view.hpp"
#include "sim/api/api.hpp"
#include "sim/report/buy_report.hpp"
#include "sim/report/estimate_report.hpp"

namespace hetsim::gui {

namespace {

// What a background job hands back: a value, or the diagnostics that say why there is none.
template <class T>
struct Outcome {
  std::optional<T> value;
  Diagnostics errors;
  double seconds = 0;
};

}  // namespace

bool MainWindow::run() {
  scenario_view_->apply_pending();
  if (!doc_->scenario()) {
    status(doc_->diagnostics().empty() ? tr("Nothing to run: open a scenario first")
                                       : tr("The scenario has errors: fix them to run"));
    tabs_->setCurrentWidget(scenario_view_);
    return false;
  }
  if (what_if_base_ && what_if_error_) {
    status(tr("The what-if global batch cannot be split over the plan: change it to run"));
    return false;
  }
  const Scenario& s = *doc_->scenario();
  if (s.purchase) {
    start_buy(s);
  } else if (s.plan) {
    set_what_if_base(s, *s.plan, tr("the scenario's [parallel] plan"), PlanFrom::File);
    show_plan(s, *s.plan, what_if_base_->origin);
    tabs_->setCurrentWidget(plan_view_);
    start_simulate(s, *s.plan);
  } else {
    start_plan(s);
  }
  return true;
}

void MainWindow::cancel() {
  if (!jobs_->busy()) return;
  const quint64 job = jobs_->current();
  jobs_->cancel();
  // What the cancelled job was doing is no longer true: a front still growing, "Searching…",
  // "Simulating one step…".
  if (job == buy_job_ && (!purchase_view_->outcome() || purchase_view_->outcome()->partial))
    purchase_view_->clear(tr("Cancelled: run the search again for its front."));
  if (job == plan_job_) clear_plan(tr("Cancelled: press Run to search the plan again."));
  if (job == simulation_job_) plan_view_->set_simulation_note(tr("Cancelled: the step was not simulated."));
  status(tr("Cancelled"));
}

void MainWindow::job_ended() {
  if (jobs_->busy()) return;  // a follow-up job (simulate after plan) is running
  progress_->hide();
  cancel_button_->hide();
  update_actions();
}

void MainWindow::start_buy(const Scenario& s) {
  using Run = Outcome<buy::Result>;
  purchase_view_->clear(tr("Searching the compositions of the candidates…"));
  tabs_->setTabEnabled(tabs_->indexOf(purchase_view_), true);
  tabs_->setCurrentWidget(purchase_view_);
  auto source = std::make_shared<const std::string>(doc_->text().toStdString());
  buy_job_ = jobs_->start<Run>(
      tr("Searching the purchase (hetsim buy)…"),
      [this, s](const JobContext& ctx) {
        buy::Options opts;
        opts.progress = ctx.progress;
        opts.stop = ctx.stop;
        const auto t0 = std::chrono::steady_clock::now();
        // The front as it grows: a copy for the UI thread, shown while this search is current.
        opts.on_front = [this, s, t0, partial = ctx.partial](const std::vector<buy::Point>& front) {
          auto copy = std::make_shared<const std::vector<buy::Point>>(front);
          const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          partial([this, s, copy, at] { purchase_view_->show_partial(s, *copy, at); });
        };
        auto r = api::buy(s, opts);
        Run out;
        out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r)
          out.value = std::move(*r);
        else
          out.errors = r.errors();
        return out;
      },
      [this, s, source](Run r) {
        if (!r.value) {
          purchase_view_->clear(errors_text(r.errors));
          status(tr("The search failed"));
          return;
        }
        auto outcome = std::make_shared<BuyOutcome>();
        outcome->scenario = s;
        outcome->source_text = *source;
        outcome->result = std::move(*r.value);
        outcome->seconds = r.seconds;
        const std::size_t n = outcome->result.front.size();
        purchase_view_->show_outcome(std::move(outcome));
        status(n == 0 ? tr("No composition has a plan that fits within the limits")
                      : tr("%n point(s) on the front", "", static_cast<int>(n)));
        update_actions();
      });
}

void MainWindow::start_plan(const Scenario& s) {
  using Run = Outcome<api::Planned>;
  clear_plan(tr("Searching the best plan (hetsim plan)…"));
  tabs_->setCurrentWidget(plan_view_);
  plan_job_ = jobs_->start<Run>(
      tr("Searching plans (hetsim plan)…"),
      [s](const JobContext& ctx) {
        planner::Options opts;
        opts.progress = ctx.progress;
        opts.stop = ctx.stop;
        auto r = api::plan(s, opts);
        Run out;
        if (r)
          out.value = std::move(*r);
        else
          out.errors = r.errors();
        return out;
      },
      [this, s](Run r) {
        if (!r.value) {
          clear_plan(errors_text(r.errors));
          status(tr("The plan search failed"));
          return;
        }
        if (r.value->result.top.empty()) {
          clear_plan(tr("No plan fits this cluster's memory (%1 plans evaluated).").arg(r.value->result.evaluated));
          status(tr("No plan fits"));
          return;
        }
        const plan::Plan p = r.value->result.top.front().plan;
        const QString origin = tr("the planner's best of %1 plans").arg(r.value->result.evaluated);
        set_what_if_base(s, p, origin, PlanFrom::Planner);
        show_plan(s, p, origin);
        start_simulate(s, p);
      });
}

void MainWindow::start_simulate(const Scenario& s, const plan::Plan& p) {
  using Run = Outcome<SimFigures>;
  plan_view_->set_simulation_note(tr("Simulating one step…"));
  simulation_job_ = jobs_->start<Run>(
      tr("Simulating one step (hetsim simulate)…"),
      [s, p](const JobContext& ctx) {
        // A superseded simulation is asked to stop (within 2¹⁶ events) and its result dropped.
        api::SimulateOptions opts;
        opts.progress = ctx.progress;
        opts.stop = ctx.stop;
        auto r = api::simulate(s, p, opts);
        Run out;
        if (r)
          out.value = sim_figures(s, *r);
        else
          out.errors = r.errors();
        return out;
      },
      [this](Run r) {
        if (!r.value) {
          plan_view_->set_simulation_note(errors_text(r.errors));
          status(tr("The simulation failed"));
          return;
        }
        plan_view_->show_simulation(*r.value);
        status(tr("Simulated"));
        update_actions();
      });
  // The engine reports its fraction of tasks done (JobRunner::progressed drives the bar).
}

bool MainWindow::show_point_plan(std::size_t i) {
  const auto& o = purchase_view_->outcome();
  if (!o || o->partial || i >= o->result.front.size() || jobs_->busy()) return false;
  const buy::Point& p = o->result.front[i];
  const QString origin =
      tr("front point %1's plan (buy %2)").arg(i + 1).arg(qs(report::what_is_bought(o->scenario, p)));
  set_what_if_base(p.scenario, p.best.plan, origin, PlanFrom::FrontPoint, i, o->what_if);
  show_plan(p.scenario, p.best.plan, origin);
  tabs_->setCurrentWidget(plan_view_);
  start_simulate(p.scenario, p.best.plan);
  return true;
}

void MainWindow::set_what_if_base(const Scenario& s, const plan::Plan& p, const QString& origin, PlanFrom from,
                                  std::size_t point, bool repriced) {
  what_if_base_ = WhatIfBase{s, p, origin, from, point, repriced, {}};
  what_if_error_ = false;
  pending_simulation_.reset();
  plan_view_->set_what_if(what_if_of(s));
  what_if_base_->controls = plan_view_->what_if();  // as the controls round them
}

void MainWindow::show_plan(const Scenario& s, const plan::Plan& p, const QString& origin) {
  const analytic::Estimate e = api::estimate(s, p);
  plan_view_->show_estimate(s, p, e, origin);
  const bool what_if =
      what_if_base_ && (what_if_base_->repriced || plan_view_->what_if() != what_if_base_->controls);
  shown_ = ShownPlan{s, p, e.fits, what_if, {}};
  update_actions();
}

void MainWindow::clear_plan(const QString& message) {
  plan_view_->clear(message);
  shown_.reset();
  update_actions();
}

void MainWindow::what_if_changed() {
  if (!what_if_base_) return;
  const WhatIf w = plan_view_->what_if();
  Scenario s = apply_what_if(what_if_base_->scenario, w);
  // A new global batch is split again over the plan's replicas; when it cannot be, nothing is
  // estimated or simulated (a simulation of the values before is dropped) and Run waits.
  auto p = plan_for_batch(s, what_if_base_->plan);
  what_if_error_ = !p.ok();
  if (!p) {
    pending_simulation_.reset();
    what_if_pause_->stop();
    if (jobs_->busy() && jobs_->current() == simulation_job_) jobs_->cancel();
    shown_.reset();
    plan_view_->show_what_if_error(
        tr("Global batch %1 cannot be split over this plan's replicas (%2); change it to run:\n%3")
            .arg(w.global_batch)
            .arg(qs(report::plan_summary(what_if_base_->scenario, what_if_base_->plan)), errors_text(p.errors())));
    status(tr("The what-if values cannot be evaluated"));
    update_actions();
    return;
  }
  // The estimate at once (closed form: well under the 100 ms), the simulation after a pause.
  show_plan(s, *p, what_if_base_->origin + tr(", what-if values"));
  plan_view_->set_simulation_note(tr("The simulation follows…"));
  pending_simulation_ = std::make_pair(std::move(s), std::move(*p));
  what_if_pause_->start();
  update_actions();
}

void MainWindow::purchase_what_if_changed() {
  const std::shared_ptr<const BuyOutcome> searched = purchase_view_->searched();
  if (!searched) return;
  const PurchaseWhatIf w = purchase_view_->what_if();
  if (w.changes_nothing()) {
    purchase_view_->show_outcome(searched);  // the search's own answer, exports included
    update_actions();
    return;
  }
  // Pricing only, no planning: on this thread, at once (gui_whatif_perftest measures it).
  const Scenario changed = apply_purchase_what_if(searched->scenario, w);
  auto x = api::reprice(searched->scenario, changed, searched->result);
  if (!x) {
    status(errors_text(x.errors()));
    return;
  }
  auto o = std::make_shared<BuyOutcome>();
  o->scenario = changed;
  o->source_text = searched->source_text;
  o->result = std::move(x->result);
  o->seconds = searched->seconds;
  o->what_if = true;
  o->refused = x->refused;
  o->may_join = x->may_join;
  const std::size_t n = o->result.front.size();
  purchase_view_->show_outcome(std::move(o));
  status(tr("What if: %n point(s) on the re-priced front", "", static_cast<int>(n)));
  update_actions();
}

}  // namespace hetsim::gui
