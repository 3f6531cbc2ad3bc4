#include "gui/views/toml_form.hpp"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "gui/app/document.hpp"
#include "gui/qt_models/diagnostics_model.hpp"
#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

namespace {
QString unquote(const QString& v) {
  return v.size() >= 2 && v.startsWith('"') && v.endsWith('"') ? v.mid(1, v.size() - 2) : v;
}
QString field_id(const TomlTable& table, const QString& key) {
  return table.name + (table.array ? "." + QString::number(table.index) : QString()) + "." + key;
}
}  // namespace

TomlForm::TomlForm(Document* doc, QStringList prefixes, QWidget* parent)
    : QWidget(parent), doc_(doc), prefixes_(std::move(prefixes)) {
  pause_ = new QTimer(this);
  pause_->setSingleShot(true);
  pause_->setInterval(400);
  connect(pause_, &QTimer::timeout, this, &TomlForm::apply_pending);
  messages_ = new QLabel(this);
  messages_->setWordWrap(true);
  messages_->setStyleSheet("color: #b02020;");
  messages_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(messages_);
  layout->addStretch(1);
  connect(doc_, &Document::reread, this, &TomlForm::on_reread);
}

void TomlForm::on_reread() {
  if (writing_) {
    refresh();
    return;
  }
  rebuild();
}

QWidget* TomlForm::field(const QString& id) const {
  for (const Field& f : fields_)
    if (f.id == id) return f.widget;
  return nullptr;
}

QString TomlForm::messages_text() const { return messages_->text(); }

void TomlForm::clear_fields() {
  delete body_;
  body_ = nullptr;
  fields_.clear();
  pending_ = -1;
}

QLineEdit* TomlForm::add_line(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                              const QString& placeholder, const QString& tip) {
  auto* edit = new QLineEdit(form->parentWidget());
  edit->setPlaceholderText(placeholder);
  edit->setToolTip(tip);
  form->addRow(label, edit);
  fields_.push_back({field_id(table, key), table, key, edit, false});
  const int i = static_cast<int>(fields_.size()) - 1;
  connect(edit, &QLineEdit::textEdited, this, [this, i] {
    if (pending_ >= 0 && pending_ != i) apply_pending();
    pending_ = i;
    pause_->start();
  });
  connect(edit, &QLineEdit::editingFinished, this, &TomlForm::apply_pending);
  return edit;
}

QComboBox* TomlForm::add_choice(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                                const QStringList& choices, const QString& tip) {
  auto* box = new QComboBox(form->parentWidget());
  box->addItem(QString());  // the key absent: the reader's default
  box->addItems(choices);
  box->setToolTip(tip);
  form->addRow(label, box);
  fields_.push_back({field_id(table, key), table, key, box, true});
  const int i = static_cast<int>(fields_.size()) - 1;
  connect(box, &QComboBox::activated, this, [this, i] {
    apply_pending();
    write(fields_[static_cast<std::size_t>(i)]);
  });
  return box;
}

void TomlForm::refresh() {
  // The fields show the text's values (as typed, unless being typed in).
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    if (f.widget->hasFocus() || static_cast<int>(i) == pending_) continue;
    const QString v = toml_value(doc_->text(), f.table, f.key).value_or(QString());
    if (auto* e = qobject_cast<QLineEdit*>(f.widget)) {
      if (e->text() != v) e->setText(v);
    } else if (auto* b = qobject_cast<QComboBox*>(f.widget)) {
      const int at = b->findText(unquote(v));
      b->setCurrentIndex(at >= 0 ? at : 0);
    }
  }
  QString m;
  for (const Diagnostic& d : doc_->diagnostics()) {
    const QString key = qs(d.key);
    // Syntax errors have no key: a value typed here may be the cause, so every form shows them.
    if (!key.isEmpty() &&
        std::none_of(prefixes_.begin(), prefixes_.end(), [&](const QString& p) { return key.startsWith(p); }))
      continue;
    m += (m.isEmpty() ? "" : "\n") + where_text(d.where) + ": " + qs(d.message) + (key.isEmpty() ? "" : " [" + key + "]") +
         (d.hint.empty() ? QString() : " (" + qs(d.hint) + ")");
  }
  messages_->setText(m);
  messages_->setVisible(!m.isEmpty());
  refreshed();
}

void TomlForm::apply_pending() {
  pause_->stop();
  if (pending_ < 0) return;
  const int i = pending_;
  pending_ = -1;
  write(fields_[static_cast<std::size_t>(i)]);
}

void TomlForm::write(const Field& f) {
  QString value;
  if (auto* e = qobject_cast<QLineEdit*>(f.widget)) value = e->text();
  if (auto* b = qobject_cast<QComboBox*>(f.widget))
    value = b->currentText().isEmpty() ? QString() : '"' + b->currentText() + '"';
  emit about_to_edit();
  const auto text = set_toml_value(doc_->text(), f.table, f.key, value);
  if (!text) return;
  writing_ = true;
  doc_->edit_text(*text);
  writing_ = false;
}

}  // namespace hetsim::gui
