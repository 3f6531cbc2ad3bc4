#include "gui/views/plan_view.hpp"

#include <algorithm>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTabWidget>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/qt_models/breakdown_model.hpp"
#include "gui/qt_models/format.hpp"
#include "gui/qt_models/memory_model.hpp"
#include "gui/views/timeline_page.hpp"
#include "gui/widgets/memory_bars.hpp"
#include "gui/widgets/timeline_view.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/plan/planner.hpp"
#include "sim/report/estimate_report.hpp"
#include "sim/report/simulation_report.hpp"

namespace hetsim::gui {

namespace {

// The graph and trace as the timeline draws them: a lane per device and stream that has tasks.
std::shared_ptr<const TimelineData> timeline_of(const report::Simulation& sim) {
  const schedule::TaskGraph& g = sim.graph;
  const engine::Trace& tr = sim.trace;
  auto d = std::make_shared<TimelineData>();
  d->makespan_ns = tr.makespan;
  const std::size_t streams = schedule::kStreams;
  std::vector<int> lane_of(g.devices.size() * streams, -1);
  for (const schedule::Task& t : g.tasks) lane_of[t.device * streams + static_cast<std::size_t>(t.stream)] = 0;
  for (std::size_t i = 0; i < lane_of.size(); ++i) {
    if (lane_of[i] < 0) continue;
    lane_of[i] = static_cast<int>(d->lanes.size());
    const auto stream = static_cast<schedule::Stream>(i % streams);
    d->lanes.push_back(qs(g.devices[i / streams].label) + " · " + qs(std::string(schedule::stream_name(stream))));
  }
  std::vector<int> kind_of(16, -1);
  std::vector<bool> critical(g.size(), false);
  for (std::uint32_t id : tr.critical_path)
    if (id < critical.size()) critical[id] = true;
  d->tasks.reserve(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const schedule::Task& t = g.tasks[i];
    int& kind = kind_of[static_cast<std::size_t>(t.kind)];
    if (kind < 0) {
      kind = static_cast<int>(d->kinds.size());
      d->kinds.push_back(qs(std::string(schedule::task_kind_name(t.kind))));
    }
    TimelineTask x;
    x.start_ns = tr.start[i];
    x.end_ns = tr.end[i];
    x.lane = static_cast<std::uint32_t>(lane_of[t.device * streams + static_cast<std::size_t>(t.stream)]);
    x.kind = static_cast<std::uint16_t>(kind);
    x.critical = critical[i];
    x.name = qs(schedule::task_name(t));
    d->tasks.push_back(std::move(x));
  }
  std::stable_sort(d->tasks.begin(), d->tasks.end(), [](const TimelineTask& a, const TimelineTask& b) {
    return a.lane != b.lane ? a.lane < b.lane : a.start_ns < b.start_ns;
  });
  return d;
}

}  // namespace

WhatIf what_if_of(const Scenario& s) {
  WhatIf w;
  w.oversubscription = s.cluster.network.oversubscription;
  w.electricity_usd_per_kwh = s.cost.electricity_usd_per_kwh;
  w.mtbf_hours = s.reliability.mtbf_hours;
  w.global_batch = s.training.global_batch;
  return w;
}

Scenario apply_what_if(Scenario s, const WhatIf& w) {
  for (hw::PoolSpec& pool : s.cluster.pools) {
    pool.nic.bandwidth = pool.nic.bandwidth * w.nic_factor;
    pool.device.price_usd_per_hour *= w.price_factor;
    pool.device.purchase_usd *= w.price_factor;
  }
  if (s.purchase)
    for (auto& c : s.purchase->candidates) {
      c.pool.nic.bandwidth = c.pool.nic.bandwidth * w.nic_factor;
      c.pool.device.price_usd_per_hour *= w.price_factor;
      c.pool.device.purchase_usd *= w.price_factor;
    }
  s.cluster.network.oversubscription = std::max(1.0, w.oversubscription);
  s.cost.electricity_usd_per_kwh = w.electricity_usd_per_kwh;
  s.reliability.mtbf_hours = w.mtbf_hours;
  if (w.global_batch > 0) s.training.global_batch = w.global_batch;
  return s;
}

Result<plan::Plan> plan_for_batch(const Scenario& s, plan::Plan p) {
  if (p.sequences_per_step() == s.training.global_batch) return p;
  const plan::Plan before = p;
  bool even = true;
  int replicas = 0;
  for (const plan::ReplicaGroup& g : p.groups) {
    even = even && g.micro_batches == p.groups.front().micro_batches;
    replicas += g.replicas / std::max(1, p.cp);  // data-parallel replicas (cp blocks share a sequence)
  }
  bool split = false;
  if (even) {
    // The reader's split of a uniform plan: every replica takes B / (micro_batch · replicas).
    const int B = s.training.global_batch;
    if (replicas > 0 && B % (p.micro_batch * replicas) == 0) {
      for (plan::ReplicaGroup& g : p.groups) g.micro_batches = B / (p.micro_batch * replicas);
      split = true;
    }
  } else {
    split = planner::split_batch(s, p);
  }
  // Unsplit, the plan keeps its old micro-batches and the validator says why they do not fit.
  Diagnostics errors = io::validate_plan(s, split ? p : before, SourceLoc{s.file, 0, 0});
  if (!errors.empty()) return errors;
  HETSIM_ASSERT(split, "a plan the validator accepts processes the global batch");
  return p;
}

SimFigures sim_figures(const Scenario& scenario, const api::Simulated& s) {
  SimFigures f;
  if (s.sim.graph.size() <= kMaxTraceTasks) {
    f.chrome_trace = report::chrome_trace(scenario, s.sim.graph, s.sim.trace);
    f.timeline = timeline_of(s.sim);
  }
  f.simulated = s.sim.simulated;
  f.step_s = static_cast<double>(s.sim.trace.makespan) * 1e-9;
  f.estimate_step_s = s.sim.estimate.step_time.v;
  f.bubble_fraction = s.sim.summary.bubble_fraction;
  f.exposed_comm_s = static_cast<double>(s.sim.summary.exposed_comm) * 1e-9;
  for (const auto& [kind, t] : s.sim.summary.critical_by_kind)
    f.critical_by_kind.add(kind, Duration{static_cast<double>(t) * 1e-9});
  return f;
}

namespace {

QTableView* make_table(QAbstractItemModel* m, QWidget* parent) {
  auto* t = new QTableView(parent);
  t->setModel(m);
  t->verticalHeader()->hide();
  t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 8);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  return t;
}

QWidget* boxed(const QString& title, QWidget* w, QWidget* parent) {
  auto* box = new QGroupBox(title, parent);
  auto* l = new QVBoxLayout(box);
  l->addWidget(w);
  return box;
}

std::vector<MemoryBar> bars_of(const std::vector<analytic::DeviceEstimate>& est,
                               const std::vector<analytic::DeviceEstimate>* simulated) {
  std::vector<MemoryBar> bars;
  for (std::size_t i = 0; i < est.size(); ++i) {
    const analytic::DeviceEstimate& d = est[i];
    MemoryBar b;
    b.label = d.pool == d.device ? qs(d.device) : QObject::tr("%1 (pool %2)").arg(qs(d.device), qs(d.pool));
    for (const auto& [name, bytes] : d.memory.parts) b.parts.emplace_back(qs(name), bytes.v);
    b.capacity = d.capacity.v;
    b.fits = d.fits;
    if (simulated && i < simulated->size() && (*simulated)[i].pool == d.pool) {
      b.other_peak = (*simulated)[i].peak_memory.v;
      b.fits = (*simulated)[i].fits;
    }
    bars.push_back(std::move(b));
  }
  return bars;
}

}  // namespace

