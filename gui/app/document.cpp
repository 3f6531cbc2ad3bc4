#include "gui/app/document.hpp"

#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include "sim/api/api.hpp"

namespace hetsim::gui {

namespace {
// The CLI refuses larger scenario files too (sim/io/input_file); a GUI should not hang on one.
constexpr qint64 kMaxScenarioBytes = 16 << 20;
}  // namespace

Document::Document(QObject* parent) : QObject(parent) { read(); }

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
  set_modified(false);
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
  set_modified(false);
  return true;
}

void Document::set_text(const QString& text) {
  if (text == text_) return;
  text_ = text;
  set_modified(true);
  read();
}

void Document::edit_text(const QString& text, const QString& /*what*/) {
  if (text == text_) return;
  text_ = text;
  set_modified(true);
  emit text_edited();
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

void Document::set_modified(bool m) {
  if (m == modified_) return;
  modified_ = m;
  emit modified_changed(m);
}

}  // namespace hetsim::gui
