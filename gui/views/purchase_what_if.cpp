#include "gui/views/purchase_what_if.hpp"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

bool PurchaseWhatIf::changes_nothing() const {
  if (price_factor != 1 || electricity_usd_per_kwh || pue || amortisation_years || mode || budget_usd || power_kw ||
      deadline_days)
    return false;
  for (const Prices& p : candidates)
    if (p.purchase_usd || p.usd_per_hour || p.lead_time_days) return false;
  return true;
}

Scenario apply_purchase_what_if(Scenario s, const PurchaseWhatIf& w) {
  if (w.electricity_usd_per_kwh) s.cost.electricity_usd_per_kwh = *w.electricity_usd_per_kwh;
  if (w.pue) s.cost.pue = *w.pue;
  if (w.amortisation_years) s.cost.amortisation_years = *w.amortisation_years;
  if (w.mode) s.cost.mode = *w.mode;
  if (s.purchase) {
    PurchaseSpec& ps = *s.purchase;
    if (w.budget_usd) ps.budget_usd = *w.budget_usd;
    if (w.power_kw) ps.power_kw = *w.power_kw;
    if (w.deadline_days) ps.deadline_days = *w.deadline_days;
    for (std::size_t k = 0; k < w.candidates.size() && k < ps.candidates.size(); ++k) {
      hw::DeviceSpec& d = ps.candidates[k].pool.device;
      if (w.candidates[k].purchase_usd) d.purchase_usd = *w.candidates[k].purchase_usd;
      if (w.candidates[k].usd_per_hour) d.price_usd_per_hour = *w.candidates[k].usd_per_hour;
      if (w.candidates[k].lead_time_days) ps.candidates[k].lead_time_days = *w.candidates[k].lead_time_days;
    }
    for (auto& c : ps.candidates) {
      c.pool.device.price_usd_per_hour *= w.price_factor;
      c.pool.device.purchase_usd *= w.price_factor;
    }
  }
  for (hw::PoolSpec& pool : s.cluster.pools) {
    pool.device.price_usd_per_hour *= w.price_factor;
    pool.device.purchase_usd *= w.price_factor;
  }
  return s;
}

QString describe(const Scenario& s, const PurchaseWhatIf& w) {
  QStringList parts;
  auto limit = [](double v, const QString& text) { return v > 0 ? text : QObject::tr("none"); };
  if (s.purchase)
    for (std::size_t k = 0; k < w.candidates.size() && k < s.purchase->candidates.size(); ++k) {
      const QString name = qs(s.purchase->candidates[k].pool.name);
      if (w.candidates[k].purchase_usd)
        parts << QObject::tr("%1 at %2 a device").arg(name, format_usd(*w.candidates[k].purchase_usd));
      if (w.candidates[k].usd_per_hour)
        parts << QObject::tr("%1 rented at $%2 a device-hour").arg(name).arg(*w.candidates[k].usd_per_hour);
      if (w.candidates[k].lead_time_days)
        parts << QObject::tr("%1 in service %2 days after the order").arg(name).arg(*w.candidates[k].lead_time_days);
    }
  if (w.price_factor != 1) parts << QObject::tr("device prices × %1").arg(w.price_factor);
  if (w.electricity_usd_per_kwh) parts << QObject::tr("electricity at $%1/kWh").arg(*w.electricity_usd_per_kwh);
  if (w.pue) parts << QObject::tr("PUE %1").arg(*w.pue);
  if (w.amortisation_years) parts << QObject::tr("amortised over %1 years").arg(*w.amortisation_years);
  if (w.mode) parts << (*w.mode == CostSpec::Mode::Rent ? QObject::tr("renting") : QObject::tr("owning"));
  if (w.budget_usd) parts << QObject::tr("budget %1").arg(limit(*w.budget_usd, format_usd(*w.budget_usd)));
  if (w.power_kw) parts << QObject::tr("power limit %1").arg(limit(*w.power_kw, QObject::tr("%1 kW").arg(*w.power_kw)));
  if (w.deadline_days)
    parts << QObject::tr("deadline %1").arg(limit(*w.deadline_days, QObject::tr("%1 days").arg(*w.deadline_days)));
  return parts.join(", ");
}

