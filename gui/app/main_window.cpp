#include "gui/app/main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>

#include <optional>

#include "gui/app/document.hpp"
#include "gui/app/exports.hpp"
#include "gui/app/job_runner.hpp"
#include "gui/app/recent_files.hpp"
#include "gui/qt_models/format.hpp"
#include "gui/views/plan_view.hpp"
#include "gui/views/purchase_view.hpp"
#include "gui/views/scenario_view.hpp"
#include "sim/api/api.hpp"
#include "sim/io/plan_json.hpp"
#include "sim/report/buy_report.hpp"

namespace hetsim::gui {

namespace {

constexpr int kProgressSteps = 1000;

Prompts default_prompts() {
  Prompts p;
  p.unsaved = [](QWidget* parent, const QString& question) {
    return QMessageBox::question(parent, QObject::tr("Unsaved changes"), question,
                                 QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  };
  p.error = [](QWidget* parent, const QString& title, const QString& message) {
    QMessageBox::warning(parent, title, message);
  };
  return p;
}

// `path` as one word of a POSIX shell: as it is when it has no character the shell treats
// specially, else in single quotes (a quote inside written '\'').
QString shell_quoted(const QString& path) {
  static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_./:=@%+,-]+$"));
  if (plain.match(path).hasMatch()) return path;
  QString q = path;
  q.replace('\'', QStringLiteral("'\\''"));
  return '\'' + q + '\'';
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), prompts_(default_prompts()) {
  doc_ = new Document(this);
  jobs_ = new JobRunner(this);
  scenario_view_ = new ScenarioView(doc_, this);
  purchase_view_ = new PurchaseView(this);
  plan_view_ = new PlanView(this);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(scenario_view_, tr("Scenario"));
  tabs_->addTab(purchase_view_, tr("Purchase"));
  tabs_->addTab(plan_view_, tr("Plan"));
  setCentralWidget(tabs_);

  status_ = new QLabel(this);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, kProgressSteps);
  progress_->setMaximumWidth(220);
  progress_->hide();
  cancel_button_ = new QPushButton(tr("Cancel"), this);
  cancel_button_->hide();
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_button_);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancel);

  build_menus();
  setAcceptDrops(true);

  connect(doc_, &Document::reread, this, &MainWindow::update_actions);
  connect(doc_, &Document::modified_changed, this, &MainWindow::update_title);
  connect(doc_, &Document::path_changed, this, &MainWindow::update_title);
  connect(jobs_, &JobRunner::started, this, [this](quint64, const QString& what) {
    progress_->setRange(0, kProgressSteps);
    progress_->setValue(0);
    progress_->show();
    cancel_button_->show();
    status(what);
    update_actions();
  });
  connect(jobs_, &JobRunner::progressed, this, [this](quint64, double f) {
    if (progress_->maximum() == 0) progress_->setRange(0, kProgressSteps);
    progress_->setValue(static_cast<int>(f * kProgressSteps));
  });
  connect(jobs_, &JobRunner::finished, this, &MainWindow::job_ended);
  connect(jobs_, &JobRunner::cancelled, this, &MainWindow::job_ended);
  connect(purchase_view_, &PurchaseView::point_selected, this, &MainWindow::update_actions);
  connect(purchase_view_, &PurchaseView::plan_requested, this, [this](std::size_t i) { show_point_plan(i); });
  what_if_pause_ = new QTimer(this);
  what_if_pause_->setSingleShot(true);
  what_if_pause_->setInterval(300);
  connect(what_if_pause_, &QTimer::timeout, this, [this] {
    if (!pending_simulation_) return;
    // A simulation supersedes a simulation, never a running search.
    if (jobs_->busy() && jobs_->current() != simulation_job_) {
      plan_view_->set_simulation_note(tr("Not simulated: a search is running (Run again when it ends)"));
      return;
    }
    auto [s, p] = std::move(*pending_simulation_);
    pending_simulation_.reset();
    start_simulate(s, p);
  });
  connect(plan_view_, &PlanView::what_if_changed, this, &MainWindow::what_if_changed);
  connect(plan_view_, &PlanView::export_plan_requested, this, &MainWindow::ask_export_shown_plan);
  connect(plan_view_, &PlanView::export_trace_requested, this, &MainWindow::ask_export_trace);
  connect(purchase_view_, &PurchaseView::what_if_changed, this, &MainWindow::purchase_what_if_changed);
  update_title();
  update_actions();
  resize(1280, 860);
}

