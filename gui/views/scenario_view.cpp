#include "gui/views/scenario_view.hpp"

#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QTableView>
#include <QTextBlock>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/app/document.hpp"
#include "gui/qt_models/diagnostics_model.hpp"
#include "gui/qt_models/format.hpp"
#include "gui/views/parallel_form.hpp"
#include "gui/views/purchase_form.hpp"
#include "gui/views/workload_form.hpp"
#include "gui/widgets/undo_keys.hpp"

namespace hetsim::gui {

ScenarioView::ScenarioView(Document* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  editor_ = new QPlainTextEdit(this);
  editor_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  editor_->setLineWrapMode(QPlainTextEdit::NoWrap);
  editor_->setTabChangesFocus(false);
  // Its edits are the document's undo steps (Edit > Undo), not the editor's own.
  editor_->setUndoRedoEnabled(false);
  route_undo_keys(editor_);
  verdict_ = new QLabel(this);
  verdict_->setWordWrap(true);
  verdict_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  diagnostics_ = new DiagnosticsModel(this);
  table_ = new QTableView(this);
  table_->setModel(diagnostics_);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setWordWrap(true);
  pause_ = new QTimer(this);
  pause_->setSingleShot(true);
  pause_->setInterval(400);

  // Beside the text: the workload and owned cluster, then the plan or the purchase, as forms.
  auto* forms = new QWidget(this);
  auto* forms_layout = new QVBoxLayout(forms);
  forms_layout->setContentsMargins(0, 0, 0, 0);
  workload_form_ = new WorkloadForm(doc_, forms);
  parallel_form_ = new ParallelForm(doc_, forms);
  form_ = new PurchaseForm(doc_, forms);
  forms_layout->addWidget(workload_form_);
  forms_layout->addWidget(parallel_form_);
  forms_layout->addWidget(form_);
  forms_layout->addStretch(1);
  auto* form_scroll = new QScrollArea(this);
  form_scroll->setWidget(forms);
  form_scroll->setWidgetResizable(true);
  form_scroll->setMinimumWidth(300);
  auto* top = new QSplitter(Qt::Horizontal, this);
  top->addWidget(editor_);
  top->addWidget(form_scroll);
  top->setStretchFactor(0, 3);
  top->setStretchFactor(1, 1);
  top->setSizes({880, 360});
  connect(doc_, &Document::reread, form_scroll, [this, form_scroll] {
    form_scroll->setVisible(form_->isVisibleTo(form_scroll) || workload_form_->isVisibleTo(form_scroll));
  });
  form_scroll->setVisible(false);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(top);
  split->addWidget(table_);  // hidden without diagnostics: the text takes the room
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  split->setSizes({540, 220});
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split, 1);
  layout->addWidget(verdict_);

  connect(editor_, &QPlainTextEdit::textChanged, this, [this] {
    if (!loading_) pause_->start();
  });
  connect(pause_, &QTimer::timeout, this, &ScenarioView::apply_edit);
  connect(doc_, &Document::text_replaced, this, &ScenarioView::load_text);
  connect(doc_, &Document::text_edited, this, &ScenarioView::take_edit);
  for (TomlForm* f : std::initializer_list<TomlForm*>{form_, workload_form_, parallel_form_})
    connect(f, &TomlForm::about_to_edit, this, [this] {
      if (pause_->isActive()) apply_edit();
    });
  connect(doc_, &Document::reread, this, &ScenarioView::show_verdict);
  connect(table_, &QTableView::activated, this, [this](const QModelIndex& at) {
    jump_to(at.data(DiagnosticsModel::kLineRole).toInt(), at.data(DiagnosticsModel::kColumnRole).toInt());
  });
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& at) {
    jump_to(at.data(DiagnosticsModel::kLineRole).toInt(), at.data(DiagnosticsModel::kColumnRole).toInt());
  });
  load_text();
  show_verdict();
}

void ScenarioView::apply_edit() {
  pause_->stop();
  doc_->set_text(editor_->toPlainText());
}

void ScenarioView::apply_pending() {
  apply_edit();
  for (TomlForm* f : std::initializer_list<TomlForm*>{workload_form_, parallel_form_, form_}) f->apply_pending();
}

void ScenarioView::take_edit() {
  // A form's edit, an undo or a redo: the editor shows the new text, the cursor where it first
  // differs from the old, the view where it was.
  pause_->stop();
  const QString old = editor_->toPlainText();
  const QString& now = doc_->text();
  qsizetype at = 0;
  while (at < old.size() && at < now.size() && old[at] == now[at]) ++at;
  const int scroll = editor_->verticalScrollBar()->value();
  loading_ = true;
  editor_->setPlainText(now);
  loading_ = false;
  QTextCursor c(editor_->document());
  c.setPosition(static_cast<int>(at));
  editor_->setTextCursor(c);
  editor_->verticalScrollBar()->setValue(scroll);
  editor_->ensureCursorVisible();
}

void ScenarioView::load_text() {
  pause_->stop();
  loading_ = true;
  editor_->setPlainText(doc_->text());
  loading_ = false;
}

void ScenarioView::jump_to(int line, int col) {
  if (line <= 0) return;
  const QTextBlock block = editor_->document()->findBlockByLineNumber(line - 1);
  if (!block.isValid()) return;
  QTextCursor c(block);
  if (col > 1) c.movePosition(QTextCursor::Right, QTextCursor::MoveAnchor, std::min(col - 1, block.length() - 1));
  editor_->setTextCursor(c);
  editor_->centerCursor();
  editor_->setFocus();
}

void ScenarioView::show_verdict() {
  diagnostics_->set_diagnostics(doc_->diagnostics());
  // The lines the reader complains about, tinted.
  QList<QTextEdit::ExtraSelection> marks;
  for (const Diagnostic& d : doc_->diagnostics()) {
    const QTextBlock block = editor_->document()->findBlockByLineNumber(static_cast<int>(d.where.line) - 1);
    if (d.where.line == 0 || !block.isValid()) continue;
    QTextEdit::ExtraSelection mark;
    mark.cursor = QTextCursor(block);
    mark.format.setBackground(QColor(0xff, 0xe0, 0xe0));
    mark.format.setProperty(QTextFormat::FullWidthSelection, true);
    marks.push_back(mark);
  }
  editor_->setExtraSelections(marks);
  table_->setVisible(!doc_->diagnostics().empty());
  table_->resizeColumnsToContents();
  if (!doc_->diagnostics().empty()) {
    verdict_->setText(tr("%n error(s): the scenario cannot run until they are fixed (click one to go to it).", "",
                         static_cast<int>(doc_->diagnostics().size())));
    verdict_->setStyleSheet("color: #b02020;");
    return;
  }
  verdict_->setStyleSheet({});
  const auto& s = doc_->scenario();
  if (!s) {
    verdict_->setText(tr("Open a scenario file (File > Open) or type one here."));
  } else if (s->purchase) {
    verdict_->setText(tr("Purchase scenario \"%1\": Run searches the compositions of %n candidate(s) "
                         "(hetsim buy).", "", static_cast<int>(s->purchase->candidates.size()))
                          .arg(qs(s->name)));
  } else if (s->plan) {
    verdict_->setText(tr("Scenario \"%1\" with a fixed plan ([parallel]): Run estimates it and simulates a step "
                         "(hetsim simulate).").arg(qs(s->name)));
  } else {
    verdict_->setText(tr("Scenario \"%1\" without [parallel]: Run searches the best plan (hetsim plan), then "
                         "simulates its step.").arg(qs(s->name)));
  }
}

QString ScenarioView::verdict_text() const { return verdict_->text(); }

}  // namespace hetsim::gui
