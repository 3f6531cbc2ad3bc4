#pragma once
// A form over some tables of the scenario's TOML text: each field writes its `key = value` line
// into the text (app/toml_patch) as it is typed, after a short pause or on Enter, and emptying a
// field removes the line. The reader then checks the file as the CLI would, and its messages
// about the form's tables (file:line:col, key, message, hint) show under the form. Fields follow
// the text when it changes elsewhere. Subclasses lay out their fields in rebuild().

#include <QString>
#include <QStringList>
#include <QWidget>

#include <vector>

#include "gui/app/toml_patch.hpp"

class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QTimer;

namespace hetsim::gui {

class Document;

class TomlForm : public QWidget {
  Q_OBJECT
 public:
  /// `prefixes`: the keys whose messages the form shows ("purchase", "cost").
  TomlForm(Document* doc, QStringList prefixes, QWidget* parent = nullptr);

  /// A field by its key: "purchase.budget_usd", "cluster.pool.0.device".
  [[nodiscard]] QWidget* field(const QString& id) const;
  /// The reader's messages about the form's tables, as shown.
  [[nodiscard]] QString messages_text() const;
  /// Writes pending typing into the document now (otherwise after a short pause).
  void apply_pending();

 signals:
  /// Before the form changes the document's text (the editor hands over its own edits first).
  void about_to_edit();

 protected:
  /// Lays the fields out again for the document's scenario (called on each reading, except after
  /// the form's own writes).
  virtual void rebuild() = 0;
  /// Shows the text's values in the fields and the reader's messages.
  void refresh();
  /// Forgets every field (before a new layout).
  void clear_fields();
  /// A line edit for `key` of `table`; `placeholder` shows when the key is absent.
  QLineEdit* add_line(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                      const QString& placeholder, const QString& tip);
  /// A choice of quoted strings for `key`; its first, empty item removes the key.
  QComboBox* add_choice(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                        const QStringList& choices, const QString& tip);
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
    bool quoted = false;  ///< a string value (combo boxes)
  };
  void on_reread();
  void write(const Field& f);

  QStringList prefixes_;
  QLabel* messages_ = nullptr;
  QTimer* pause_ = nullptr;
  std::vector<Field> fields_;
  int pending_ = -1;  ///< index into fields_ of the field being typed in
  bool writing_ = false;
};

}  // namespace hetsim::gui