MainWindow::~MainWindow() {
  // The document's undo stack outlives this object's own members being torn down and emits
  // while it is cleared: its connections to this window (whose slots touch the Edit actions)
  // must go first, or they would run on a half-destroyed MainWindow.
  if (doc_ != nullptr) QObject::disconnect(doc_->undo_stack(), nullptr, this, nullptr);
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open…"), this, [this] {
    const QString dir = doc_->path().isEmpty() ? QDir::currentPath() : QFileInfo(doc_->path()).absolutePath();
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open scenario"), dir, tr("Scenarios (*.toml);;All files (*)"));
    if (!path.isEmpty()) open_file(path);
  });
  open->setShortcut(QKeySequence::Open);
  recent_ = file->addMenu(tr("Open &Recent"));
  connect(recent_, &QMenu::aboutToShow, this, &MainWindow::fill_recent_menu);
  save_ = file->addAction(tr("&Save"), this, [this] { save(); });
  save_->setShortcut(QKeySequence::Save);
  QAction* save_as_action = file->addAction(tr("Save &As…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save scenario as"), doc_->path(),
                                                      tr("Scenarios (*.toml);;All files (*)"));
    if (!path.isEmpty()) save_as(path);
  });
  save_as_action->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  export_plan_ = file->addAction(tr("Export Selected Point's &Plan (JSON)…"), this, [this] {
    const auto i = purchase_view_->selected_point();
    const QString name = QStringLiteral("point-%1.plan.json").arg(i ? *i + 1 : 1);
    const QString path = QFileDialog::getSaveFileName(this, tr("Export plan"), name, tr("Plan JSON (*.json)"));
    if (!path.isEmpty()) export_plan(path);
  });
  export_point_ = file->addAction(tr("Export Selected Point's Scenario and Plan…"), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export the point's scenario and plan into"));
    if (!dir.isEmpty()) export_point(dir);
  });
  export_csv_ = file->addAction(tr("Export Front as &CSV…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export front"), "front.csv", tr("CSV (*.csv)"));
    if (!path.isEmpty()) export_csv(path);
  });
  export_shown_plan_ = file->addAction(tr("Export Shown Plan (JSON)…"), this, &MainWindow::ask_export_shown_plan);
  export_trace_ = file->addAction(tr("Export Simulated Step as Chrome &Trace…"), this, &MainWindow::ask_export_trace);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  // Edit: the document's undo stack (form edits and typing alike).
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  undo_ = edit->addAction(tr("&Undo"), this, &MainWindow::undo);
  undo_->setShortcut(QKeySequence::Undo);
  redo_ = edit->addAction(tr("&Redo"), this, &MainWindow::redo);
  redo_->setShortcuts(QKeySequence::Redo);
  QUndoStack* stack = doc_->undo_stack();
  auto name_steps = [this, stack] {
    undo_->setEnabled(stack->canUndo());
    redo_->setEnabled(stack->canRedo());
    undo_->setText(stack->canUndo() ? tr("&Undo %1").arg(stack->undoText()) : tr("&Undo"));
    redo_->setText(stack->canRedo() ? tr("&Redo %1").arg(stack->redoText()) : tr("&Redo"));
  };
  connect(stack, &QUndoStack::indexChanged, this, name_steps);
  connect(stack, &QUndoStack::cleanChanged, this, name_steps);
  name_steps();

  QMenu* run_menu = menuBar()->addMenu(tr("&Run"));
  run_ = run_menu->addAction(tr("&Run"), this, [this] { run(); });
  run_->setShortcuts({QKeySequence(Qt::Key_F5), QKeySequence(Qt::CTRL | Qt::Key_R)});
  cancel_ = run_menu->addAction(tr("&Cancel"), this, &MainWindow::cancel);
  cancel_->setShortcut(QKeySequence(Qt::Key_Escape));
  run_menu->addSeparator();
  run_menu->addAction(tr("Copy as &Command"), this, [this] {
    const QString line = command_line();
    QApplication::clipboard()->setText(line);
    status(tr("Copied: %1").arg(line));
  });

  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName("main toolbar");
  bar->addAction(open);
  bar->addAction(save_);
  bar->addSeparator();
  bar->addAction(run_);
  bar->addAction(cancel_);
}

void MainWindow::ask_export_shown_plan() {
  const QString name = QFileInfo(doc_->display_name()).completeBaseName() + ".plan.json";
  const QString path = QFileDialog::getSaveFileName(this, tr("Export the plan shown"), name, tr("Plan JSON (*.json)"));
  if (!path.isEmpty()) export_shown_plan(path);
}

