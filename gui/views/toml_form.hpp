#pragma once
// A form over some tables of the scenario's TOML text: each field writes its `key = value` line
// into the text (app/toml_patch) as it is typed, after a short pause or on Enter, and emptying a
// field removes the line; buttons add or remove whole tables. Every change is one edit of the
// document (an undoable step). The reader then checks the file as the CLI would, and its messages
// about the form's tables (file:line:col, key, message, hint) show under the form. Fields follow
// the text when it changes elsewhere. Subclasses lay out their fields in rebuild().

#include <QString>
#include <QStringList>
#include <QWidget>

#include <functional>
#include <optional>
#include <vector>

#include "gui/app/toml_patch.hpp"

class QAbstractButton;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QTimer;

namespace hetsim::gui {

class Document;

/// A positive number as a form shows it (six significant digits); empty for 0 or less.
QString form_number(double v);

class TomlForm : public QWidget {
  Q_OBJECT
 public:
  /// `prefixes`: the keys whose messages the form shows ("purchase", "cost").
  TomlForm(Document* doc, QStringList prefixes, QWidget* parent = nullptr);

  /// A field by its key: "purchase.budget_usd", "cluster.pool.0.device".
  [[nodiscard]] QWidget* field(const QString& id) const;
  /// Every field's id, in the form's order.
  [[nodiscard]] QStringList field_ids() const;
  /// A button by its id: "cluster.pool.add", "cluster.pool.1.remove".
  [[nodiscard]] QAbstractButton* button(const QString& id) const;
  /// The reader's messages about the form's tables, as shown.
  [[nodiscard]] QString messages_text() const;
  /// Writes pending typing into the document now (otherwise after a short pause).
  void apply_pending();

 signals:
  /// Before the form changes the document's text (the editor hands over its own edits first).
  void about_to_edit();

 protected:
  /// Called on each reading of the document: lays the fields out again when the tables they
  /// stand for changed (layout_key() differs), then refresh().
  void rebuild();
  /// What the layout depends on (how many pools, ...): a change lays the form out again.
  [[nodiscard]] virtual QString layout_key() const = 0;
  /// Lays the fields out in body_ (after clear_fields(); body_ is new and empty, in a QVBoxLayout).
  virtual void lay_out() = 0;
  /// Whether the form shows at all for the document's text.
  [[nodiscard]] virtual bool shown() const;
  /// Shows the text's values in the fields and the reader's messages.
  void refresh();
  /// Forgets every field (before a new layout).
  void clear_fields();
  /// A line edit for `key` of `table`; `placeholder` shows when the key is absent. A `quoted`
  /// one holds a string (a name, a quantity with its unit) and shows and takes it unquoted.
  QLineEdit* add_line(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                      const QString& placeholder, const QString& tip, bool quoted = false);
  /// A choice of values for `key` (quoted strings, or bare words such as true/false when not
  /// `quoted`); its first item removes the key and shows `absent` in brackets (what the reader
  /// takes then: "(bf16)"). A value in the text that is not among the choices is added to them.
  QComboBox* add_choice(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                        const QStringList& choices, const QString& tip, const QString& absent = {},
                        bool quoted = true);
  /// What choice `box`'s first item says the key's absence means ("(nvlink3)").
  static void set_absent_text(QComboBox* box, const QString& absent);
  /// A button `id` that makes one edit of the text: `change` gets the text (pending typing
  /// written first) and returns the new one (nullopt: no change); `what` names the undo step.
  QAbstractButton* add_button(QWidget* parent, const QString& id, const QString& text,
                              std::function<std::optional<QString>(const QString&)> change, const QString& what);
  /// One edit of the document's text from the form, as add_button's.
  void edit(const std::function<std::optional<QString>(const QString&)>& change, const QString& what);
  /// After refresh() (for what the form shows beside the values).
  virtual void refreshed() {}

  Document* doc_;
  QWidget* body_ = nullptr;  ///< the subclass' layout, above the messages

 private:
  struct Field {
    QString id;
    TomlTable table;
    QString key;
    QWidget* widget = nullptr;
    bool quoted = false;  ///< a string value, shown unquoted
  };
  void write(Field f);

  QStringList prefixes_;
  QLabel* messages_ = nullptr;
  QTimer* pause_ = nullptr;
  std::vector<Field> fields_;
  std::vector<std::pair<QString, QAbstractButton*>> buttons_;
  QString layout_key_;
  bool laid_out_ = false;
  int pending_ = -1;  ///< index into fields_ of the field being typed in
  bool writing_ = false;
};

}  // namespace hetsim::gui
