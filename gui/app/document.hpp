#pragma once
// The document: a scenario TOML, the same file the CLI reads, as text (what the editor shows and
// Save writes) and as the Scenario the reader makes of it, or the reader's diagnostics. Every
// change of the text reads it again through api::load_text, named by the file's path so that
// messages say file:line:col and relative includes resolve as the CLI resolves them. Every edit,
// typed in the editor or made by a form, is a QUndoCommand on the document's undo stack; the
// document is modified exactly when the stack is not at its clean (opened or saved) state.

#include <QObject>
#include <QString>

#include <optional>

#include "models/base/result.hpp"
#include "sim/scenario/scenario.hpp"

class QUndoStack;

namespace hetsim::gui {

class Document : public QObject {
  Q_OBJECT
 public:
  explicit Document(QObject* parent = nullptr);

  /// Reads the file at `path` into the document (unmodified). On failure the document is
  /// unchanged and `error` says why.
  bool open(const QString& path, QString* error);
  /// Writes the text to path() (atomically: QSaveFile), or to `path` for save_as, which then
  /// becomes the document's path. On failure `error` says why and nothing is modified.
  bool save(QString* error);
  bool save_as(const QString& path, QString* error);
  /// An edit typed in the editor: the new text, read again; one step on the undo stack (the
  /// editor has the text already).
  void set_text(const QString& text);
  /// An edit made elsewhere than in the editor (a form): as set_text, and editors take the text
  /// (text_edited). `what` names the undo step ("purchase.budget_usd = 2e6").
  void edit_text(const QString& text, const QString& what = {});
  /// The edits, for Edit > Undo and Redo: undoing or redoing one sets the text it left (editors
  /// take it: text_edited) and reads it again.
  [[nodiscard]] QUndoStack* undo_stack() const { return undo_; }

  [[nodiscard]] const QString& text() const { return text_; }
  [[nodiscard]] const QString& path() const { return path_; }
  [[nodiscard]] bool modified() const;
  /// The file name for titles: "llama3-70b.toml", or "untitled.toml".
  [[nodiscard]] QString display_name() const;

  /// The scenario read from text(), when it reads without errors.
  [[nodiscard]] const std::optional<Scenario>& scenario() const { return scenario_; }
  /// The reader's diagnostics (empty when scenario() is set).
  [[nodiscard]] const Diagnostics& diagnostics() const { return diagnostics_; }
  /// A scenario with [purchase]: `hetsim buy` answers it. Read like the CLI's buy, without
  /// [parallel]; any other scenario is read with it.
  [[nodiscard]] bool is_purchase() const { return scenario_ && scenario_->purchase.has_value(); }

 signals:
  /// open(): the text was replaced as a whole (editors load it).
  void text_replaced();
  /// edit_text(): the text changed outside the editor (editors take it, as an undoable edit).
  void text_edited();
  /// scenario() and diagnostics() were read again.
  void reread();
  void modified_changed(bool modified);
  void path_changed(const QString& path);

 private:
  class Edit;
  void read();
  /// Sets the text (an edit's do or undo) and reads it; `tell` editors (text_edited).
  void replace_text(const QString& text, bool tell);

  QString path_;
  QString text_;
  QUndoStack* undo_ = nullptr;
  std::optional<Scenario> scenario_;
  Diagnostics diagnostics_;
};

}  // namespace hetsim::gui