std::vector<MemoryBar> stage_memory_bars(const analytic::Estimate& e) {
  std::vector<MemoryBar> bars;
  for (const analytic::StageEstimate& st : e.stages) {
    MemoryBar b;
    const auto d = std::find_if(e.device_types.begin(), e.device_types.end(),
                                [&](const analytic::DeviceEstimate& x) { return x.pool == st.pool; });
    b.label = QObject::tr("group %1 stage %2 · %3 · tp %4 · layers %5–%6")
                  .arg(st.group)
                  .arg(st.stage)
                  .arg(qs(st.pool))
                  .arg(st.tp)
                  .arg(st.first_layer)
                  .arg(st.first_layer + st.layers - 1);
    for (const auto& [name, bytes] : st.memory.parts) b.parts.emplace_back(qs(name), bytes.v);
    b.capacity = d != e.device_types.end() ? d->capacity.v : 0;
    b.fits = st.memory.total().v <= b.capacity;
    bars.push_back(std::move(b));
  }
  return bars;
}

PlanView::PlanView(QWidget* parent) : QWidget(parent) {
  headline_ = new QLabel(this);
  headline_->setWordWrap(true);
  headline_->setTextFormat(Qt::RichText);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  simulation_ = new QLabel(this);
  simulation_->setWordWrap(true);
  simulation_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  breakdown_ = new BreakdownModel(this);
  critical_ = new BreakdownModel(this);
  memory_ = new MemoryModel(this);
  bars_ = new MemoryBars(this);
  breakdown_table_ = make_table(breakdown_, this);
  critical_table_ = make_table(critical_, this);
  memory_table_ = make_table(memory_, this);

  auto* left = new QSplitter(Qt::Vertical, this);
  left->addWidget(boxed(tr("Step time by part (closed-form estimate)"), breakdown_table_, this));
  left->addWidget(boxed(tr("Critical path of the simulated step by kind"), critical_table_, this));
  auto* right = new QSplitter(Qt::Vertical, this);
  by_stage_ = new QCheckBox(tr("By stage"), this);
  by_stage_->setToolTip(tr("A bar per pipeline stage of each replica group, with its own breakdown; "
                           "otherwise a bar per device type, its worst stage's"));
  connect(by_stage_, &QCheckBox::toggled, this, [this] { refresh_bars(); });
  auto* bars_page = new QWidget(this);
  auto* bars_layout = new QVBoxLayout(bars_page);
  bars_layout->setContentsMargins(0, 0, 0, 0);
  bars_layout->addWidget(by_stage_);
  // Many stages make a tall column of bars: it scrolls.
  auto* bars_scroll = new QScrollArea(bars_page);
  bars_scroll->setWidget(bars_);
  bars_scroll->setWidgetResizable(true);
  bars_scroll->setFrameShape(QFrame::NoFrame);
  bars_layout->addWidget(bars_scroll, 1);
  right->addWidget(boxed(tr("Peak memory per device against capacity"), bars_page, this));
  right->addWidget(boxed(tr("Memory per device type"), memory_table_, this));
  right->setSizes({230, 400});
  critical_->set_part_title(tr("Kind of task"));
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  timeline_page_ = new TimelinePage(this);
  pages_ = new QTabWidget(this);
  pages_->addTab(split, tr("Step and memory"));
  pages_->addTab(timeline_page_, tr("Timeline"));
  // What-if: the estimate follows each change at once, the simulation after a pause.
  what_if_box_ = new QGroupBox(tr("What if"), this);
  auto* form = new QHBoxLayout(what_if_box_);
  struct Spec {
    QString label, tip;
    double lo, hi, step;
    int decimals;
  };
  const Spec specs[] = {
      {tr("NIC bandwidth ×"), tr("Every pool's NIC bandwidth times this"), 0.05, 20, 0.25, 2},
      {tr("Oversubscription"), tr("The network's oversubscription (≥ 1)"), 1, 64, 0.5, 2},
      {tr("Device prices ×"), tr("Every device's rental and purchase price times this"), 0.1, 10, 0.1, 2},
      {tr("Electricity $/kWh"), tr("[cost] electricity_usd_per_kwh"), 0, 2, 0.01, 3},
      {tr("MTBF (device-h)"), tr("[reliability] mtbf_hours: device-hours between interruptions; 0 = the catalogue's"),
       0, 1e7, 5000, 0},
  };
  for (std::size_t i = 0; i < controls_.size(); ++i) {
    auto* box = new QDoubleSpinBox(what_if_box_);
    box->setRange(specs[i].lo, specs[i].hi);
    box->setSingleStep(specs[i].step);
    box->setDecimals(specs[i].decimals);
    box->setToolTip(specs[i].tip);
    box->setKeyboardTracking(false);
    auto* label = new QLabel(specs[i].label, what_if_box_);
    label->setToolTip(specs[i].tip);
    form->addWidget(label);
    form->addWidget(box);
    controls_[i] = box;
    connect(box, &QDoubleSpinBox::valueChanged, this, [this] { emit what_if_changed(); });
  }
  batch_ = new QSpinBox(what_if_box_);
  batch_->setRange(1, 1 << 30);  // the reader's range of [training] global_batch
  batch_->setKeyboardTracking(false);
  const QString batch_tip = tr("[training] global_batch: sequences per step; the plan's micro-batches are split again");
  batch_->setToolTip(batch_tip);
  auto* batch_label = new QLabel(tr("Global batch"), what_if_box_);
  batch_label->setToolTip(batch_tip);
  form->addWidget(batch_label);
  form->addWidget(batch_);
  connect(batch_, &QSpinBox::valueChanged, this, [this] { emit what_if_changed(); });
  form->addStretch(1);
  what_if_box_->setEnabled(false);

  export_plan_ = new QPushButton(tr("Export plan…"), this);
  export_plan_->setToolTip(tr("The plan shown as plan JSON, what `hetsim estimate --save-plan` writes: "
                              "for `hetsim simulate --plan` and hetsim-exec"));
  export_trace_ = new QPushButton(tr("Export trace…"), this);
  export_trace_->setToolTip(tr("The simulated step as a Chrome trace (`hetsim simulate --trace`), for ui.perfetto.dev"));
  export_plan_->setEnabled(false);
  export_trace_->setEnabled(false);
  connect(export_plan_, &QPushButton::clicked, this, [this] { emit export_plan_requested(); });
  connect(export_trace_, &QPushButton::clicked, this, [this] { emit export_trace_requested(); });
  auto* exports = new QVBoxLayout;
  exports->addWidget(export_plan_);
  exports->addWidget(export_trace_);
  exports->addStretch(1);
  auto* top = new QHBoxLayout;
  top->addWidget(headline_, 1);
  top->addLayout(exports);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(simulation_);
  layout->addWidget(what_if_box_);
  layout->addWidget(pages_, 1);
  clear(tr("Open a scenario and press Run."));
}

