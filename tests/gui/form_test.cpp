// The purchase form: its TOML edits (app/toml_patch) keep the file the user's, and each field
// typed is written into the text, read by the scenario reader, and its messages shown.
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
    Prompts p;
    p.unsaved = [](QWidget*, const QString&) { return QMessageBox::Discard; };
    p.error = [](QWidget*, const QString&, const QString& m) { QFAIL(qPrintable(m)); };
    w.set_prompts(p);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.open_file(test::source_file("tests/gui/data/small-purchase.toml")));
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
};

HETSIM_GUI_SUITE(FormTest);

}  // namespace
}  // namespace hetsim::gui

#include "form_test.moc"
