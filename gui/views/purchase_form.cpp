#include "gui/views/purchase_form.hpp"

#include <QAbstractButton>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLineEdit>
#include <QVBoxLayout>

#include "gui/app/document.hpp"
#include "gui/qt_models/format.hpp"
#include "gui/views/workload_form.hpp"
#include "models/hw/catalog.hpp"
#include "sim/api/api.hpp"

namespace hetsim::gui {

namespace {
const QString kCandidate = QStringLiteral("purchase.candidate");
}  // namespace

PurchaseForm::PurchaseForm(Document* doc, QWidget* parent) : TomlForm(doc, {"purchase", "cost"}, parent) {
  rebuild();
}

bool PurchaseForm::shown() const { return !doc_->text().trimmed().isEmpty(); }

QString PurchaseForm::layout_key() const {
  // Without [purchase], the cost only.
  if (!has_toml_table(doc_->text(), {"purchase", false, 0})) return "cost";
  QString key = "purchase ";
  for (int k = 0, n = toml_array_count(doc_->text(), kCandidate); k < n; ++k)
    key += toml_subtables(doc_->text(), {kCandidate, true, k}).contains(kCandidate + ".device") ? 'i' : 'c';
  return key;
}

void PurchaseForm::lay_out() {
  candidates_.clear();
  auto* v = static_cast<QVBoxLayout*>(body_->layout());
  const QString key = layout_key();
  const bool buying = key != "cost";
  if (buying) {
    auto* purchase = new QGroupBox(tr("Purchase"), body_);
    auto* pf = new QFormLayout(purchase);
    const TomlTable p{"purchase", false, 0};
    add_choice(pf, tr("Objective"), p, "objective", {"pareto", "time", "cost"},
               tr("pareto: the knee (or the cheapest meeting the deadline); time: the fastest; cost: the cheapest"),
               "pareto");
    add_line(pf, tr("Budget ($)"), p, "budget_usd", tr("no limit"), tr("capex when owning, rent when renting"));
    add_line(pf, tr("Deadline (days)"), p, "deadline_days", tr("none"), tr("lead time + effective time to train"));
    add_line(pf, tr("Power (kW)"), p, "power_kw", tr("no limit"), tr("at the wall: TDP × PUE, owned + bought"));
    v->addWidget(purchase);
  }
  auto* cost = new QGroupBox(tr("Cost"), body_);
  auto* cf = new QFormLayout(cost);
  const TomlTable c{"cost", false, 0};
  add_choice(cf, tr("Devices"), c, "mode", {"own", "rent"}, tr("rent by the hour, or buy and own; empty: rent"), "rent");
  add_line(cf, tr("Electricity ($/kWh)"), c, "electricity_usd_per_kwh", "0.1", tr("[cost] electricity_usd_per_kwh"));
  add_line(cf, tr("PUE"), c, "pue", "1.3", tr("power usage effectiveness (1 to 10)"));
  add_line(cf, tr("Amortisation (years)"), c, "amortisation_years", "4",
           tr("owned devices' purchase price is spread over these years"));
  v->addWidget(cost);

  auto cat = api::catalog();
  QStringList devices;
  if (cat)
    for (const std::string& d : cat->device_names()) devices << qs(d);
  const QString kinds = buying ? key.section(' ', 1) : QString();
  for (int k = 0; k < kinds.size(); ++k) {
    auto* box = new QGroupBox(body_);
    auto* f = new QFormLayout(box);
    const TomlTable t{kCandidate, true, k};
    auto* device = add_choice(f, tr("Device"), t, "device", devices, tr("a catalogue device"));
    if (kinds[k] == 'i') {
      device->setEnabled(false);
      device->setToolTip(tr("an inline [purchase.candidate.device] table: edit it in the text"));
    }
    add_line(f, tr("Name"), t, "name", {}, tr("empty: the device's name"), true);
    add_line(f, tr("Most nodes"), t, "max_nodes", {}, tr("the search buys 0 to this many nodes"));
    add_line(f, tr("Node step"), t, "node_step", "1", tr("nodes are bought this many at a time"));
    add_line(f, tr("Price per device ($)"), t, "purchase_usd", {}, tr("empty: the catalogue's indicative price"));
    add_line(f, tr("Rent ($/device-hour)"), t, "rent_usd_per_hour", {}, tr("empty: the catalogue's indicative price"));
    add_line(f, tr("Lead time (days)"), t, "lead_time_days", "0", tr("from the order to the nodes in service"));
    f->addRow(add_button(box, QString("purchase.candidate.%1.remove").arg(k), tr("Remove this candidate"),
                         [k](const QString& text) { return remove_toml_table(text, {kCandidate, true, k}); },
                         tr("remove candidate %1").arg(k + 1)));
    v->addWidget(box);
    candidates_.push_back(box);
  }
  if (buying)
    v->addWidget(add_button(
        body_, "purchase.candidate.add", tr("Add a candidate"),
        [](const QString& text) {
          return add_toml_array_table(text, kCandidate, new_pool_lines(text, kCandidate, {"max_nodes = 1"}));
        },
        tr("add a candidate")));
}

void PurchaseForm::refreshed() {
  // Each candidate as read: its name in the title, its device's prices as the placeholders.
  const auto& s = doc_->scenario();
  const bool read = s && s->purchase && s->purchase->candidates.size() == candidates_.size();
  for (std::size_t k = 0; k < candidates_.size(); ++k) {
    const auto* cand = read ? &s->purchase->candidates[k] : nullptr;
    QString name = toml_value(doc_->text(), {kCandidate, true, static_cast<int>(k)}, "device").value_or(QString());
    name.remove('"');
    candidates_[k]->setTitle(tr("Candidate %1: %2").arg(k + 1).arg(cand ? qs(cand->pool.name) : name));
    auto placeholder = [&](const char* key, double value) {
      if (auto* e = qobject_cast<QLineEdit*>(field(QString("%1.%2.%3").arg(kCandidate).arg(k).arg(key))))
        e->setPlaceholderText(cand ? form_number(value) : QString());
    };
    placeholder("purchase_usd", cand ? cand->pool.device.purchase_usd : 0);
    placeholder("rent_usd_per_hour", cand ? cand->pool.device.price_usd_per_hour : 0);
    if (auto* e = qobject_cast<QLineEdit*>(field(QString("%1.%2.name").arg(kCandidate).arg(k))))
      e->setPlaceholderText(cand ? qs(cand->pool.name) : name);
  }
}

}  // namespace hetsim::gui
