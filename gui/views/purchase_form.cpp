#include "gui/views/purchase_form.hpp"

#include <QFormLayout>
#include <QGroupBox>
#include <QVBoxLayout>

#include "gui/app/document.hpp"
#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

namespace {
QString number(double v) { return v > 0 ? QString::number(v, 'g', 6) : QString(); }
}  // namespace

PurchaseForm::PurchaseForm(Document* doc, QWidget* parent) : TomlForm(doc, {"purchase", "cost"}, parent) {
  rebuild();
}

void PurchaseForm::rebuild() {
  const auto& s = doc_->scenario();
  const int candidates = s && s->purchase ? static_cast<int>(s->purchase->candidates.size()) : -1;
  if (candidates < 0 && doc_->scenario()) {  // read, and not a purchase: no form
    clear_fields();
    candidates_ = -1;
    setVisible(false);
    return;
  }
  if (candidates >= 0 && candidates != candidates_) {
    clear_fields();
    candidates_ = candidates;
    body_ = new QWidget(this);
    auto* v = new QVBoxLayout(body_);
    v->setContentsMargins(0, 0, 0, 0);
    auto* purchase = new QGroupBox(tr("Purchase"), body_);
    auto* pf = new QFormLayout(purchase);
    const TomlTable p{"purchase", false, 0};
    add_choice(pf, tr("Objective"), p, "objective", {"pareto", "time", "cost"},
               tr("pareto: the knee (or the cheapest meeting the deadline); time: the fastest; cost: the cheapest"));
    add_line(pf, tr("Budget ($)"), p, "budget_usd", tr("no limit"), tr("capex when owning, rent when renting"));
    add_line(pf, tr("Deadline (days)"), p, "deadline_days", tr("none"), tr("lead time + effective time to train"));
    add_line(pf, tr("Power (kW)"), p, "power_kw", tr("no limit"), tr("at the wall: TDP × PUE, owned + bought"));
    v->addWidget(purchase);
    auto* cost = new QGroupBox(tr("Cost"), body_);
    auto* cf = new QFormLayout(cost);
    const TomlTable c{"cost", false, 0};
    add_choice(cf, tr("Devices"), c, "mode", {"own", "rent"}, tr("rent by the hour, or buy and own"));
    add_line(cf, tr("Electricity ($/kWh)"), c, "electricity_usd_per_kwh", "0.1", tr("[cost] electricity_usd_per_kwh"));
    v->addWidget(cost);
    for (int k = 0; k < candidates; ++k) {
      const auto& cand = s->purchase->candidates[static_cast<std::size_t>(k)];
      auto* box = new QGroupBox(tr("Candidate %1: %2").arg(k + 1).arg(qs(cand.pool.device.name)), body_);
      auto* f = new QFormLayout(box);
      const TomlTable t{"purchase.candidate", true, k};
      add_line(f, tr("Most nodes"), t, "max_nodes", {}, tr("the search buys 0 to this many nodes"));
      add_line(f, tr("Node step"), t, "node_step", "1", tr("nodes are bought this many at a time"));
      add_line(f, tr("Price per device ($)"), t, "purchase_usd", number(cand.pool.device.purchase_usd),
               tr("empty: the catalogue's indicative price"));
      add_line(f, tr("Rent ($/device-hour)"), t, "rent_usd_per_hour", number(cand.pool.device.price_usd_per_hour),
               tr("empty: the catalogue's indicative price"));
      add_line(f, tr("Lead time (days)"), t, "lead_time_days", "0", tr("from the order to the nodes in service"));
      v->addWidget(box);
    }
    static_cast<QVBoxLayout*>(layout())->insertWidget(0, body_);
  }
  setVisible(candidates_ >= 0);
  refresh();
}

}  // namespace hetsim::gui