void MainWindow::ask_export_trace() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export Chrome trace"), "step.trace.json", tr("Chrome trace (*.json)"));
  if (!path.isEmpty()) export_trace(path);
}

void MainWindow::fill_recent_menu() {
  recent_->clear();
  const QStringList files = RecentFiles::list();
  for (const QString& f : files) recent_->addAction(f, this, [this, f] { open_file(f); });
  if (files.isEmpty()) recent_->addAction(tr("(none)"))->setEnabled(false);
}

void MainWindow::update_title() {
  setWindowTitle(doc_->display_name() + "[*] — hetsim-gui");
  setWindowModified(doc_->modified());
}

void MainWindow::update_actions() {
  // A what-if value that cannot be evaluated (a global batch that does not split over the plan)
  // disables Run until it is changed, as a bad field in the text does.
  const bool can_run = doc_->scenario().has_value() && !(what_if_base_ && what_if_error_);
  run_->setEnabled(can_run);
  cancel_->setEnabled(jobs_->busy());
  const bool point = purchase_view_->outcome() && !purchase_view_->outcome()->partial &&
                     purchase_view_->selected_point().has_value();
  // A what-if re-pricing is not the scenario's answer: its files would carry the file's prices.
  const bool exportable = purchase_view_->outcome() && !purchase_view_->outcome()->what_if;
  export_plan_->setEnabled(point && exportable);
  export_point_->setEnabled(point && exportable);
  export_csv_->setEnabled(exportable && !purchase_view_->outcome()->partial &&
                          !purchase_view_->outcome()->result.front.empty());
  export_trace_->setEnabled(plan_view_->simulation() && !plan_view_->simulation()->chrome_trace.empty());
  plan_view_->export_trace_button()->setEnabled(export_trace_->isEnabled());
  export_shown_plan_->setEnabled(shown_ && shown_->fits);
  plan_view_->export_plan_button()->setEnabled(export_shown_plan_->isEnabled());
  purchase_view_->show_plan_button()->setEnabled(point && !jobs_->busy());
  tabs_->setTabEnabled(tabs_->indexOf(purchase_view_), doc_->is_purchase() || purchase_view_->outcome());
}

QString MainWindow::status_text() const { return status_->text(); }

void MainWindow::status(const QString& text) { status_->setText(text); }

void MainWindow::tell(const QString& title, const QString& message) {
  status(message);
  if (prompts_.error) prompts_.error(this, title, message);
}

void MainWindow::undo() {
  scenario_view_->apply_pending();  // typing not yet handed over is the step to undo
  doc_->undo_stack()->undo();
}

void MainWindow::redo() {
  scenario_view_->apply_pending();
  doc_->undo_stack()->redo();
}

bool MainWindow::maybe_save() {
  scenario_view_->apply_pending();
  if (!doc_->modified()) return true;
  const auto answer =
      prompts_.unsaved ? prompts_.unsaved(this, tr("%1 has unsaved changes. Save them?").arg(doc_->display_name()))
                       : QMessageBox::Discard;
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Save) {
    if (doc_->path().isEmpty()) {
      const QString path = QFileDialog::getSaveFileName(this, tr("Save scenario as"), {}, tr("Scenarios (*.toml)"));
      return !path.isEmpty() && save_as(path);
    }
    return save();
  }
  return true;
}

bool MainWindow::open_file(const QString& path) {
  if (!maybe_save()) return false;
  QString error;
  if (!doc_->open(path, &error)) {
    tell(tr("Cannot open the scenario"), error);
    return false;
  }
  jobs_->cancel();  // a job of the last document: its answer is not this one's
  what_if_base_.reset();
  what_if_error_ = false;
  pending_simulation_.reset();
  what_if_pause_->stop();
  RecentFiles::add(path);
  purchase_view_->clear(tr("Press Run to search the purchase."));
  clear_plan(tr("Press Run to estimate and simulate."));
  point_scenarios_.clear();
  point_plans_.clear();
  tabs_->setCurrentWidget(scenario_view_);
  if (!doc_->diagnostics().empty())
    status(tr("%1: %n error(s); fix them to run", "", static_cast<int>(doc_->diagnostics().size()))
               .arg(doc_->display_name()));
  else
    status(tr("Opened %1").arg(path));
  update_actions();
  return true;
}

bool MainWindow::save() {
  scenario_view_->apply_pending();
  if (doc_->path().isEmpty()) {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save scenario as"), {}, tr("Scenarios (*.toml)"));
    return !path.isEmpty() && save_as(path);
  }
  QString error;
  if (!doc_->save(&error)) {
    tell(tr("Cannot save"), error);
    return false;
  }
  status(tr("Saved %1").arg(doc_->path()));
  return true;
}