void PlanView::clear(const QString& message) {
  clear_figures();
  headline_->setText(message.toHtmlEscaped());
  what_if_box_->setEnabled(false);
}

void PlanView::clear_figures() {
  simulation_->clear();
  breakdown_->set_breakdown({});
  critical_->set_breakdown({});
  memory_->set_devices({});
  bars_->set_bars({});
  timeline_page_->set_data(nullptr);
  estimate_ = {};
  figures_.reset();
}

void PlanView::show_what_if_error(const QString& message) {
  // The controls keep their state (and the focus of the one being typed in).
  clear_figures();
  headline_->setText("<p>" + message.toHtmlEscaped().replace('\n', "<br>") + "</p>");
}

void PlanView::show_page(int page) { pages_->setCurrentIndex(page); }

void PlanView::set_what_if(const WhatIf& w) {
  const double values[] = {w.nic_factor, w.oversubscription, w.price_factor, w.electricity_usd_per_kwh,
                           w.mtbf_hours};
  for (std::size_t i = 0; i < controls_.size(); ++i) {
    const QSignalBlocker quiet(controls_[i]);
    controls_[i]->setValue(values[i]);
  }
  const QSignalBlocker quiet(batch_);
  batch_->setValue(w.global_batch);
  what_if_box_->setEnabled(true);
}

