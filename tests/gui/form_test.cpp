// The forms (purchase; workload and owned cluster): their TOML edits (app/toml_patch) keep the
// file the user's, and each field typed is written into the text, read by the scenario reader,
// and its messages shown; a bad value disables Run.
#include <QAbstractButton>
#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

#include "gui/app/document.hpp"
#include "gui/app/main_window.hpp"
#include "gui/app/toml_patch.hpp"
#include "gui/views/parallel_form.hpp"
#include "gui/views/purchase_form.hpp"
#include "gui/views/scenario_view.hpp"
#include "gui/views/workload_form.hpp"
#include "sim/api/api.hpp"
#include "models/hw/catalog.hpp"
#include "tests/gui/gui_test.hpp"
#include "tests/gui/window_support.hpp"

namespace hetsim::gui {
namespace {

const QString kText =
    "# a scenario\n"
    "[purchase]\n"
    "budget_usd = 1e6   # capex\n"
    "\n"
    "# the candidates\n"
    "[[purchase.candidate]]\n"
    "device = \"h100-sxm5\"\n"
    "max_nodes = 2\n"
    "\n"
    "[[purchase.candidate]]\n"
    "device = \"a#b\"  # a quoted '#'\n"
    "max_nodes = 4\n";

// What a document holds of the cluster and the purchase, as the reader made it.
QString summary(const Scenario& s) {
  QString out;
  for (const hw::PoolSpec& p : s.cluster.pools)
    out += QString("pool %1 %2 nodes %3 x%4 fabric %5 nic %6 x%7\n")
               .arg(QString::fromStdString(p.name), QString::fromStdString(p.device.name))
               .arg(p.nodes)
               .arg(p.devices_per_node)
               .arg(QString::fromStdString(p.fabric.name), QString::fromStdString(p.nic.name))
               .arg(p.nics_per_node);
  if (s.purchase)
    for (const auto& c : s.purchase->candidates)
      out += QString("candidate %1 %2 max %3 step %4 $%5\n")
                 .arg(QString::fromStdString(c.pool.name), QString::fromStdString(c.pool.device.name))
                 .arg(c.max_nodes)
                 .arg(c.node_step)
                 .arg(c.pool.device.purchase_usd);
  return out;
}

// `w`'s document against `text` typed into the editor of a window on the same file: the same
// text, read the same way.
void same_as_typed(const MainWindow& w, const QString& text) {
  MainWindow typed;
  Prompts p;
  p.unsaved = [](QWidget*, const QString&) { return QMessageBox::Discard; };
  typed.set_prompts(p);
  QVERIFY(typed.open_file(w.document()->path()));
  typed.scenario_view()->editor()->setPlainText(text);
  typed.scenario_view()->apply_edit();
  if (w.document()->text() != typed.document()->text()) {
    // Where they part, to read.
    const QString& a = w.document()->text();
    const QString& b = typed.document()->text();
    qsizetype at = 0;
    while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
    qWarning("form:  %s\ntyped: %s", qPrintable(a.mid(std::max<qsizetype>(0, at - 60), 200)),
             qPrintable(b.mid(std::max<qsizetype>(0, at - 60), 200)));
  }
  QCOMPARE(w.document()->text(), typed.document()->text());
  QCOMPARE(w.document()->scenario().has_value(), typed.document()->scenario().has_value());
  QCOMPARE(w.document()->diagnostics().size(), typed.document()->diagnostics().size());
  if (w.document()->scenario()) QCOMPARE(summary(*w.document()->scenario()), summary(*typed.document()->scenario()));
}

void click(QAbstractButton* b) {
  QVERIFY(b);
  QVERIFY(b->isEnabled());
  QTest::mouseClick(b, Qt::LeftButton);
}

void choose(QComboBox* box, const QString& text) {
  QVERIFY(box);
  const int at = box->findText(text);
  QVERIFY2(at >= 0, qPrintable(text));
  box->setCurrentIndex(at);
  emit box->activated(at);
}

void type_into(QLineEdit* e, const QString& text) {
  QVERIFY(e);
  e->setFocus();
  e->selectAll();
  if (text.isEmpty())
    QTest::keyClick(e, Qt::Key_Delete);
  else
    QTest::keyClicks(e, text);
  QTest::keyClick(e, Qt::Key_Return);
}

// Sets form field `id` as a user would: a line edit typed (Enter), a choice picked.
void set_field(TomlForm* form, const QString& id, const QString& value) {
  QWidget* f = form->field(id);
  QVERIFY2(f, qPrintable(id));
  if (auto* e = qobject_cast<QLineEdit*>(f)) type_into(e, value);
  if (auto* b = qobject_cast<QComboBox*>(f)) choose(b, value);
}

// What the document and its forms show: the text, every field's value, modified or not.
struct Shown {
  QString text;
  QStringList fields;
  bool modified = false;
  bool operator==(const Shown&) const = default;
};

Shown shown(const MainWindow& w) {
  Shown out{w.document()->text(), {}, w.document()->modified()};
  ScenarioView* v = w.scenario_view();
  for (const TomlForm* f : {static_cast<TomlForm*>(v->workload_form()), static_cast<TomlForm*>(v->parallel_form()),
                            static_cast<TomlForm*>(v->form())})
    for (const QString& id : f->field_ids()) {
      QString value;
      if (auto* e = qobject_cast<QLineEdit*>(f->field(id))) value = e->text();
      if (auto* b = qobject_cast<QComboBox*>(f->field(id))) value = b->currentText();
      out.fields << id + " = " + value;
    }
  // The editor shows the document's text, and the window says whether it is saved.
  if (v->editor()->toPlainText() != out.text) out.fields << "editor differs";
  if (w.isWindowModified() != out.modified) out.fields << "title differs";
  return out;
}

char* toString(const Shown& s) {
  return qstrdup(qPrintable(s.text + "\n" + s.fields.join("\n") + (s.modified ? "\nmodified" : "")));
}

class FormTest : public QObject {
  Q_OBJECT