bool MainWindow::save_as(const QString& path) {
  scenario_view_->apply_pending();
  QString error;
  if (!doc_->save_as(path, &error)) {
    tell(tr("Cannot save"), error);
    return false;
  }
  RecentFiles::add(path);
  status(tr("Saved %1").arg(path));
  return true;
}

bool MainWindow::export_plan(const QString& path) {
  const auto& o = purchase_view_->outcome();
  const auto i = purchase_view_->selected_point();
  if (!o || o->partial || !i) {
    tell(tr("Nothing to export"), tr("Run the search and pick a point of the front first"));
    return false;
  }
  if (o->what_if) {
    tell(tr("Nothing to export"), tr("The front shown is a what-if re-pricing: set the what-if values back to "
                                     "the scenario's to export the search's answer"));
    return false;
  }
  auto f = point_plan(o->scenario, o->source_text, o->result, *i);
  QString error;
  if (!f) error = errors_text(f.errors());
  if (error.isEmpty()) write_text_file(path, f->content, &error);
  if (!error.isEmpty()) {
    tell(tr("Cannot export the plan"), error);
    return false;
  }
  remember_point_export(o, *i, {}, QFileInfo(path).absoluteFilePath());
  status(tr("Wrote the plan of point %1 to %2").arg(*i + 1).arg(path));
  return true;
}

bool MainWindow::export_point(const QString& dir) {
  const auto& o = purchase_view_->outcome();
  const auto i = purchase_view_->selected_point();
  if (!o || o->partial || !i) {
    tell(tr("Nothing to export"), tr("Run the search and pick a point of the front first"));
    return false;
  }
  if (o->what_if) {
    tell(tr("Nothing to export"), tr("The front shown is a what-if re-pricing: set the what-if values back to "
                                     "the scenario's to export the search's answer"));
    return false;
  }
  auto files = point_files(o->scenario, o->source_text, o->result, *i, dir);
  if (!files) {
    tell(tr("Cannot export the point"), errors_text(files.errors()));
    return false;
  }
  for (const ExportFile& f : *files) {
    QString error;
    if (!write_text_file(QDir(dir).filePath(qs(f.name)), f.content, &error)) {
      tell(tr("Cannot export the point"), error);
      return false;
    }
  }
  const QString stem = QStringLiteral("point-%1").arg(*i + 1);
  remember_point_export(o, *i, QFileInfo(QDir(dir).filePath(stem + ".toml")).absoluteFilePath(),
                        QFileInfo(QDir(dir).filePath(stem + ".plan.json")).absoluteFilePath());
  status(tr("Wrote point-%1.toml and point-%1.plan.json to %2").arg(*i + 1).arg(dir));
  return true;
}

bool MainWindow::export_csv(const QString& path) {
  const auto& o = purchase_view_->outcome();
  if (!o || o->partial || o->result.front.empty()) {
    tell(tr("Nothing to export"), tr("Run the search first"));
    return false;
  }
  if (o->what_if) {
    tell(tr("Nothing to export"), tr("The front shown is a what-if re-pricing: set the what-if values back to "
                                     "the scenario's to export the search's answer"));
    return false;
  }
  auto f = front_csv(o->scenario, o->source_text, o->result);
  QString error;
  if (!f) error = errors_text(f.errors());
  if (error.isEmpty()) write_text_file(path, f->content, &error);
  if (!error.isEmpty()) {
    tell(tr("Cannot export the front"), error);
    return false;
  }
  status(tr("Wrote the front to %1").arg(path));
  return true;
}

bool MainWindow::export_trace(const QString& path) {
  const auto& sim = plan_view_->simulation();
  if (!sim || sim->chrome_trace.empty()) {
    tell(tr("Nothing to export"),
         sim ? tr("The step has more than %1 tasks: use hetsim simulate --trace").arg(kMaxTraceTasks)
             : tr("Run a simulation first"));
    return false;
  }
  QString error;
  if (!write_text_file(path, sim->chrome_trace, &error)) {
    tell(tr("Cannot export the trace"), error);
    return false;
  }
  status(tr("Wrote the Chrome trace to %1 (open it in ui.perfetto.dev)").arg(path));
  return true;
}

void MainWindow::remember_point_export(const std::shared_ptr<const BuyOutcome>& o, std::size_t i,
                                       const QString& scenario, const QString& plan) {
  if (exports_of_.lock() != o) {  // the files of another search's points name other compositions
    point_scenarios_.clear();
    point_plans_.clear();
    exports_of_ = o;
  }
  if (!scenario.isEmpty()) point_scenarios_[i] = scenario;
  point_plans_[i] = plan;
}

