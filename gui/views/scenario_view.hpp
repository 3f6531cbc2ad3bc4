#pragma once
// The scenario as text (the TOML the CLI reads) with the reader's verdict under it: a line that
// says what the scenario asks (a purchase search, a fixed plan, a plan search), or the reader's
// diagnostics listed by file:line:col and key; clicking one puts the cursor on the field. Beside
// the text, its workload and owned cluster as a form (views/workload_form) and, for a purchase
// scenario, its purchase fields (views/purchase_form), for any other its plan
// (views/parallel_form).

#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QTableView;
class QTimer;

namespace hetsim::gui {

class Document;
class DiagnosticsModel;
class ParallelForm;
class PurchaseForm;
class WorkloadForm;

class ScenarioView : public QWidget {
  Q_OBJECT
 public:
  ScenarioView(Document* doc, QWidget* parent = nullptr);

  /// Hands the editor's text to the document now (edits are otherwise handed over after a
  /// short pause in typing).
  void apply_edit();
  /// Hands every pending edit to the document now: the editor's and the forms' (before an undo).
  void apply_pending();
  /// Puts the cursor at `line`:`col` (1-based; col 0 = the line's start) and shows it.
  void jump_to(int line, int col);

  [[nodiscard]] QPlainTextEdit* editor() const { return editor_; }
  [[nodiscard]] QTableView* diagnostics_table() const { return table_; }
  [[nodiscard]] DiagnosticsModel* diagnostics_model() const { return diagnostics_; }
  [[nodiscard]] QString verdict_text() const;
  [[nodiscard]] PurchaseForm* form() const { return form_; }
  /// The workload and owned cluster's form (every scenario).
  [[nodiscard]] WorkloadForm* workload_form() const { return workload_form_; }
  /// The fixed plan's form (scenarios without [purchase]).
  [[nodiscard]] ParallelForm* parallel_form() const { return parallel_form_; }

 private:
  void load_text();
  void take_edit();
  void show_verdict();

  Document* doc_;
  QPlainTextEdit* editor_ = nullptr;
  QLabel* verdict_ = nullptr;
  DiagnosticsModel* diagnostics_ = nullptr;
  QTableView* table_ = nullptr;
  QTimer* pause_ = nullptr;
  PurchaseForm* form_ = nullptr;
  WorkloadForm* workload_form_ = nullptr;
  ParallelForm* parallel_form_ = nullptr;
  bool loading_ = false;
};

}  // namespace hetsim::gui
