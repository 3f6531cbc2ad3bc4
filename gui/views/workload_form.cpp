#include "gui/views/workload_form.hpp"

#include <QAbstractButton>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

#include <algorithm>
#include <optional>

#include "gui/app/document.hpp"
#include "gui/qt_models/format.hpp"
#include "models/hw/catalog.hpp"
#include "models/workload/model_spec.hpp"
#include "sim/api/api.hpp"

namespace hetsim::gui {

namespace {

QStringList names(const std::vector<std::string>& v) {
  QStringList out;
  for (const std::string& s : v) out << qs(s);
  return out;
}

QString unquoted(const std::optional<QString>& v) {
  QString t = v.value_or(QString());
  return t.size() >= 2 && t.startsWith('"') && t.endsWith('"') ? t.mid(1, t.size() - 2) : t;
}

QStringList link_names(const hw::Catalog& cat, bool scale_up) {
  QStringList out;
  for (const std::string& n : cat.link_names())
    if (const hw::LinkSpec* l = cat.find_link(n); l && l->scale_up == scale_up) out << qs(n);
  return out;
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

QStringList pool_names_in(const QString& text) {
  QStringList out;
  for (const QString& array : {QStringLiteral("cluster.pool"), QStringLiteral("purchase.candidate")})
    for (int k = 0, n = toml_array_count(text, array); k < n; ++k) {
      const TomlTable t{array, true, k};
      const QString name = unquoted(toml_value(text, t, "name"));
      out << (name.isEmpty() ? unquoted(toml_value(text, t, "device")) : name);
    }
  return out;
}

QStringList new_pool_lines(const QString& text, const QString& array, const QStringList& more) {
  const QStringList used = pool_names_in(text);
  auto cat = api::catalog();
  const QStringList devices = cat ? names(cat->device_names()) : QStringList();
  if (devices.isEmpty()) return more;
  // From the last table's device (or the H100), the first in catalogue order no name takes.
  const int n = toml_array_count(text, array);
  const QString last = n > 0 ? unquoted(toml_value(text, {array, true, n - 1}, "device")) : QString("h100-sxm5");
  const qsizetype from = std::max<qsizetype>(0, devices.indexOf(last));
  for (qsizetype i = 0; i < devices.size(); ++i) {
    const QString& d = devices[(from + i) % devices.size()];
    if (!used.contains(d)) return QStringList{"device = \"" + d + "\""} + more;
  }
  const QString d = devices[from];
  QString name;
  for (int k = 2; name.isEmpty() || used.contains(name); ++k) name = d + "-" + QString::number(k);
  return QStringList{"name = \"" + name + "\"", "device = \"" + d + "\""} + more;
}

WorkloadForm::WorkloadForm(Document* doc, QWidget* parent) : TomlForm(doc, {"model", "training", "cluster"}, parent) {
  rebuild();
}

QString WorkloadForm::device_text(int i) const {
  return i >= 0 && i < static_cast<int>(pools_.size()) ? pools_[static_cast<std::size_t>(i)].figures->text()
                                                       : QString();
}

QString WorkloadForm::device_tooltip(int i) const {
  return i >= 0 && i < static_cast<int>(pools_.size()) ? pools_[static_cast<std::size_t>(i)].figures->toolTip()
                                                       : QString();
}

QString WorkloadForm::layout_key() const {
  // The pools, and which of them has an inline device table.
  QString key;
  for (int k = 0, n = toml_array_count(doc_->text(), "cluster.pool"); k < n; ++k)
    key += toml_subtables(doc_->text(), {"cluster.pool", true, k}).contains("cluster.pool.device") ? 'i' : 'p';
  return key;
}

void WorkloadForm::lay_out() {
  pools_.clear();
  auto* v = static_cast<QVBoxLayout*>(body_->layout());
  const auto& s = doc_->scenario();

  auto* model = new QGroupBox(tr("Model"), body_);
  auto* mf = new QFormLayout(model);
  const TomlTable m{"model", false, 0};
  add_choice(mf, tr("Preset"), m, "preset", names(workload::preset_names()),
             tr("a published model; empty: the shape below"), tr("the shape below"));
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
  for (const Shape& x : shape) add_line(mf, x.label, m, x.key, form_number(x.value), shape_tip);
  v->addWidget(model);

  auto* training = new QGroupBox(tr("Training"), body_);
  auto* tf = new QFormLayout(training);
  const TomlTable t{"training", false, 0};
  add_line(tf, tr("Global batch"), t, "global_batch", {}, tr("sequences per optimizer step"));
  add_line(tf, tr("Sequence length"), t, "seq_len", {}, tr("tokens per sequence"));
  add_choice(tf, tr("Precision"), t, "precision", {"bf16", "fp16", "fp8", "fp32"},
             tr("the GEMMs' and activations' number format; empty: bf16"), "bf16");
  add_line(tf, tr("Tokens"), t, "tokens", tr("one step only"), tr("tokens to train, e.g. 2e12"));
  add_choice(tf, tr("Optimizer"), t, "optimizer", {"adam", "sgd"}, tr("empty: adam"), "adam");
  add_choice(tf, tr("Fused kernels"), t, "fused_kernels", {"true", "false"},
             tr("memory-bound kernels fused as Megatron-LM and Transformer Engine fuse them; false: PyTorch "
                "eager, one kernel per elementary op; empty: true"),
             "true", false);
  add_choice(tf, tr("Loss kernel"), t, "loss_kernel", {"fp32", "fused"},
             tr("the cross-entropy on fp32 logits, or one fused kernel over the 16-bit logits; empty: fp32"), "fp32");
  add_choice(tf, tr("Attention kernel"), t, "attention_kernel", {"auto", "vendor", "fa2", "triton"},
             tr("the device's fastest published fused attention, FlashAttention-2's, or the Triton "
                "FlashAttention of 2022; empty: auto"),
             "auto");
  add_choice(tf, tr("Norm kernel"), t, "norm_kernel", {"auto", "fused", "native", "eager"}, tr("empty: auto"), "auto");
  add_choice(tf, tr("SP gathers"), t, "sp_gather", {"module", "framework"},
             tr("sequence parallelism: the tensor-parallel layers gather their inputs (Transformer Engine: in fp8 "
                "when training in fp8, again in the backward) or the framework does, in 16 bits, and keeps them; "
                "empty: framework for fp8 on Intel Gaudi, else module"),
             "auto");
  add_choice(tf, tr("Gradient accumulation"), t, "grad_accumulation", {"fused", "add", "cast_add", "add16"},
             tr("where each micro-batch's weight gradients accumulate: in the GEMM (Megatron's fusion), or "
                "written in 16 bits and added by kernels of their own into fp32 (add: Megatron without the "
                "fusion; cast_add: DeepSpeed's BF16 optimizer) or into 16 bits (add16: Megatron-LM of 2021 in "
                "fp16); empty: fused"),
             "fused");
  add_choice(tf, tr("Expert kernel"), t, "expert_kernel", {"auto", "grouped", "loop"},
             tr("mixture-of-experts models: the local experts' GEMMs as one grouped GEMM, or one after another; "
                "empty: auto (grouped with fused kernels)"),
             "auto");
  v->addWidget(training);

  auto cat = api::catalog();
  const QStringList devices = cat ? names(cat->device_names()) : QStringList();
  const QStringList fabrics = cat ? link_names(*cat, true) : QStringList();
  const QStringList nics = cat ? link_names(*cat, false) : QStringList();
  const QString key = layout_key();
  for (int k = 0; k < key.size(); ++k) {
    Pool pool;
    pool.inline_device = key[k] == 'i';
    pool.box = new QGroupBox(body_);
    auto* f = new QFormLayout(pool.box);
    const TomlTable pt{"cluster.pool", true, k};
    add_line(f, tr("Name"), pt, "name", {}, tr("how plans refer to the pool; empty: the device's name"), true);
    auto* device = add_choice(f, tr("Device"), pt, "device", devices,
                              tr("a catalogue device (`hetsim catalog` lists them)"));
    if (pool.inline_device) {
      device->setEnabled(false);
      device->setToolTip(tr("an inline [cluster.pool.device] table: edit it in the text"));
    }
    pool.figures = new QLabel(pool.box);
    pool.figures->setWordWrap(true);
    pool.figures->setTextFormat(Qt::RichText);
    pool.figures->setTextInteractionFlags(Qt::TextSelectableByMouse);
    f->addRow(pool.figures);
    add_line(f, tr("Nodes"), pt, "nodes", {}, tr("nodes of this device owned"));
    add_line(f, tr("Devices per node"), pt, "devices_per_node", {}, tr("empty: the device's node"));
    add_choice(f, tr("Fabric"), pt, "fabric", fabrics, tr("the intra-node link; empty: the device's"));
    add_choice(f, tr("NIC"), pt, "nic", nics, tr("this pool's NIC port; empty: the network's, else the device's"));
    add_line(f, tr("NICs per node"), pt, "nics_per_node", {},
             tr("empty: the network's, else the device's node (scaled to the devices per node)"));
    f->addRow(add_button(pool.box, QString("cluster.pool.%1.remove").arg(k), tr("Remove this pool"),
                         [k](const QString& text) { return remove_toml_table(text, {"cluster.pool", true, k}); },
                         tr("remove owned pool %1").arg(k + 1)));
    v->addWidget(pool.box);
    pools_.push_back(pool);
  }
  v->addWidget(add_button(
      body_, "cluster.pool.add", tr("Add an owned pool"),
      [](const QString& text) { return add_toml_array_table(text, "cluster.pool", new_pool_lines(text, "cluster.pool", {"nodes = 1"})); },
      tr("add an owned pool")));

  auto* network = new QGroupBox(tr("Network"), body_);
  auto* nf = new QFormLayout(network);
  const TomlTable n{"cluster.network", false, 0};
  add_choice(nf, tr("NIC"), n, "nic", nics, tr("every pool's NIC port (a catalogue link); empty: each device's own"),
             tr("each device's"));
  add_line(nf, tr("NIC bandwidth"), n, "nic_bandwidth", {},
           tr("instead of a NIC: a custom NIC of this bandwidth per port, e.g. 400Gbps"), true);
  add_line(nf, tr("NIC latency"), n, "nic_latency", "5us", tr("the custom NIC's latency"), true);
  add_line(nf, tr("NICs per node"), n, "nics_per_node", {}, tr("for every pool that does not set its own"));
  add_choice(nf, tr("Topology"), n, "topology", {"fat-tree", "rail-optimized", "torus"}, tr("empty: fat-tree"), "fat-tree");
  add_line(nf, tr("Oversubscription"), n, "oversubscription", "1", tr("of the inter-node network (≥ 1)"));
  v->addWidget(network);
}

void WorkloadForm::refreshed() {
  // Each pool as read: its name in the title, its node's shape and links as placeholders, its
  // device's figures (the scenario's, which may come from a catalogue of its own; else the
  // built-in catalogue's for the name in the text).
  auto cat = api::catalog();
  const auto& s = doc_->scenario();
  const bool read = s && s->cluster.pools.size() == pools_.size();
  for (std::size_t k = 0; k < pools_.size(); ++k) {
    const Pool& pool = pools_[k];
    const int i = static_cast<int>(k);
    const hw::PoolSpec* ps = read ? &s->cluster.pools[k] : nullptr;
    const QString name = unquoted(toml_value(doc_->text(), {"cluster.pool", true, i}, "device"));
    const hw::DeviceSpec* d = ps ? &ps->device : cat ? cat->find_device(name.toStdString()) : nullptr;
    pool.box->setTitle(tr("Owned pool %1: %2").arg(k + 1).arg(ps ? qs(ps->name) : name));
    if (pool.inline_device) {
      auto* box = qobject_cast<QComboBox*>(field(QString("cluster.pool.%1.device").arg(k)));
      if (box && ps && box->currentText() != qs(ps->device.name)) {
        box->addItem(qs(ps->device.name));
        box->setCurrentIndex(box->count() - 1);
      }
    }
    // A scenario is read against the catalogue's figures alone: a built-in device's sources
    // come from the whole catalogue; a device of the scenario's own files keeps its own.
    std::optional<hw::DeviceSpec> shown;
    if (d) {
      shown = *d;
      if (const hw::DeviceSpec* b = cat && d->builtin ? cat->find_device(d->name) : nullptr)
        shown->sources = b->sources;
    }
    pool.figures->setText(shown ? device_summary(*shown) : QString());
    pool.figures->setToolTip(shown ? device_sources(*shown) : QString());
    pool.figures->setVisible(d != nullptr);
    auto placeholder = [&](const char* key, const QString& value) {
      if (auto* e = qobject_cast<QLineEdit*>(field(QString("cluster.pool.%1.%2").arg(k).arg(key))))
        e->setPlaceholderText(value);
    };
    placeholder("name", ps ? qs(ps->name) : name);
    placeholder("devices_per_node", ps ? QString::number(ps->devices_per_node) : QString());
    placeholder("nics_per_node", ps ? QString::number(ps->nics_per_node) : QString());
    // A link's first item is the key absent: what the reader takes then (docs/scenario-format.md:
    // the device's fabric; the network's NIC, else the device's).
    const hw::DeviceSpec* shipped = ps ? &ps->device : d;
    QString nic = unquoted(toml_value(doc_->text(), {"cluster.network", false, 0}, "nic"));
    if (toml_value(doc_->text(), {"cluster.network", false, 0}, "nic_bandwidth")) nic = "custom-nic";
    if (nic.isEmpty() && shipped) nic = qs(shipped->node.nic);
    if (auto* b = qobject_cast<QComboBox*>(field(QString("cluster.pool.%1.fabric").arg(k))))
      set_absent_text(b, shipped ? qs(shipped->node.fabric) : QString());
    if (auto* b = qobject_cast<QComboBox*>(field(QString("cluster.pool.%1.nic").arg(k)))) set_absent_text(b, nic);
  }
}

}  // namespace hetsim::gui
