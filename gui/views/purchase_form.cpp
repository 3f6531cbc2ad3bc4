#include "gui/views/purchase_form.hpp"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/app/document.hpp"
#include "gui/qt_models/diagnostics_model.hpp"
#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

namespace {
QString unquote(const QString& v) {
  return v.size() >= 2 && v.startsWith('"') && v.endsWith('"') ? v.mid(1, v.size() - 2) : v;
}
QString number(double v) { return v > 0 ? QString::number(v, 'g', 6) : QString(); }
}  // namespace

PurchaseForm::PurchaseForm(Document* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  pause_ = new QTimer(this);
  pause_->setSingleShot(true);
  pause_->setInterval(400);
  connect(pause_, &QTimer::timeout, this, &PurchaseForm::apply_pending);
  messages_ = new QLabel(this);
  messages_->setWordWrap(true);
  messages_->setStyleSheet("color: #b02020;");
  messages_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(messages_);
  layout->addStretch(1);
  connect(doc_, &Document::reread, this, &PurchaseForm::rebuild);
  rebuild();
}

QWidget* PurchaseForm::field(const QString& id) const {
  for (const Field& f : fields_)
    if (f.id == id) return f.widget;
  return nullptr;
}

QString PurchaseForm::messages_text() const { return messages_->text(); }

void PurchaseForm::add_line(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                            const QString& placeholder, const QString& tip) {
  auto* edit = new QLineEdit(form->parentWidget());
  edit->setPlaceholderText(placeholder);
  edit->setToolTip(tip);
  form->addRow(label, edit);
  Field f{table.name + (table.array ? "." + QString::number(table.index) : QString()) + "." + key, table, key, edit,
          false};
  fields_.push_back(f);
  const int i = static_cast<int>(fields_.size()) - 1;
  connect(edit, &QLineEdit::textEdited, this, [this, i] {
    if (pending_ >= 0 && pending_ != i) apply_pending();
    pending_ = i;
    pause_->start();
  });
  connect(edit, &QLineEdit::editingFinished, this, &PurchaseForm::apply_pending);
}

void PurchaseForm::add_choice(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                              const QStringList& choices, const QString& tip) {
  auto* box = new QComboBox(form->parentWidget());
  box->addItem(QString());  // the key absent: the reader's default
  box->addItems(choices);
  box->setToolTip(tip);
  form->addRow(label, box);
  fields_.push_back({table.name + "." + key, table, key, box, true});
  const int i = static_cast<int>(fields_.size()) - 1;
  connect(box, &QComboBox::activated, this, [this, i] {
    apply_pending();
    write(fields_[static_cast<std::size_t>(i)]);
  });
}

void PurchaseForm::rebuild() {
  if (writing_) {
    refresh();
    return;
  }
  const auto& s = doc_->scenario();
  const int candidates = s && s->purchase ? static_cast<int>(s->purchase->candidates.size()) : -1;
  if (candidates < 0 && doc_->scenario()) {  // read, and not a purchase: no form
    delete body_;
    body_ = nullptr;
    fields_.clear();
    pending_ = -1;
    candidates_ = -1;
    setVisible(false);
    return;
  }
  if (candidates >= 0 && candidates != candidates_) {
    delete body_;
    fields_.clear();
    pending_ = -1;
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

void PurchaseForm::refresh() {
  // The fields show the text's values (as typed, unless being typed in).
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    if (f.widget->hasFocus() || static_cast<int>(i) == pending_) continue;
    const QString v = toml_value(doc_->text(), f.table, f.key).value_or(QString());
    if (auto* e = qobject_cast<QLineEdit*>(f.widget)) {
      if (e->text() != v) e->setText(v);
    } else if (auto* b = qobject_cast<QComboBox*>(f.widget)) {
      const int at = b->findText(unquote(v));
      b->setCurrentIndex(at >= 0 ? at : 0);
    }
  }
  QString m;
  for (const Diagnostic& d : doc_->diagnostics())
    if (d.key.rfind("purchase", 0) == 0 || d.key.rfind("cost", 0) == 0)
      m += (m.isEmpty() ? "" : "\n") + where_text(d.where) + ": " + qs(d.message) +
           (d.hint.empty() ? QString() : " (" + qs(d.hint) + ")");
  messages_->setText(m);
  messages_->setVisible(!m.isEmpty());
}

void PurchaseForm::apply_pending() {
  pause_->stop();
  if (pending_ < 0) return;
  const int i = pending_;
  pending_ = -1;
  write(fields_[static_cast<std::size_t>(i)]);
}

void PurchaseForm::write(const Field& f) {
  QString value;
  if (auto* e = qobject_cast<QLineEdit*>(f.widget)) value = e->text();
  if (auto* b = qobject_cast<QComboBox*>(f.widget))
    value = b->currentText().isEmpty() ? QString() : '"' + b->currentText() + '"';
  emit about_to_edit();
  const auto text = set_toml_value(doc_->text(), f.table, f.key, value);
  if (!text) return;
  writing_ = true;
  doc_->edit_text(*text);
  writing_ = false;
}

}  // namespace hetsim::gui