  // Shows `w` with no dialog and the small purchase scenario open.
  static void open_small(MainWindow& w) {
    Prompts p;
    p.unsaved = [](QWidget*, const QString&) { return QMessageBox::Discard; };
    p.error = [](QWidget*, const QString&, const QString& m) { QFAIL(qPrintable(m)); };
    w.set_prompts(p);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.open_file(test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml")));
  }

 private slots:
  void toml_values_are_read_and_set_in_place() {
    const TomlTable purchase{"purchase", false, 0};
    const TomlTable second{"purchase.candidate", true, 1};
    QCOMPARE(toml_value(kText, purchase, "budget_usd"), std::optional<QString>("1e6"));
    QCOMPARE(toml_value(kText, second, "max_nodes"), std::optional<QString>("4"));
    QCOMPARE(toml_value(kText, second, "device"), std::optional<QString>("\"a#b\""));
    QVERIFY(!toml_value(kText, purchase, "power_kw"));
    QVERIFY(!toml_value(kText, {"purchase.candidate", true, 2}, "max_nodes"));

    // Rewritten in place, its comment kept; nothing else moves.
    auto t = set_toml_value(kText, purchase, "budget_usd", "2.5e6");
    QVERIFY(t);
    QCOMPARE(*t, QString(kText).replace("budget_usd = 1e6   # capex", "budget_usd = 2.5e6   # capex"));
    // A new key after the table's last key line, before its blank and comment lines.
    t = set_toml_value(kText, purchase, "power_kw", "300");
    QVERIFY(t);
    QVERIFY(t->contains("budget_usd = 1e6   # capex\npower_kw = 300\n\n# the candidates"));
    // The second candidate's, not the first's.
    t = set_toml_value(kText, second, "max_nodes", "8");
    QVERIFY(t->contains("device = \"h100-sxm5\"\nmax_nodes = 2\n"));
    QVERIFY(t->contains("# a quoted '#'\nmax_nodes = 8\n"));
    // Removed.
    t = set_toml_value(kText, purchase, "budget_usd", "");
    QVERIFY(!t->contains("budget_usd"));
    QVERIFY(t->startsWith("# a scenario\n[purchase]\n\n# the candidates"));
    // A missing table is added at the end; a missing candidate is not made up.
    t = set_toml_value(kText, {"cost", false, 0}, "mode", "\"own\"");
    QVERIFY(t->endsWith("max_nodes = 4\n\n[cost]\nmode = \"own\"\n"));
    QVERIFY(!set_toml_value(kText, {"purchase.candidate", true, 5}, "max_nodes", "1"));
  }

  void a_field_typed_is_written_read_and_checked() {
    MainWindow w;
    open_small(w);
    if (QTest::currentTestFailed()) return;
    PurchaseForm* form = w.scenario_view()->form();
    QVERIFY(form->isVisibleTo(&w));
    auto* budget = qobject_cast<QLineEdit*>(form->field("purchase.budget_usd"));
    auto* max_nodes = qobject_cast<QLineEdit*>(form->field("purchase.candidate.0.max_nodes"));
    auto* objective = qobject_cast<QComboBox*>(form->field("purchase.objective"));
    QVERIFY(budget && max_nodes && objective);
    QCOMPARE(budget->text(), QString("1.0e6"));
    QCOMPARE(max_nodes->text(), QString("2"));
    QCOMPARE(objective->currentText(), QString("pareto"));

    // Typed: the text follows after a pause in typing (or at once on Enter), the reader too.
    budget->setFocus();
    budget->selectAll();
    QTest::keyClicks(budget, "2e6");
    QTRY_VERIFY(w.document()->text().contains("budget_usd = 2e6\n"));
    QVERIFY(w.document()->modified());
    QCOMPARE(w.document()->scenario()->purchase->budget_usd, 2e6);
    QCOMPARE(w.scenario_view()->editor()->toPlainText(), w.document()->text());

    max_nodes->setFocus();
    max_nodes->selectAll();
    QTest::keyClicks(max_nodes, "3");
    QTest::keyClick(max_nodes, Qt::Key_Return);
    QVERIFY(w.document()->text().contains("max_nodes = 3\n"));
    QCOMPARE(w.document()->scenario()->purchase->candidates[0].max_nodes, 3);
    QCOMPARE(w.document()->scenario()->purchase->candidates[1].max_nodes, 2);

    // A bad value: the reader's message under the form, Run disabled.
    budget->setFocus();
    budget->selectAll();
    QTest::keyClicks(budget, "-5");
    QTest::keyClick(budget, Qt::Key_Return);
    QVERIFY(!w.document()->scenario());
    QVERIFY(!w.run_action()->isEnabled());
    const Diagnostic& d = w.document()->diagnostics().front();
    QCOMPARE(QString::fromStdString(d.key), QString("purchase.budget_usd"));
    QVERIFY2(form->messages_text().contains(QString::fromStdString(d.message)), qPrintable(form->messages_text()));
    // Emptied: the key goes, and with it the limit.
    budget->selectAll();
    QTest::keyClick(budget, Qt::Key_Delete);
    QTest::keyClick(budget, Qt::Key_Return);
    QVERIFY(!w.document()->text().contains("budget_usd"));
    QVERIFY(w.document()->scenario());
    QCOMPARE(w.document()->scenario()->purchase->budget_usd, 0.0);
    QVERIFY(form->messages_text().isEmpty());
    QVERIFY(w.run_action()->isEnabled());

    // A choice.
    objective->setCurrentIndex(objective->findText("time"));
    emit objective->activated(objective->currentIndex());
    QVERIFY(w.document()->text().contains("objective = \"time\""));
    QCOMPARE(w.document()->scenario()->purchase->objective, PurchaseSpec::Objective::Time);

    // Edit > Undo takes back the form's last edit.
    w.undo_action()->trigger();
    QVERIFY(w.document()->text().contains("objective = \"pareto\""));
    QTRY_COMPARE(objective->currentText(), QString("pareto"));

    // Not a purchase scenario: the cost only.
    QVERIFY(w.open_file(test::source_file("scenarios/mixed-h100-a100.toml")));
    QVERIFY(form->isVisibleTo(&w));
    QVERIFY(!form->field("purchase.budget_usd") && !form->field("purchase.objective"));
    QVERIFY(!form->button("purchase.candidate.add"));
    type_into(qobject_cast<QLineEdit*>(form->field("cost.electricity_usd_per_kwh")), "0.2");
    QVERIFY(w.document()->text().endsWith("\n[cost]\nelectricity_usd_per_kwh = 0.2\n"));
    QCOMPARE(w.document()->scenario()->cost.electricity_usd_per_kwh, 0.2);
    choose(qobject_cast<QComboBox*>(form->field("cost.mode")), "own");
    QCOMPARE(w.document()->scenario()->cost.mode, CostSpec::Mode::Own);
  }

  void the_workload_and_cluster_form_writes_and_checks_as_typed() {
    MainWindow w;
    open_small(w);
    if (QTest::currentTestFailed()) return;
    WorkloadForm* form = w.scenario_view()->workload_form();
    QVERIFY(form->isVisibleTo(&w));
    auto* preset = qobject_cast<QComboBox*>(form->field("model.preset"));
    auto* layers = qobject_cast<QLineEdit*>(form->field("model.layers"));
    auto* seq = qobject_cast<QLineEdit*>(form->field("training.seq_len"));
    auto* precision = qobject_cast<QComboBox*>(form->field("training.precision"));
    auto* device = qobject_cast<QComboBox*>(form->field("cluster.pool.0.device"));
    auto* nodes = qobject_cast<QLineEdit*>(form->field("cluster.pool.0.nodes"));
    QVERIFY(preset && layers && seq && precision && device && nodes);
    QCOMPARE(preset->currentText(), QString("llama3-8b"));
    QCOMPARE(layers->text(), QString());  // from the preset: its value is the placeholder
    QCOMPARE(layers->placeholderText(), QString::number(w.document()->scenario()->model.layers));
    QCOMPARE(seq->text(), QString("4096"));
    QCOMPARE(device->currentText(), QString("a100-sxm4-80gb"));
    QCOMPARE(nodes->text(), QString("1"));
    // The device with its catalogue figures and sources.
    auto cat = api::catalog();
    QVERIFY(cat.ok());
    const hw::DeviceSpec* a100 = cat->find_device("a100-sxm4-80gb");
    QVERIFY(a100 && !a100->sources.empty());
    QVERIFY2(form->device_text(0).contains(QString::fromStdString(a100->display).toHtmlEscaped()),
             qPrintable(form->device_text(0)));
    const QString source = QString::fromStdString(a100->sources.begin()->second);
    QVERIFY(form->device_text(0).contains(source.left(40).toHtmlEscaped()));
    QVERIFY(device_sources(*a100).contains(source));
    QVERIFY2(form->device_tooltip(0).contains(source), qPrintable(form->device_tooltip(0)));

    // A bad sequence length: the reader's message (file:line:col, key) under the form; no Run.
    seq->setFocus();
    seq->selectAll();
    QTest::keyClicks(seq, "-5");
    QTest::keyClick(seq, Qt::Key_Return);
    QVERIFY(w.document()->text().contains("seq_len = -5\n"));
    QVERIFY(!w.document()->scenario());
    QVERIFY(!w.run_action()->isEnabled());
    const Diagnostic d = w.document()->diagnostics().front();
    QCOMPARE(QString::fromStdString(d.key), QString("training.seq_len"));
    QVERIFY2(form->messages_text().contains(QString::fromStdString(d.message)), qPrintable(form->messages_text()));
    QVERIFY(form->messages_text().contains(QString("llama3-8b-add-to-one-a100-node.toml:%1:").arg(d.where.line)));
    QVERIFY(form->messages_text().contains("[training.seq_len]"));
    QVERIFY(!w.run());
    // Fixed: read again, Run back.
    seq->selectAll();
    QTest::keyClicks(seq, "2048");
    QTest::keyClick(seq, Qt::Key_Return);
    QVERIFY(w.document()->scenario());
    QCOMPARE(w.document()->scenario()->training.seq_len, 2048);
    QVERIFY(form->messages_text().isEmpty());
    QVERIFY(w.run_action()->isEnabled());

    // Another device from the catalogue: written as a quoted name, its figures shown.
    device->setCurrentIndex(device->findText("h100-sxm5"));
    emit device->activated(device->currentIndex());
    QVERIFY(w.document()->text().contains("device = \"h100-sxm5\"\nnodes = 1"));
    QCOMPARE(w.document()->scenario()->cluster.pools[0].device.name, std::string("h100-sxm5"));
    QVERIFY(form->device_text(0).contains(QString::fromStdString(cat->find_device("h100-sxm5")->display)));
    // Nodes that are not a count: the reader's message, no Run.
    nodes->setFocus();
    nodes->selectAll();
    QTest::keyClicks(nodes, "two");
    QTest::keyClick(nodes, Qt::Key_Return);
    QVERIFY(!w.document()->scenario());
    QVERIFY(!w.run_action()->isEnabled());
    // Not TOML: the reader's syntax message, with its line, shows under the form too.
    const Diagnostic bad = w.document()->diagnostics().front();
    QVERIFY2(form->messages_text().contains(QString::fromStdString(bad.message)), qPrintable(form->messages_text()));
    QVERIFY(form->messages_text().contains(QString("llama3-8b-add-to-one-a100-node.toml:%1:").arg(bad.where.line)));
    nodes->selectAll();
    QTest::keyClicks(nodes, "2");
    QTest::keyClick(nodes, Qt::Key_Return);
    QCOMPARE(w.document()->scenario()->cluster.pools[0].nodes, 2);

    // A shape over the preset, and a precision.
    layers->setFocus();
    QTest::keyClicks(layers, "12");
    QTest::keyClick(layers, Qt::Key_Return);
    QCOMPARE(w.document()->scenario()->model.layers, 12);
    precision->setCurrentIndex(precision->findText("fp16"));
    emit precision->activated(precision->currentIndex());
    QCOMPARE(w.document()->scenario()->training.precision, hw::Dtype::Fp16);
    // The document is still the scenario TOML the CLI reads.
    auto back = api::load_text(w.document()->text().toStdString(), "back.toml", {.plan = false});
    QVERIFY(back.ok());
    QCOMPARE(back->model.layers, 12);
    QCOMPARE(back->cluster.pools[0].nodes, 2);
  }

  void tables_are_added_and_removed_in_place() {
    QCOMPARE(toml_array_count(kText, "purchase.candidate"), 2);
    QCOMPARE(toml_array_count(kText, "cluster.pool"), 0);
    QVERIFY(has_toml_table(kText, {"purchase", false, 0}));
    QVERIFY(!has_toml_table(kText, {"cost", false, 0}));
    // A new table after the last of its array.
    QCOMPARE(add_toml_array_table(kText, "purchase.candidate", {"device = \"x\"", "max_nodes = 1"}),
             kText + "\n[[purchase.candidate]]\ndevice = \"x\"\nmax_nodes = 1\n");
    // The first of an array, at the end.
    QCOMPARE(add_toml_array_table(kText, "cluster.pool", {"device = \"x\"", "nodes = 1"}),
             kText + "\n[[cluster.pool]]\ndevice = \"x\"\nnodes = 1\n");
    // Removed: the table's lines, one blank line left; the comment before the next table stays.
    QCOMPARE(*remove_toml_table(kText, {"purchase.candidate", true, 1}),
             QString(kText).replace("\n[[purchase.candidate]]\ndevice = \"a#b\"  # a quoted '#'\nmax_nodes = 4\n", ""));
    // A table goes with its sub-tables: [purchase] with its candidates.
    QCOMPARE(*remove_toml_table(kText, {"purchase", false, 0}), QString("# a scenario\n"));
    QVERIFY(!remove_toml_table(kText, {"purchase.candidate", true, 2}));

    // With sub-tables (an inline device) and comments on the headers.
    const QString pools =
        "[[cluster.pool]]   # the first\n"
        "nodes = 2\n"
        "[cluster.pool.device]\n"
        "name = \"mine\"\n"
        "[cluster.pool.device.sources]\n"
        "peak = \"a datasheet\"\n"
        "\n"
        "# the second\n"
        "[[cluster.pool]]\n"
        "device = \"h100-sxm5\"\n"
        "nodes = 1\n"
        "\n"
        "[parallel]\n"
        "tp = 2\n"
        "# a group\n"
        "[[parallel.replicas]]\n"
        "count = 1\n"
        "\n"
        "[reference]\n"
        "step_time_s = 1\n";
    QCOMPARE(toml_subtables(pools, {"cluster.pool", true, 0}),
             QStringList({"cluster.pool.device", "cluster.pool.device.sources"}));
    QVERIFY(toml_subtables(pools, {"cluster.pool", true, 1}).isEmpty());
    QCOMPARE(*remove_toml_table(pools, {"cluster.pool", true, 0}), pools.mid(pools.indexOf("# the second")));
    QCOMPARE(add_toml_array_table(pools, "cluster.pool", {"device = \"x\""}),
             QString(pools).replace("nodes = 1\n\n[parallel]", "nodes = 1\n\n[[cluster.pool]]\ndevice = \"x\"\n\n[parallel]"));
    // A new pool goes after the last pool's sub-tables, before the comment that opens what follows.
    QCOMPARE(add_toml_array_table(QString(pools).replace("[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n\n", ""),
                                  "cluster.pool", {"device = \"x\""}),
             QString(pools)
                 .replace("[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n\n", "")
                 .replace("peak = \"a datasheet\"\n\n# the second",
                          "peak = \"a datasheet\"\n\n[[cluster.pool]]\ndevice = \"x\"\n\n# the second"));
    // A copy of a table, after the last of its array.
    QCOMPARE(*copy_toml_array_table(kText, "purchase.candidate", 0),
             kText + "\n[[purchase.candidate]]\ndevice = \"h100-sxm5\"\nmax_nodes = 2\n");
    QVERIFY(!copy_toml_array_table(kText, "purchase.candidate", 2));
    // [parallel] with its replica groups.
    QCOMPARE(*remove_toml_table(pools, {"parallel", false, 0}),
             QString(pools).replace("[parallel]\ntp = 2\n# a group\n[[parallel.replicas]]\ncount = 1\n\n", ""));
  }

  void pools_and_candidates_added_and_removed_read_as_typed() {
    MainWindow w;
    open_small(w);
    if (QTest::currentTestFailed()) return;
    WorkloadForm* cluster = w.scenario_view()->workload_form();
    PurchaseForm* purchase = w.scenario_view()->form();
    QString typed = w.document()->text();
    auto cat = api::catalog();
    QVERIFY(cat.ok());

    // A pool: after the last one, a catalogue device no pool or candidate is named after.
    QVERIFY(!cluster->field("cluster.pool.1.device"));
    click(cluster->button("cluster.pool.add"));
    auto* device = qobject_cast<QComboBox*>(cluster->field("cluster.pool.1.device"));
    QVERIFY(device);
    const QString added = device->currentText();
    QVERIFY(cat->find_device(added.toStdString()));
    QVERIFY(!QStringList({"a100", "h100-sxm5", "h200-sxm"}).contains(added));
    typed.replace("nodes = 1\n\n[cost]", "nodes = 1\n\n[[cluster.pool]]\ndevice = \"" + added + "\"\nnodes = 1\n\n[cost]");
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(w.document()->scenario()->cluster.pools.size(), std::size_t(2));
    QVERIFY(w.run_action()->isEnabled());
    QVERIFY(cluster->device_text(1).contains(QString::fromStdString(cat->find_device(added.toStdString())->vendor)));

    // Its fields: another device, nodes, and the node's shape and NIC.
    choose(device, "h100-sxm5");
    type_into(qobject_cast<QLineEdit*>(cluster->field("cluster.pool.1.name")), "h100");
    type_into(qobject_cast<QLineEdit*>(cluster->field("cluster.pool.1.nodes")), "2");
    choose(qobject_cast<QComboBox*>(cluster->field("cluster.pool.1.nic")), "ib-ndr-400");
    type_into(qobject_cast<QLineEdit*>(cluster->field("cluster.pool.1.nics_per_node")), "4");
    if (QTest::currentTestFailed()) return;
    typed.replace("[[cluster.pool]]\ndevice = \"" + added + "\"\nnodes = 1\n",
                  "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\nname = \"h100\"\nnic = \"ib-ndr-400\"\nnics_per_node = 4\n");
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    const hw::PoolSpec& h100 = w.document()->scenario()->cluster.pools[1];
    QCOMPARE(h100.name, std::string("h100"));
    QCOMPARE(h100.nodes, 2);
    QCOMPARE(h100.nic.name, std::string("ib-ndr-400"));
    QCOMPARE(h100.nics_per_node, 4);

    // A bad value in a pool: the reader's message under the form, no Run; the hint shows too.
    auto* per_node = qobject_cast<QLineEdit*>(cluster->field("cluster.pool.1.devices_per_node"));
    type_into(per_node, "0");
    QVERIFY(!w.document()->scenario());
    QVERIFY(!w.run_action()->isEnabled());
    QVERIFY(!w.run());
    const Diagnostic d = w.document()->diagnostics().front();
    QCOMPARE(QString::fromStdString(d.key), QString("cluster.pool[1].devices_per_node"));
    QVERIFY2(cluster->messages_text().contains(QString::fromStdString(d.message)), qPrintable(cluster->messages_text()));
    QVERIFY(cluster->messages_text().contains(QString("llama3-8b-add-to-one-a100-node.toml:%1:").arg(d.where.line)));
    type_into(per_node, "");
    QVERIFY(w.document()->scenario());
    QVERIFY(w.run_action()->isEnabled());
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;

    // The first pool removed: the rest is as it was.
    click(cluster->button("cluster.pool.0.remove"));
    typed.replace("[[cluster.pool]]\nname = \"a100\"\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n\n", "");
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(w.document()->scenario()->cluster.pools.size(), std::size_t(1));
    QCOMPARE(qobject_cast<QLineEdit*>(cluster->field("cluster.pool.0.name"))->text(), QString("h100"));
    QVERIFY(!cluster->field("cluster.pool.1.name"));

    // A candidate: after the last, on a device nothing is named after yet; then the first removed.
    click(purchase->button("purchase.candidate.add"));
    auto* cand = qobject_cast<QComboBox*>(purchase->field("purchase.candidate.2.device"));
    QVERIFY(cand);
    const QString candidate = cand->currentText();
    QVERIFY(cat->find_device(candidate.toStdString()));
    QVERIFY(!QStringList({"h100", "h100-sxm5", "h200-sxm"}).contains(candidate));
    typed += "\n[[purchase.candidate]]\ndevice = \"" + candidate + "\"\nmax_nodes = 1\n";
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(w.document()->scenario()->purchase->candidates.size(), std::size_t(3));
    type_into(qobject_cast<QLineEdit*>(purchase->field("purchase.candidate.2.max_nodes")), "3");
    type_into(qobject_cast<QLineEdit*>(purchase->field("purchase.candidate.2.purchase_usd")), "20000");
    choose(qobject_cast<QComboBox*>(purchase->field("purchase.candidate.1.device")), "mi300x");
    if (QTest::currentTestFailed()) return;
    typed.replace("max_nodes = 1\n", "max_nodes = 3\npurchase_usd = 20000\n");
    typed.replace("device = \"h200-sxm\"", "device = \"mi300x\"");
    click(purchase->button("purchase.candidate.0.remove"));
    typed.replace("[[purchase.candidate]]\ndevice = \"h100-sxm5\"\nmax_nodes = 2\n\n", "");
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    const auto& cands = w.document()->scenario()->purchase->candidates;
    QCOMPARE(cands.size(), std::size_t(2));
    QCOMPARE(cands[0].pool.device.name, std::string("mi300x"));
    QCOMPARE(cands[1].max_nodes, 3);
    QCOMPARE(cands[1].pool.device.purchase_usd, 20000.0);
    QVERIFY(w.run_action()->isEnabled());
    // A candidate named as an owned pool: the reader's message under the purchase form.
    type_into(qobject_cast<QLineEdit*>(purchase->field("purchase.candidate.0.name")), "h100");
    QVERIFY(!w.document()->scenario());
    QVERIFY(!w.run_action()->isEnabled());
    QVERIFY2(purchase->messages_text().contains("a candidate and an owned pool are both named 'h100'"),
             qPrintable(purchase->messages_text()));
    type_into(qobject_cast<QLineEdit*>(purchase->field("purchase.candidate.0.name")), "");
    QVERIFY(w.document()->scenario());
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;

    // A quantity's field takes it unquoted; a bare number where a bandwidth goes is the reader's
    // message, with its hint.
    auto* nic_bandwidth = qobject_cast<QLineEdit*>(cluster->field("cluster.network.nic_bandwidth"));
    type_into(nic_bandwidth, "400");
    QVERIFY(w.document()->text().endsWith("\n[cluster.network]\nnic_bandwidth = \"400\"\n"));
    QVERIFY(!w.document()->scenario());
    const Diagnostic bare = w.document()->diagnostics().front();
    QCOMPARE(QString::fromStdString(bare.key), QString("cluster.network.nic_bandwidth"));
    QVERIFY(!bare.hint.empty());
    QVERIFY2(cluster->messages_text().contains(QString::fromStdString(bare.hint)), qPrintable(cluster->messages_text()));
    QVERIFY(!w.run_action()->isEnabled());
    type_into(nic_bandwidth, "400Gbps");
    QVERIFY(w.document()->scenario());
    QCOMPARE(w.document()->scenario()->cluster.pools[0].nic.bandwidth.v, 50e9);
    QVERIFY(w.run_action()->isEnabled());
  }

  void a_device_of_its_own_catalogue_or_inline_shows_in_the_picker() {
    MainWindow w;
    Quiet quiet;
    w.set_prompts(quiet.prompts());
    // A profile's device (the pool's `catalog`): not in the built-in list, shown as the file has it.
    QVERIFY(w.open_file(test::source_file("scenarios/cpu-pipeline.toml")));
    WorkloadForm* form = w.scenario_view()->workload_form();
    auto* device = qobject_cast<QComboBox*>(form->field("cluster.pool.0.device"));
    QVERIFY(device && device->isEnabled());
    QCOMPARE(device->currentText(), QString("cpu-dev"));
    QVERIFY(form->device_text(0).contains(QString::fromStdString(w.document()->scenario()->cluster.pools[0].device.vendor)));
    // An inline device table: its name, not editable in the form.
    QVERIFY(w.open_file(test::source_file("scenarios/validation/heterogeneous/sailor-mit-a-n2-d1.toml")));
    QVERIFY(w.document()->scenario());
    for (int k = 0; k < 2; ++k) {
      device = qobject_cast<QComboBox*>(form->field(QString("cluster.pool.%1.device").arg(k)));
      QVERIFY(device && !device->isEnabled());
      QCOMPARE(device->currentText(),
               QString::fromStdString(w.document()->scenario()->cluster.pools[static_cast<std::size_t>(k)].device.name));
      QVERIFY(!form->device_text(k).isEmpty());
    }
    QVERIFY(quiet.errors.isEmpty());
  }

  void training_and_plan_fields_write_and_check() {
    MainWindow w;
    Quiet quiet;
    w.set_prompts(quiet.prompts());
    QVERIFY(w.open_file(test::source_file("scenarios/mixed-h100-a100.toml")));
    WorkloadForm* workload = w.scenario_view()->workload_form();
    ParallelForm* plan = w.scenario_view()->parallel_form();
    QVERIFY(plan->isVisibleTo(&w));
    QVERIFY(!w.scenario_view()->form()->field("purchase.objective"));  // the cost only
    QString typed = w.document()->text();

    // Training: the optimizer, the kernels (a bare true/false), the loss.
    choose(qobject_cast<QComboBox*>(workload->field("training.optimizer")), "sgd");
    choose(qobject_cast<QComboBox*>(workload->field("training.fused_kernels")), "false");
    choose(qobject_cast<QComboBox*>(workload->field("training.loss_kernel")), "fused");
    choose(qobject_cast<QComboBox*>(workload->field("training.sp_gather")), "framework");
    choose(qobject_cast<QComboBox*>(workload->field("training.grad_accumulation")), "cast_add");
    if (QTest::currentTestFailed()) return;
    typed.replace("tokens = 1e12\n", "tokens = 1e12\noptimizer = \"sgd\"\nfused_kernels = false\nloss_kernel = \"fused\"\n"
                                      "sp_gather = \"framework\"\ngrad_accumulation = \"cast_add\"\n");
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    const auto& t = w.document()->scenario()->training;
    QCOMPARE(t.optimizer, workload::Optimizer::Sgd);
    QVERIFY(!t.fused_kernels);
    QCOMPARE(t.loss_kernel, workload::LossKernel::Fused);
    QVERIFY(t.sp_gather && *t.sp_gather == workload::TrainingSpec::SpGather::Framework);
    QCOMPARE(t.grad_accumulation, workload::GradAccumulation::CastAdd);
    QVERIFY(workload->field("training.expert_kernel"));  // a MoE key: offered, left unset here

    // Replica groups: the common keys only.
    QVERIFY(!plan->field("parallel.tp"));
    QVERIFY(plan->note_text().contains("[[parallel.replicas]]"));
    QVERIFY(plan->field("parallel.replicas.1.micro_batches"));
    auto* recompute = qobject_cast<QComboBox*>(plan->field("parallel.recompute"));
    QVERIFY(recompute);
    QCOMPARE(recompute->currentText(), QString("selective"));
    choose(recompute, "full");
    typed.replace("recompute = \"selective\"", "recompute = \"full\"");
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(w.document()->scenario()->plan->recompute, cost::Recompute::Full);

    // Removed: Run searches the plan.
    click(plan->button("parallel.remove"));
    typed = typed.left(typed.indexOf("[parallel]")).chopped(1);
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    QVERIFY(!w.document()->scenario()->plan);
    QVERIFY(w.command_line().startsWith("hetsim plan "));
    QVERIFY(plan->note_text().contains("searches"));
    QVERIFY(!plan->button("parallel.remove"));

    // Uniform degrees: a value adds [parallel], and the plan is fixed.
    type_into(qobject_cast<QLineEdit*>(plan->field("parallel.tp")), "8");
    choose(qobject_cast<QComboBox*>(plan->field("parallel.zero")), "3");
    if (QTest::currentTestFailed()) return;
    typed += "\n[parallel]\ntp = 8\nzero = 3\n";
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    QVERIFY(w.document()->scenario()->plan);
    QCOMPARE(w.document()->scenario()->plan->zero, 3);
    QVERIFY(w.command_line().startsWith("hetsim simulate "));
    QVERIFY(plan->button("parallel.remove"));
    // A degree the model cannot take: the reader's message, no Run.
    auto* tp = qobject_cast<QLineEdit*>(plan->field("parallel.tp"));
    type_into(tp, "3");
    QVERIFY(!w.document()->scenario());
    QVERIFY(!w.run_action()->isEnabled());
    const Diagnostic d = w.document()->diagnostics().front();
    QVERIFY(QString::fromStdString(d.key).startsWith("parallel"));
    QVERIFY2(plan->messages_text().contains(QString::fromStdString(d.message)), qPrintable(plan->messages_text()));
    type_into(tp, "4");
    QVERIFY(w.document()->scenario());
    QVERIFY(w.run_action()->isEnabled());
    QVERIFY(quiet.errors.isEmpty());
  }
  void undo_and_redo_restore_text_and_forms_exactly() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString file = dir.filePath("small.toml");
    QVERIFY(QFile::copy(test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml"), file));
    QFile::setPermissions(file, QFile::ReadOwner | QFile::WriteOwner);
    MainWindow w;
    Quiet quiet;
    w.set_prompts(quiet.prompts());
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QVERIFY(w.open_file(file));
    ScenarioView* v = w.scenario_view();
    QUndoStack* stack = w.document()->undo_stack();
    std::vector<Shown> steps{shown(w)};
    QVERIFY(!steps[0].modified);
    QVERIFY(!w.undo_action()->isEnabled());
    QVERIFY(!w.redo_action()->isEnabled());

    // Edits of every kind: a field typed, a table added, a choice, typing in the editor, a table
    // removed. Each is one step.
    auto* budget = qobject_cast<QLineEdit*>(v->form()->field("purchase.budget_usd"));
    type_into(budget, "2e6");
    steps.push_back(shown(w));
    QVERIFY(w.undo_action()->text().contains("purchase.budget_usd = 2e6"));
    click(v->form()->button("purchase.candidate.add"));
    steps.push_back(shown(w));
    choose(qobject_cast<QComboBox*>(v->form()->field("purchase.objective")), "time");
    steps.push_back(shown(w));
    v->editor()->setFocus();
    v->editor()->moveCursor(QTextCursor::End);
    QTest::keyClicks(v->editor(), "# a note");
    QTest::keyClick(v->editor(), Qt::Key_Return);
    QTRY_VERIFY(w.document()->text().endsWith("# a note\n"));  // after the pause in typing
    steps.push_back(shown(w));
    click(v->workload_form()->button("cluster.pool.0.remove"));
    steps.push_back(shown(w));
    if (QTest::currentTestFailed()) return;
    QCOMPARE(stack->count(), 5);
    for (std::size_t i = 1; i < steps.size(); ++i) {
      QVERIFY(steps[i].modified);
      QVERIFY(steps[i].text != steps[i - 1].text);
    }
    QVERIFY(w.document()->scenario()->cluster.pools.empty());

    // Typing not yet handed over is the step Ctrl+Z takes back (from the field itself). (A table
    // added or removed lays the form out again: its fields are new.)
    budget = qobject_cast<QLineEdit*>(v->form()->field("purchase.budget_usd"));
    type_into(budget, "");  // the key gone ...
    budget->setFocus();
    QTest::keyClicks(budget, "3e6");  // ... then typed, not yet written
    QVERIFY(!w.document()->text().contains("3e6"));
    QTest::keyClick(budget, Qt::Key_Z, Qt::ControlModifier);
    QVERIFY(w.redo_action()->text().contains("purchase.budget_usd = 3e6"));
    w.undo();  // the key's removal
    QCOMPARE(shown(w), steps[5]);

    // Back, one step at a time, by the keys in the editor and by the menu: text and forms as they
    // were, the last step unmodified (the file as opened).
    v->editor()->setFocus();
    QTest::keyClick(v->editor(), Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(shown(w), steps[4]);
    for (int i = 3; i >= 0; --i) {
      w.undo_action()->trigger();
      QCOMPARE(shown(w), steps[static_cast<std::size_t>(i)]);
    }
    QVERIFY(!w.document()->modified());
    QVERIFY(!w.undo_action()->isEnabled());
    QVERIFY(w.redo_action()->text().contains("purchase.budget_usd = 2e6"));
    // And forward again.
    v->editor()->setFocus();
    QTest::keyClick(v->editor(), Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(shown(w), steps[1]);
    for (std::size_t i = 2; i < steps.size(); ++i) {
      w.redo_action()->trigger();
      QCOMPARE(shown(w), steps[i]);
    }

    // Saved at step 3: unmodified there, modified a step away either way.
    for (int i = 0; i < 2; ++i) w.undo();
    QCOMPARE(shown(w), steps[3]);
    QVERIFY(w.save());
    QVERIFY(!w.document()->modified());
    QCOMPARE(read_all(file), steps[3].text);
    w.redo();
    QVERIFY(w.document()->modified());
    QVERIFY(w.isWindowModified());
    w.undo();
    QVERIFY(!w.document()->modified());
    w.undo();
    QVERIFY(w.document()->modified());
    QCOMPARE(shown(w).text, steps[2].text);
    // A new edit drops what could be redone.
    choose(qobject_cast<QComboBox*>(v->form()->field("purchase.objective")), "cost");
    QVERIFY(!w.redo_action()->isEnabled());
    QVERIFY(w.document()->text().contains("objective = \"cost\""));
    // Another file: nothing to undo.
    QVERIFY(w.open_file(test::source_file("scenarios/mixed-h100-a100.toml")));
    QVERIFY(!w.undo_action()->isEnabled());
    QVERIFY(!w.document()->modified());
    QVERIFY(quiet.errors.isEmpty());
  }
  void each_new_field_sets_what_the_reader_reads() {
    Quiet quiet;
    {
      // The owned pool's node and links, the network's NIC, the kernels, the cost and a candidate.
      MainWindow w;
      w.set_prompts(quiet.prompts());
      QVERIFY(w.open_file(test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml")));
      const QString opened = w.document()->text();
      WorkloadForm* cluster = w.scenario_view()->workload_form();
      PurchaseForm* purchase = w.scenario_view()->form();
      const struct {
        TomlForm* form;
        QString id, value;
      } edits[] = {{cluster, "cluster.pool.0.devices_per_node", "4"},
                   {cluster, "cluster.pool.0.fabric", "pcie4"},
                   {cluster, "cluster.network.nics_per_node", "2"},
                   {cluster, "cluster.network.nic_bandwidth", "200Gbps"},
                   {cluster, "cluster.network.nic_latency", "7us"},
                   {cluster, "training.attention_kernel", "fa2"},
                   {cluster, "training.norm_kernel", "native"},
                   {purchase, "cost.pue", "1.5"},
                   {purchase, "cost.amortisation_years", "5"},
                   {purchase, "purchase.candidate.0.node_step", "2"},
                   {purchase, "purchase.candidate.0.lead_time_days", "30"},
                   {purchase, "purchase.candidate.1.rent_usd_per_hour", "3.5"}};
      // A choice's first item says what the key's absence means.
      QCOMPARE(qobject_cast<QComboBox*>(cluster->field("training.precision"))->currentText(), QString("(bf16)"));
      QCOMPARE(qobject_cast<QComboBox*>(cluster->field("cluster.pool.0.fabric"))->currentText(), QString("(nvlink3)"));
      QCOMPARE(qobject_cast<QComboBox*>(cluster->field("cluster.pool.0.nic"))->currentText(), QString("(ib-hdr-200)"));
      for (const auto& e : edits) {
        set_field(e.form, e.id, e.value);
        if (QTest::currentTestFailed()) return;
        QVERIFY2(w.document()->scenario(), qPrintable(e.id));
      }
      const Scenario& s = *w.document()->scenario();
      const hw::PoolSpec& pool = s.cluster.pools[0];
      QCOMPARE(pool.devices_per_node, 4);
      QCOMPARE(pool.fabric.name, std::string("pcie4"));
      QCOMPARE(pool.nics_per_node, 2);
      QCOMPARE(pool.nic.bandwidth.v, 25e9);
      QCOMPARE(pool.nic.latency.v, 7e-6);
      QCOMPARE(qobject_cast<QComboBox*>(cluster->field("cluster.pool.0.fabric"))->itemText(0), QString("(nvlink3)"));
      QCOMPARE(qobject_cast<QComboBox*>(cluster->field("cluster.pool.0.nic"))->currentText(), QString("(custom-nic)"));
      QCOMPARE(s.training.attention_kernel, workload::AttentionKernel::Fa2);
      QCOMPARE(s.training.norm_kernel, workload::NormKernel::Native);
      QCOMPARE(s.cost.pue, 1.5);
      QCOMPARE(s.cost.amortisation_years, 5.0);
      QCOMPARE(s.purchase->candidates[0].node_step, 2);
      QCOMPARE(s.purchase->candidates[0].lead_time_days, 30.0);
      QCOMPARE(s.purchase->candidates[1].pool.device.price_usd_per_hour, 3.5);
      // Every edit a step: undone, the file as opened.
      QCOMPARE(w.document()->undo_stack()->count(), static_cast<int>(std::size(edits)));
      while (w.undo_action()->isEnabled()) w.undo();
      QCOMPARE(w.document()->text(), opened);
      QVERIFY(!w.document()->modified());
    }
    {
      // The plan's degrees, micro-batch, schedule, virtual stages and sequence parallelism.
      MainWindow w;
      w.set_prompts(quiet.prompts());
      QVERIFY(w.open_file(test::source_file("scenarios/gpt3-175b-a100.toml")));
      ParallelForm* plan = w.scenario_view()->parallel_form();
      QVERIFY(plan->note_text().contains("fixed plan"));
      const auto& p = [&]() -> const plan::Plan& { return *w.document()->scenario()->plan; };
      QCOMPARE(p().virtual_stages, 3);
      set_field(plan, "parallel.virtual_stages", "");
      QCOMPARE(p().virtual_stages, 2);  // interleaved's default
      set_field(plan, "parallel.schedule", "1f1b");
      QCOMPARE(p().schedule, cost::Schedule::OneFOneB);
      QCOMPARE(p().virtual_stages, 1);
      set_field(plan, "parallel.micro_batch", "2");
      QCOMPARE(p().micro_batch, 2);
      set_field(plan, "parallel.pp", "4");
      QVERIFY(!w.document()->scenario());  // tp·pp·dp is no longer every device
      QVERIFY(QString::fromStdString(w.document()->diagnostics().front().key).startsWith("parallel"));
      QVERIFY(!plan->messages_text().isEmpty());
      set_field(plan, "parallel.dp", "32");
      QVERIFY(w.document()->scenario());
      QCOMPARE(p().groups[0].stages.size(), std::size_t(4));
      QCOMPARE(p().groups[0].replicas, 32);
      set_field(plan, "parallel.sequence_parallel", "false");
      QVERIFY(!p().sequence_parallel);
      QVERIFY(w.document()->text().contains("sequence_parallel = false\n"));
    }
    {
      // Expert parallelism on a mixture of experts: over 2 of its 16 replicas; 3 does not divide
      // the 8 experts (the reader's message).
      MainWindow w;
      w.set_prompts(quiet.prompts());
      QVERIFY(w.open_file(test::source_file("scenarios/mixtral-8x7b-mi300x.toml")));
      ParallelForm* plan = w.scenario_view()->parallel_form();
      auto* ep = qobject_cast<QLineEdit*>(plan->field("parallel.ep"));
      QVERIFY(ep);
      QCOMPARE(w.document()->scenario()->plan->ep, 1);
      type_into(ep, "2");
      QVERIFY(w.document()->text().contains("zero = 1\nep = 2\n"));
      QVERIFY(w.document()->scenario());
      QCOMPARE(w.document()->scenario()->plan->ep, 2);
      type_into(ep, "3");
      QVERIFY(!w.document()->scenario());
      QVERIFY(!w.run_action()->isEnabled());
      QVERIFY2(plan->messages_text().contains(QString::fromStdString(w.document()->diagnostics().front().message)),
               qPrintable(plan->messages_text()));
    }
    QVERIFY(quiet.errors.isEmpty());
  }

  void replica_groups_are_edited_copied_and_removed() {
    MainWindow w;
    Quiet quiet;
    w.set_prompts(quiet.prompts());
    QVERIFY(w.open_file(test::source_file("scenarios/mixed-h100-a100.toml")));
    const QString opened = w.document()->text();
    QString typed = opened;
    ParallelForm* plan = w.scenario_view()->parallel_form();
    auto line = [&](const QString& id) { return qobject_cast<QLineEdit*>(plan->field(id)); };
    QVERIFY(line("parallel.replicas.0.count") && line("parallel.replicas.1.micro_batches"));
    QCOMPARE(line("parallel.replicas.0.count")->text(), QString("4"));
    QCOMPARE(line("parallel.replicas.0.micro_batches")->text(), QString("92"));
    QCOMPARE(line("parallel.replicas.1.micro_batches")->text(), QString("36"));
    QCOMPARE(plan->stages_text(0), QString("h100 tp8 L20 | h100 tp8 L20 | h100 tp8 L20 | h100 tp8 L20"));
    QCOMPARE(plan->stages_text(1), QString("a100 tp8 L20 | a100 tp8 L20 | a100 tp8 L20 | a100 tp8 L20"));

    // Micro-batches that do not add up to the batch: the reader's message, no Run.
    type_into(line("parallel.replicas.0.micro_batches"), "100");
    QVERIFY(!w.document()->scenario());
    QVERIFY(!w.run_action()->isEnabled());
    QVERIFY2(plan->messages_text().contains(QString::fromStdString(w.document()->diagnostics().front().message)),
             qPrintable(plan->messages_text()));
    QVERIFY(plan->stages_text(0).contains("errors"));
    type_into(line("parallel.replicas.0.micro_batches"), "92");
    QVERIFY(w.document()->scenario());

    // The A100 group removed; the H100 group then takes the whole batch (micro-batches shared).
    click(plan->button("parallel.replicas.1.remove"));
    typed = typed.left(typed.lastIndexOf("\n[[parallel.replicas]]"));
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    QVERIFY(!w.document()->scenario());  // 4 · 92 is not 512
    type_into(line("parallel.replicas.0.micro_batches"), "");
    typed.replace("micro_batches = 92\n", "");
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(w.document()->scenario()->plan->groups.size(), std::size_t(1));
    QCOMPARE(w.document()->scenario()->plan->groups[0].micro_batches, 128);
    QVERIFY(!plan->field("parallel.replicas.1.count"));

    // Copied: a second group of the same stages; two replicas each fit the H100 pool.
    click(plan->button("parallel.replicas.0.copy"));
    const QString body = typed.mid(typed.lastIndexOf("[[parallel.replicas]]\n") + 22).chopped(1);
    typed += "\n[[parallel.replicas]]\n" + body + "\n";
    same_as_typed(w, typed);
    if (QTest::currentTestFailed()) return;
    QVERIFY(!w.document()->scenario());  // 8 replicas of 32 H100s: more than the pool has
    type_into(line("parallel.replicas.0.count"), "2");
    type_into(line("parallel.replicas.1.count"), "2");
    QVERIFY(w.document()->scenario());
    QCOMPARE(w.document()->scenario()->plan->groups.size(), std::size_t(2));
    QCOMPARE(plan->stages_text(1), plan->stages_text(0));
    QCOMPARE(w.document()->scenario()->plan->groups[1].replicas, 2);

    // All of it undone: the file as opened.
    while (w.undo_action()->isEnabled()) w.undo();
    QCOMPARE(w.document()->text(), opened);
    QVERIFY(quiet.errors.isEmpty());
  }
};

HETSIM_GUI_SUITE(FormTest);

}  // namespace
}  // namespace hetsim::gui

#include "form_test.moc"