PurchaseWhatIfBox::PurchaseWhatIfBox(QWidget* parent) : QGroupBox(tr("What if"), parent) {
  price_ = spin(0.1, 10, 2, 0.1, tr("Every device's rental and purchase price times this, owned and candidates "
                                    "(after the candidates' own prices below)"));
  price_->setValue(1);
  electricity_ = spin(0, 2, 4, 0.01, tr("[cost] electricity_usd_per_kwh"));
  pue_ = spin(1, 10, 3, 0.05, tr("[cost] pue: power usage effectiveness (energy and the power limit)"));
  amortisation_ = spin(0.1, 100, 1, 0.5, tr("[cost] amortisation_years: the owned devices' purchase price is spread "
                                            "over these years (own)"));
  amortisation_->setSuffix(tr(" years"));
  mode_ = new QComboBox(this);
  mode_->addItem(tr("own"), static_cast<int>(CostSpec::Mode::Own));
  mode_->addItem(tr("rent"), static_cast<int>(CostSpec::Mode::Rent));
  mode_->setToolTip(tr("[cost] mode: buy the devices (capex, energy, amortisation) or rent them by the hour"));
  budget_ = spin(0, 1e13, 0, 1e5, tr("[purchase] budget_usd: the capex when owning, the rent when renting"));
  budget_->setPrefix("$");
  budget_->setGroupSeparatorShown(true);
  power_ = spin(0, 1e7, 1, 10, tr("[purchase] power_kw: owned and bought devices at TDP × PUE"));
  power_->setSuffix(tr(" kW"));
  deadline_ = spin(0, 36500, 2, 1, tr("[purchase] deadline_days: lead time + effective time to train"));
  deadline_->setSuffix(tr(" days"));
  for (QDoubleSpinBox* box : {budget_, power_, deadline_}) box->setSpecialValueText(tr("no limit"));

  // Two rows: the prices, then the limits beside each candidate's prices and lead time (which
  // scroll sideways rather than widen the window when there are many candidates).
  auto* row = new QHBoxLayout;
  auto* limits = new QHBoxLayout;
  auto add = [this](QHBoxLayout* to, const QString& label, QWidget* w) {
    auto* l = new QLabel(label, this);
    l->setToolTip(w->toolTip());
    to->addWidget(l);
    to->addWidget(w);
  };
  add(row, tr("Device prices ×"), price_);
  add(row, tr("Electricity $/kWh"), electricity_);
  add(row, tr("PUE"), pue_);
  add(row, tr("Amortisation"), amortisation_);
  add(row, tr("Mode"), mode_);
  auto* note = new QLabel(tr("The compositions the search planned, priced again without planning again"), this);
  note->setEnabled(false);
  note->setWordWrap(true);
  row->addWidget(note, 1);
  add(limits, tr("Budget"), budget_);
  add(limits, tr("Power"), power_);
  add(limits, tr("Deadline"), deadline_);
  auto* strip = new QWidget;
  candidate_row_ = new QHBoxLayout(strip);
  candidate_row_->setContentsMargins(0, 0, 0, 0);
  candidate_row_->addStretch(1);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(strip);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setFixedHeight(budget_->sizeHint().height() + scroll->horizontalScrollBar()->sizeHint().height() + 2);
  limits->addWidget(scroll, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(row);
  layout->addLayout(limits);
  connect(mode_, &QComboBox::currentIndexChanged, this, [this] { emit changed(); });
}

QDoubleSpinBox* PurchaseWhatIfBox::spin(double min, double max, int decimals, double step, const QString& tip) {
  auto* box = new QDoubleSpinBox(this);
  box->setRange(min, max);
  box->setDecimals(decimals);
  box->setSingleStep(step);
  box->setKeyboardTracking(false);
  box->setToolTip(tip);
  connect(box, &QDoubleSpinBox::valueChanged, this, [this] { emit changed(); });
  return box;
}

void PurchaseWhatIfBox::set_scenario(const Scenario& s) {
  const QSignalBlocker b0(price_), b1(electricity_), b2(pue_), b3(mode_), b4(budget_), b5(power_), b6(deadline_),
      b7(amortisation_);
  price_->setValue(1);
  electricity_->setValue(s.cost.electricity_usd_per_kwh);
  pue_->setValue(s.cost.pue);
  amortisation_->setValue(s.cost.amortisation_years);
  mode_->setCurrentIndex(mode_->findData(static_cast<int>(s.cost.mode)));
  const PurchaseSpec empty;
  const PurchaseSpec& ps = s.purchase ? *s.purchase : empty;
  budget_->setValue(ps.budget_usd);
  power_->setValue(ps.power_kw);
  deadline_->setValue(ps.deadline_days);
  shown_electricity_ = electricity_->value();
  shown_pue_ = pue_->value();
  shown_amortisation_ = amortisation_->value();
  shown_mode_ = mode_->currentIndex();
  shown_budget_ = budget_->value();
  shown_power_ = power_->value();
  shown_deadline_ = deadline_->value();

  // One pair of price boxes per candidate: made again when the candidates differ (a growing
  // search shows its scenario again and again).
  bool same = candidates_.size() == ps.candidates.size();
  for (std::size_t k = 0; same && k < candidates_.size(); ++k)
    same = candidates_[k].name == qs(ps.candidates[k].pool.name);
  if (!same) {
    for (CandidateControls& c : candidates_) {
      delete c.label;
      delete c.purchase;
      delete c.rent;
      delete c.lead;
    }
    candidates_.clear();
    int at = 0;
    for (const PurchaseSpec::Candidate& c : ps.candidates) {
      CandidateControls k;
      k.name = qs(c.pool.name);
      k.label = new QLabel(tr("%1:").arg(k.name), this);
      k.purchase = spin(0, 1e9, 0, 1000, tr("%1's purchase price per device (purchase_usd; own)").arg(k.name));
      k.purchase->setPrefix("$");
      k.purchase->setGroupSeparatorShown(true);
      k.rent = spin(0, 1e6, 3, 0.1, tr("%1's rent per device-hour (rent_usd_per_hour; rent)").arg(k.name));
      k.rent->setPrefix("$");
      k.rent->setSuffix(tr("/h"));
      k.lead = spin(0, 3650, 1, 7, tr("%1's lead time: from the order to the nodes in service (lead_time_days)").arg(k.name));
      k.lead->setSuffix(tr(" days"));
      candidate_row_->insertWidget(at++, k.label);
      candidate_row_->insertWidget(at++, k.purchase);
      candidate_row_->insertWidget(at++, k.rent);
      candidate_row_->insertWidget(at++, k.lead);
      candidates_.push_back(k);
    }
  }
  shown_candidates_.clear();
  for (std::size_t k = 0; k < candidates_.size(); ++k) {
    const CandidateControls& c = candidates_[k];
    const QSignalBlocker q1(c.purchase), q2(c.rent), q3(c.lead);
    c.purchase->setValue(ps.candidates[k].pool.device.purchase_usd);
    c.rent->setValue(ps.candidates[k].pool.device.price_usd_per_hour);
    c.lead->setValue(ps.candidates[k].lead_time_days);
    shown_candidates_.push_back({c.purchase->value(), c.rent->value(), c.lead->value()});
  }
}

PurchaseWhatIf PurchaseWhatIfBox::values() const {
  PurchaseWhatIf w;
  w.price_factor = price_->value();
  auto changed = [](const QDoubleSpinBox* box, double shown) {
    return box->value() != shown ? std::optional<double>(box->value()) : std::nullopt;
  };
  w.electricity_usd_per_kwh = changed(electricity_, shown_electricity_);
  w.pue = changed(pue_, shown_pue_);
  w.amortisation_years = changed(amortisation_, shown_amortisation_);
  if (mode_->currentIndex() != shown_mode_) w.mode = static_cast<CostSpec::Mode>(mode_->currentData().toInt());
  w.budget_usd = changed(budget_, shown_budget_);
  w.power_kw = changed(power_, shown_power_);
  w.deadline_days = changed(deadline_, shown_deadline_);
  for (std::size_t k = 0; k < candidates_.size(); ++k)
    w.candidates.push_back({changed(candidates_[k].purchase, shown_candidates_[k].purchase),
                            changed(candidates_[k].rent, shown_candidates_[k].rent),
                            changed(candidates_[k].lead, shown_candidates_[k].lead)});
  return w;
}

}  // namespace hetsim::gui
