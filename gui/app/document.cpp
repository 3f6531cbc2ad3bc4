#include "gui/app/document.hpp"

#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QUndoCommand>
#include <QUndoStack>

#include "sim/api/api.hpp"

namespace hetsim::gui {

namespace {
// The CLI refuses larger scenario files too (sim/io/input_file); a GUI should not hang on one.
constexpr qint64 kMaxScenarioBytes = 16 << 20;
// Each step keeps the text before and after it: a bound on what a long session holds.
constexpr int kUndoSteps = 1000;
}  // namespace

// One edit of the text: redo sets the text after it, undo the text before it. The first redo of
// an edit typed in the editor leaves the editor alone (it shows that text already).
class Document::Edit : public QUndoCommand {
 public:
  Edit(Document* doc, QString before, QString after, bool from_editor, const QString& what)
      : doc_(doc), before_(std::move(before)), after_(std::move(after)), quiet_(from_editor) {
    setText(what);
  }
  void redo() override {
    doc_->replace_text(after_, !quiet_);
    quiet_ = false;
  }
  void undo() override { doc_->replace_text(before_, true); }

 private:
  Document* doc_;
  QString before_, after_;
  bool quiet_;
};

Document::Document(QObject* parent) : QObject(parent) {
  undo_ = new QUndoStack(this);
  undo_->setUndoLimit(kUndoSteps);
  connect(undo_, &QUndoStack::cleanChanged, this, [this](bool clean) { emit modified_changed(!clean); });
  read();
}

bool Document::modified() const { return !undo_->isClean(); }

QString Document::display_name() const {
  return path_.isEmpty() ? QStringLiteral("untitled.toml") : QFileInfo(path_).fileName();
}

bool Document::open(const QString& path, QString* error) {
  QFile f(path);
  if (QFileInfo(path).isDir()) {
    if (error) *error = tr("%1 is a folder, not a scenario file").arg(path);
    return false;
  }
  if (!f.open(QIODevice::ReadOnly)) {
    if (error) *error = tr("cannot open %1: %2").arg(path, f.errorString());
    return false;
  }
  if (f.size() > kMaxScenarioBytes) {
    if (error) *error = tr("%1 is %2 bytes, larger than a scenario can be").arg(path).arg(f.size());
    return false;
  }
  const QByteArray bytes = f.readAll();
  path_ = path;
  text_ = QString::fromUtf8(bytes);
  emit path_changed(path_);
  undo_->clear();  // another file: nothing to undo, and clean
  emit text_replaced();
  read();
  return true;
}

bool Document::save(QString* error) {
  if (path_.isEmpty()) {
    if (error) *error = tr("the document has no file name yet: use Save As");
    return false;
  }
  return save_as(path_, error);
}

bool Document::save_as(const QString& path, QString* error) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) {
    if (error) *error = tr("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  const QByteArray bytes = text_.toUtf8();
  if (f.write(bytes) != bytes.size() || !f.commit()) {
    if (error) *error = tr("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  const bool renamed = path != path_;
  path_ = path;
  if (renamed) {
    emit path_changed(path_);
    read();  // messages and relative includes follow the new name
  }
  undo_->setClean();
  return true;
}

void Document::set_text(const QString& text) {
  if (text == text_) return;
  undo_->push(new Edit(this, text_, text, true, tr("typing")));
}

void Document::edit_text(const QString& text, const QString& what) {
  if (text == text_) return;
  undo_->push(new Edit(this, text_, text, false, what.isEmpty() ? tr("edit") : what));
}

void Document::replace_text(const QString& text, bool tell) {
  text_ = text;
  if (tell) emit text_edited();
  read();
}

void Document::read() {
  const std::string name = path_.isEmpty() ? std::string("untitled.toml") : path_.toStdString();
  const std::string text = text_.toStdString();
  scenario_.reset();
  diagnostics_.clear();
  if (text_.trimmed().isEmpty() && path_.isEmpty()) {  // a new window: nothing to read yet
    emit reread();
    return;
  }
  // As the CLI: `buy` reads without [parallel] (its plans are searched), the rest with it.
  auto without_plan = api::load_text(text, name, {.plan = false});
  if (without_plan && without_plan->purchase) {
    scenario_ = std::move(*without_plan);
  } else if (!without_plan) {
    diagnostics_ = without_plan.errors();
  } else {
    auto with_plan = api::load_text(text, name);
    if (with_plan)
      scenario_ = std::move(*with_plan);
    else
      diagnostics_ = with_plan.errors();
  }
  emit reread();
}

}  // namespace hetsim::gui