bool MainWindow::export_shown_plan(const QString& path) {
  if (!shown_) {
    tell(tr("Nothing to export"), tr("Run first: the Plan tab shows no plan"));
    return false;
  }
  if (!shown_->fits) {
    tell(tr("Nothing to export"), tr("The plan shown does not fit in memory: `hetsim estimate --save-plan` "
                                     "does not write such a plan either"));
    return false;
  }
  QString error;
  if (!write_text_file(path, io::plan_to_json(shown_->scenario, shown_->plan), &error)) {
    tell(tr("Cannot export the plan"), error);
    return false;
  }
  shown_->exported_to = QFileInfo(path).absoluteFilePath();
  // A front point's plan is the point's file too (point-N.plan.json has the same content).
  if (what_if_base_ && what_if_base_->from == PlanFrom::FrontPoint && !shown_->what_if &&
      exports_of_.lock() == purchase_view_->outcome())
    point_plans_[what_if_base_->point] = shown_->exported_to;
  status(shown_->what_if ? tr("Wrote the plan shown to %1; it runs on the what-if values, which are not in the "
                              "scenario's file")
                               .arg(path)
                         : tr("Wrote the plan shown to %1").arg(path));
  return true;
}

QString MainWindow::command_line() const {
  if (tabs_->currentWidget() == plan_view_ && shown_ && what_if_base_) return plan_command_line();
  const QString file = doc_->path().isEmpty() ? QStringLiteral("SCENARIO.toml") : shell_quoted(doc_->path());
  const auto& s = doc_->scenario();
  QString verb = QStringLiteral("simulate");
  if (s && s->purchase)
    verb = QStringLiteral("buy");
  else if (s && !s->plan)
    verb = QStringLiteral("plan");
  QString line = QStringLiteral("hetsim %1 %2").arg(verb, file);
  if (doc_->modified()) line += tr("   # save the file first: the window's text differs from it");
  return line;
}

QString MainWindow::plan_command_line() const {
  const WhatIfBase& base = *what_if_base_;
  QStringList notes;
  QString scenario = doc_->path().isEmpty() ? QStringLiteral("SCENARIO.toml") : shell_quoted(doc_->path());
  QString plan = shown_->exported_to.isEmpty() ? QString() : shell_quoted(shown_->exported_to);
  if (base.from == PlanFrom::FrontPoint) {
    // The point's composition is a scenario of its own, point-N.toml, written by the point's
    // export (of this search, not of a re-pricing, whose prices the files do not carry).
    const bool ours = exports_of_.lock() == purchase_view_->outcome() && !base.repriced;
    const auto toml = ours ? point_scenarios_.find(base.point) : point_scenarios_.end();
    const QString stem = QStringLiteral("point-%1").arg(base.point + 1);
    scenario = toml != point_scenarios_.end() ? shell_quoted(toml->second) : stem + ".toml";
    if (plan.isEmpty()) {
      const auto json = ours && !shown_->what_if ? point_plans_.find(base.point) : point_plans_.end();
      plan = json != point_plans_.end() ? shell_quoted(json->second) : stem + ".plan.json";
    }
    if (toml == point_scenarios_.end())
      notes << tr("export the point's scenario and plan first (File > Export Selected Point's Scenario and Plan)");
  } else if (doc_->modified()) {
    notes << tr("save the file first: the window's text differs from it");
  }
  QString line;
  if (plan.isEmpty())  // not exported: what Run did on the file
    line = QStringLiteral("hetsim %1 %2").arg(base.from == PlanFrom::Planner ? "plan" : "simulate", scenario);
  else
    line = QStringLiteral("hetsim simulate %1 --plan %2").arg(scenario, plan);
  if (shown_->what_if)
    notes << (base.repriced ? tr("the what-if prices are not in the point's exported files")
                            : tr("the what-if values are not in the file: the line gives the file's values"));
  if (!notes.isEmpty()) line += "   # " + notes.join("; ");
  return line;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maybe_save()) {
    event->ignore();
    return;
  }
  if (jobs_->running() > 0) status(tr("Stopping the background job…"));
  jobs_->cancel();
  event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls() && !event->mimeData()->urls().isEmpty() &&
      event->mimeData()->urls().front().isLocalFile())
    event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const auto urls = event->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) {
    open_file(urls.front().toLocalFile());
    event->acceptProposedAction();
  }
}

}  // namespace hetsim::gui
