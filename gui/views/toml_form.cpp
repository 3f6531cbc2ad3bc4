#include "gui/views/toml_form.hpp"

#include <QComboBox>
#include <QPushButton>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "gui/app/document.hpp"
#include "gui/qt_models/diagnostics_model.hpp"
#include "gui/qt_models/format.hpp"
#include "gui/widgets/undo_keys.hpp"

namespace hetsim::gui {

namespace {
QString unquote(const QString& v) {
  if (v.size() < 2 || !v.startsWith('"') || !v.endsWith('"')) return v;
  QString out;
  const QString inner = v.mid(1, v.size() - 2);
  for (qsizetype i = 0; i < inner.size(); ++i) out += inner[i] == '\\' && i + 1 < inner.size() ? inner[++i] : inner[i];
  return out;
}
QString quote(const QString& v) {
  QString out = v;
  return '"' + out.replace('\\', "\\\\").replace('"', "\\\"") + '"';
}
QString field_id(const TomlTable& table, const QString& key) {
  return table.name + (table.array ? "." + QString::number(table.index) : QString()) + "." + key;
}
}  // namespace

QString form_number(double v) { return v > 0 ? QString::number(v, 'g', 6) : QString(); }

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
  connect(doc_, &Document::reread, this, &TomlForm::rebuild);
}

bool TomlForm::shown() const { return !doc_->text().trimmed().isEmpty(); }

void TomlForm::rebuild() {
  if (!shown()) {
    clear_fields();
    laid_out_ = false;
    setVisible(false);
    return;
  }
  const QString key = layout_key();
  if (!laid_out_ || key != layout_key_) {
    clear_fields();
    layout_key_ = key;
    laid_out_ = true;
    body_ = new QWidget(this);
    auto* v = new QVBoxLayout(body_);
    v->setContentsMargins(0, 0, 0, 0);
    lay_out();
    static_cast<QVBoxLayout*>(layout())->insertWidget(0, body_);
  }
  setVisible(true);
  refresh();
}

QWidget* TomlForm::field(const QString& id) const {
  for (const Field& f : fields_)
    if (f.id == id) return f.widget;
  return nullptr;
}

QStringList TomlForm::field_ids() const {
  QStringList out;
  for (const Field& f : fields_) out << f.id;
  return out;
}

QAbstractButton* TomlForm::button(const QString& id) const {
  for (const auto& [name, b] : buttons_)
    if (name == id) return b;
  return nullptr;
}

QString TomlForm::messages_text() const { return messages_->text(); }

void TomlForm::clear_fields() {
  // Later: a button of the old layout may be what asked for the new one.
  if (body_) {
    body_->hide();
    body_->deleteLater();
  }
  body_ = nullptr;
  fields_.clear();
  buttons_.clear();
  pending_ = -1;
}

QAbstractButton* TomlForm::add_button(QWidget* parent, const QString& id, const QString& text,
                                      std::function<std::optional<QString>(const QString&)> change,
                                      const QString& what) {
  auto* b = new QPushButton(text, parent);
  buttons_.emplace_back(id, b);
  connect(b, &QPushButton::clicked, this, [this, change = std::move(change), what] { edit(change, what); });
  return b;
}

void TomlForm::edit(const std::function<std::optional<QString>(const QString&)>& change, const QString& what) {
  apply_pending();
  emit about_to_edit();
  const auto text = change(doc_->text());
  if (!text) return;
  writing_ = true;
  doc_->edit_text(*text, what);
  writing_ = false;
}

QLineEdit* TomlForm::add_line(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                              const QString& placeholder, const QString& tip, bool quoted) {
  auto* edit = new QLineEdit(form->parentWidget());
  edit->setPlaceholderText(placeholder);
  edit->setToolTip(tip);
  route_undo_keys(edit);
  form->addRow(label, edit);
  fields_.push_back({field_id(table, key), table, key, edit, quoted});
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
                                const QStringList& choices, const QString& tip, const QString& absent,
                                bool quoted) {
  auto* box = new QComboBox(form->parentWidget());
  box->addItem(QString());  // the key absent: the reader's default
  set_absent_text(box, absent);
  box->addItems(choices);
  box->setToolTip(tip);
  form->addRow(label, box);
  fields_.push_back({field_id(table, key), table, key, box, quoted});
  connect(box, &QComboBox::activated, this, [this, box] {
    apply_pending();
    for (const Field& f : fields_)
      if (f.widget == box) {
        write(f);
        return;
      }
  });
  return box;
}

void TomlForm::set_absent_text(QComboBox* box, const QString& absent) {
  box->setItemText(0, absent.isEmpty() ? QString() : "(" + absent + ")");
}

void TomlForm::refresh() {
  // The fields show the text's values, except the one being typed in (and, after the form's own
  // write, the one with the focus: the text holds what it shows).
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    if (static_cast<int>(i) == pending_ || (writing_ && f.widget->hasFocus())) continue;
    const QString v = toml_value(doc_->text(), f.table, f.key).value_or(QString());
    if (auto* e = qobject_cast<QLineEdit*>(f.widget)) {
      const QString shown = f.quoted ? unquote(v) : v;
      if (e->text() != shown) e->setText(shown);
    } else if (auto* b = qobject_cast<QComboBox*>(f.widget)) {
      const QString shown = f.quoted ? unquote(v) : v;
      int at = shown.isEmpty() ? 0 : b->findText(shown);
      if (at <= 0 && !shown.isEmpty()) {  // a value the choices lack (a device of the file's own catalogue)
        b->addItem(shown);
        at = b->count() - 1;
      }
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

void TomlForm::write(Field f) {  // a copy: the edit may lay the form out again
  QString value;
  if (auto* e = qobject_cast<QLineEdit*>(f.widget)) value = e->text().trimmed();
  if (auto* b = qobject_cast<QComboBox*>(f.widget)) value = b->currentIndex() > 0 ? b->currentText() : QString();
  if (f.quoted && !value.isEmpty()) value = quote(value);
  emit about_to_edit();
  const auto text = set_toml_value(doc_->text(), f.table, f.key, value);
  if (!text) return;
  const QString name = f.table.name + (f.table.array ? QString("[%1]").arg(f.table.index) : QString()) + "." + f.key;
  writing_ = true;
  doc_->edit_text(*text, value.trimmed().isEmpty() ? tr("remove %1").arg(name) : tr("%1 = %2").arg(name, value.trimmed()));
  writing_ = false;
}

}  // namespace hetsim::gui