WhatIf PlanView::what_if() const {
  WhatIf w;
  w.nic_factor = controls_[0]->value();
  w.oversubscription = controls_[1]->value();
  w.price_factor = controls_[2]->value();
  w.electricity_usd_per_kwh = controls_[3]->value();
  w.mtbf_hours = controls_[4]->value();
  w.global_batch = batch_->value();
  return w;
}

void PlanView::show_estimate(const Scenario& s, const plan::Plan& p, const analytic::Estimate& e,
                             const QString& origin) {
  estimate_ = e;
  figures_.reset();
  timeline_page_->set_data(nullptr);
  QString h = tr("<p><b>%1</b> — %2: <code>%3</code></p>")
                  .arg(qs(s.name).toHtmlEscaped(), origin.toHtmlEscaped(),
                       qs(report::plan_summary(s, p)).toHtmlEscaped());
  h += tr("<p><b>Step %1</b> (closed-form estimate) on %2 devices · %3 tokens/s · MFU %4 %")
           .arg(format_seconds(e.step_time.v))
           .arg(e.devices)
           .arg(QString::number(e.tokens_per_s, 'g', 4))
           .arg(QString::number(100 * e.mfu, 'f', 1));
  if (e.time_to_train.v > 0) {
    const double effective = e.time_to_train.v / (e.goodput.fraction > 0 ? e.goodput.fraction : 1);
    h += tr(" · time to train %1 (effective %2, goodput %3 %) · cost to train %4")
             .arg(format_seconds(e.time_to_train.v), format_seconds(effective),
                  QString::number(100 * e.goodput.fraction, 'f', 1), format_usd(e.cost_to_train_usd));
  }
  if (!e.fits) h += tr(" · <b style='color:#c02020'>does not fit in memory</b>");
  h += "</p>";
  headline_->setText(h);
  breakdown_->set_breakdown(e.step);
  critical_->set_breakdown({});
  memory_->set_devices(e.device_types);
  refresh_bars();
  breakdown_table_->resizeColumnsToContents();
  memory_table_->resizeColumnsToContents();
}

