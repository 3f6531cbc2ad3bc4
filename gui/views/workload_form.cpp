#include "gui/views/workload_form.hpp"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QVBoxLayout>

#include "gui/app/document.hpp"
#include "gui/qt_models/format.hpp"
#include "models/workload/model_spec.hpp"
#include "sim/api/api.hpp"

namespace hetsim::gui {

namespace {

QStringList names(const std::vector<std::string>& v) {
  QStringList out;
  for (const std::string& s : v) out << qs(s);
  return out;
}

QString number(double v) { return v > 0 ? QString::number(v, 'g', 6) : QString(); }

// How many [[cluster.pool]] tables the text has: the scenario's pools when it reads, else the
// tables that give a device or nodes.
int pool_count(const Document& doc) {
  if (doc.scenario()) return static_cast<int>(doc.scenario()->cluster.pools.size());
  int n = 0;
  while (toml_value(doc.text(), {"cluster.pool", true, n}, "device") ||
         toml_value(doc.text(), {"cluster.pool", true, n}, "nodes"))
    ++n;
  return n;
}

}  // namespace

QString device_summary(const hw::DeviceSpec& d) {
  QString h = "<b>" + qs(d.display.empty() ? d.name : d.display).toHtmlEscaped() + "</b> (" + qs(d.vendor) + ")<br>";
  QStringList peaks;
  for (const auto& [dtype, rate] : d.peak)
    peaks << qs(std::string(hw::dtype_name(dtype))) + " " + QString::number(rate.v / 1e12, 'g', 4) + " TFLOP/s";
  h += peaks.join(", ") + "<br>";
  h += QObject::tr("%1 at %2 TB/s, %3 W; %4 or %5 per device-hour")
           .arg(format_gib(d.memory.v))
           .arg(d.memory_bandwidth.v / 1e12, 0, 'g', 3)
           .arg(d.tdp.v, 0, 'f', 0)
           .arg(format_usd(d.purchase_usd), format_usd(d.price_usd_per_hour));
  if (!d.sources.empty()) {
    // Each source's opening here; all of it in device_sources (the label's tooltip).
    h += "<br><small>" + QObject::tr("Sources (hover for all):");
    for (const auto& [what, where] : d.sources) {
      QString w = qs(where);
      if (w.size() > 90) w = w.left(88) + "…";
      h += "<br>" + qs(what).toHtmlEscaped() + ": " + w.toHtmlEscaped();
    }
    h += "</small>";
  }
  return h;
}

QString device_sources(const hw::DeviceSpec& d) {
  QString t;
  for (const auto& [what, where] : d.sources) t += (t.isEmpty() ? "" : "\n\n") + qs(what) + ": " + qs(where);
  return t;
}

WorkloadForm::WorkloadForm(Document* doc, QWidget* parent) : TomlForm(doc, {"model", "training", "cluster"}, parent) {
  rebuild();
}

QString WorkloadForm::device_text(int i) const {
  return i >= 0 && i < static_cast<int>(device_labels_.size()) ? device_labels_[static_cast<std::size_t>(i)]->text()
                                                                : QString();
}

void WorkloadForm::rebuild() {
  if (doc_->text().trimmed().isEmpty()) {  // nothing open: no form
    clear_fields();
    device_labels_.clear();
    pools_ = -1;
    setVisible(false);
    return;
  }
  const int pools = pool_count(*doc_);
  if (pools != pools_ || !body_) {
    clear_fields();
    device_labels_.clear();
    pools_ = pools;
    body_ = new QWidget(this);
    auto* v = new QVBoxLayout(body_);
    v->setContentsMargins(0, 0, 0, 0);
    const auto& s = doc_->scenario();

    auto* model = new QGroupBox(tr("Model"), body_);
    auto* mf = new QFormLayout(model);
    const TomlTable m{"model", false, 0};
    add_choice(mf, tr("Preset"), m, "preset", names(workload::preset_names()),
               tr("a published model; empty: the shape below"));
    const QString shape_tip = tr("with a preset: overrides its value; without: required");
    struct Shape {
      QString label;
      const char* key;
      int value;
    };
    const Shape shape[] = {{tr("Layers"), "layers", s ? s->model.layers : 0},
                           {tr("Hidden"), "hidden", s ? s->model.hidden : 0},
                           {tr("Heads"), "heads", s ? s->model.heads : 0},
                           {tr("KV heads"), "kv_heads", s ? s->model.kv_heads : 0},
                           {tr("FFN hidden"), "ffn_hidden", s ? s->model.ffn_hidden : 0},
                           {tr("Vocabulary"), "vocab", s ? s->model.vocab : 0}};
    for (const Shape& x : shape) add_line(mf, x.label, m, x.key, number(x.value), shape_tip);
    v->addWidget(model);

    auto* training = new QGroupBox(tr("Training"), body_);
    auto* tf = new QFormLayout(training);
    const TomlTable t{"training", false, 0};
    add_line(tf, tr("Global batch"), t, "global_batch", {}, tr("sequences per optimizer step"));
    add_line(tf, tr("Sequence length"), t, "seq_len", {}, tr("tokens per sequence"));
    add_choice(tf, tr("Precision"), t, "precision", {"bf16", "fp16", "fp8", "fp32"},
               tr("the GEMMs' and activations' number format; empty: bf16"));
    add_line(tf, tr("Tokens"), t, "tokens", tr("one step only"), tr("tokens to train, e.g. 2e12"));
    v->addWidget(training);

    auto cat = api::catalog();
    const QStringList devices = cat ? names(cat->device_names()) : QStringList();
    for (int k = 0; k < pools; ++k) {
      const QString name = s ? qs(s->cluster.pools[static_cast<std::size_t>(k)].name) : QString::number(k + 1);
      auto* box = new QGroupBox(tr("Owned pool %1: %2").arg(k + 1).arg(name), body_);
      auto* f = new QFormLayout(box);
      const TomlTable pt{"cluster.pool", true, k};
      add_choice(f, tr("Device"), pt, "device", devices, tr("a catalogue device (`hetsim catalog` lists them)"));
      auto* figures = new QLabel(box);
      figures->setWordWrap(true);
      figures->setTextFormat(Qt::RichText);
      figures->setTextInteractionFlags(Qt::TextSelectableByMouse);
      f->addRow(figures);
      device_labels_.push_back(figures);
      add_line(f, tr("Nodes"), pt, "nodes", {}, tr("nodes of this device owned"));
      v->addWidget(box);
    }

    auto* network = new QGroupBox(tr("Network"), body_);
    auto* nf = new QFormLayout(network);
    const TomlTable n{"cluster.network", false, 0};
    add_choice(nf, tr("NIC"), n, "nic", cat ? names(cat->link_names()) : QStringList(),
               tr("every pool's NIC port (a catalogue link); empty: each device's own"));
    add_choice(nf, tr("Topology"), n, "topology", {"fat-tree", "rail-optimized", "torus"}, tr("empty: fat-tree"));
    add_line(nf, tr("Oversubscription"), n, "oversubscription", "1", tr("of the inter-node network (≥ 1)"));
    v->addWidget(network);
    static_cast<QVBoxLayout*>(layout())->insertWidget(0, body_);
  }
  setVisible(true);
  refresh();
}

void WorkloadForm::refreshed() {
  // Each pool's device as the catalogue gives it, for the name in the text.
  auto cat = api::catalog();
  for (std::size_t k = 0; k < device_labels_.size(); ++k) {
    const QString name = toml_value(doc_->text(), {"cluster.pool", true, static_cast<int>(k)}, "device")
                             .value_or(QString())
                             .remove('"');
    const hw::DeviceSpec* d = cat ? cat->find_device(name.toStdString()) : nullptr;
    device_labels_[k]->setText(d ? device_summary(*d) : QString());
    device_labels_[k]->setToolTip(d ? device_sources(*d) : QString());
    device_labels_[k]->setVisible(d != nullptr);
  }
}

}  // namespace hetsim::gui
