// The forms (purchase; workload and owned cluster): their TOML edits (app/toml_patch) keep the
// file the user's, and each field typed is written into the text, read by the scenario reader,
// and its messages shown; a bad value disables Run.
#include <QAction>
#include <QComboBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTest>

#include "gui/app/document.hpp"
#include "gui/app/main_window.hpp"
#include "gui/app/toml_patch.hpp"
#include "gui/views/purchase_form.hpp"
#include "gui/views/scenario_view.hpp"
#include "gui/views/workload_form.hpp"
#include "sim/api/api.hpp"
#include "tests/gui/gui_test.hpp"

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
    QVERIFY(w.open_file(test::source_file("tests/gui/data/small-purchase.toml")));
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

    // The editor's undo takes back the form's last edit.
    w.scenario_view()->editor()->undo();
    w.scenario_view()->apply_edit();
    QVERIFY(w.document()->text().contains("objective = \"pareto\""));
    QTRY_COMPARE(objective->currentText(), QString("pareto"));

    // Not a purchase scenario: no form.
    QVERIFY(w.open_file(test::source_file("scenarios/mixed-h100-a100.toml")));
    QVERIFY(!form->isVisibleTo(&w));
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
    QVERIFY(form->messages_text().contains(QString("small-purchase.toml:%1:").arg(d.where.line)));
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
    QVERIFY(form->messages_text().contains(QString("small-purchase.toml:%1:").arg(bad.where.line)));
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
};

HETSIM_GUI_SUITE(FormTest);

}  // namespace
}  // namespace hetsim::gui

#include "form_test.moc"
