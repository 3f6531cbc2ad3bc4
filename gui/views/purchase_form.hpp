#pragma once
// The purchase and cost fields of a scenario as a form beside its text: objective, budget,
// deadline, power limit; rent or own, electricity; per candidate the most nodes, the node step,
// the prices and the lead time. A field writes its `key = value` line into the TOML (app/
// toml_patch) as it is typed; the reader then checks the file as the CLI would, and its messages
// about these tables show under the form. Fields follow the text when it changes elsewhere.

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

class PurchaseForm : public QWidget {
  Q_OBJECT
 public:
  explicit PurchaseForm(Document* doc, QWidget* parent = nullptr);

  /// A field by its key: "purchase.budget_usd", "cost.mode", "purchase.candidate.1.max_nodes".
  [[nodiscard]] QWidget* field(const QString& id) const;
  /// The reader's messages about [purchase] and [cost], as shown.
  [[nodiscard]] QString messages_text() const;
  /// Writes pending typing into the document now (otherwise after a short pause).
  void apply_pending();

 signals:
  /// Before the form changes the document's text (the editor hands over its own edits first).
  void about_to_edit();

 private:
  struct Field {
    QString id;
    TomlTable table;
    QString key;
    QWidget* widget = nullptr;
    bool quoted = false;  ///< a string value (combo boxes)
  };
  void rebuild();
  void refresh();
  void write(const Field& f);
  void add_line(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                const QString& placeholder, const QString& tip);
  void add_choice(QFormLayout* form, const QString& label, const TomlTable& table, const QString& key,
                  const QStringList& choices, const QString& tip);

  Document* doc_;
  QWidget* body_ = nullptr;
  QLabel* messages_ = nullptr;
  QTimer* pause_ = nullptr;
  std::vector<Field> fields_;
  int pending_ = -1;  ///< index into fields_ of the field being typed in
  int candidates_ = -1;
  bool writing_ = false;
};

}  // namespace hetsim::gui