void PlanView::show_simulation(const SimFigures& f) {
  simulation_->setText(tr("Simulated step %1 (closed-form estimate %2, %3 %) · bubble %4 % · exposed "
                          "communication %5 · %6 tokens/s · MFU %7 %")
                           .arg(format_seconds(f.step_s), format_seconds(f.estimate_step_s))
                           .arg(f.estimate_step_s > 0 ? 100 * (f.step_s / f.estimate_step_s - 1) : 0.0, 0, 'f', 2)
                           .arg(100 * f.bubble_fraction, 0, 'f', 1)
                           .arg(format_seconds(f.exposed_comm_s))
                           .arg(QString::number(f.simulated.tokens_per_s, 'g', 4))
                           .arg(100 * f.simulated.mfu, 0, 'f', 1));
  figures_ = f;
  timeline_page_->set_data(f.timeline);
  timeline()->setMinimumHeight(timeline()->sizeHint().height());
  critical_->set_breakdown(f.critical_by_kind);
  memory_->set_devices(f.simulated.device_types);
  refresh_bars();
  critical_table_->resizeColumnsToContents();
}

void PlanView::refresh_bars() {
  if (by_stage_->isChecked())
    bars_->set_bars(stage_memory_bars(estimate_));
  else
    bars_->set_bars(bars_of(estimate_.device_types, figures_ ? &figures_->simulated.device_types : nullptr));
}

void PlanView::set_simulation_note(const QString& note) { simulation_->setText(note); }

QString PlanView::headline_text() const { return headline_->text(); }
QString PlanView::simulation_text() const { return simulation_->text(); }

TimelineView* PlanView::timeline() const { return timeline_page_->timeline(); }

}  // namespace hetsim::gui
