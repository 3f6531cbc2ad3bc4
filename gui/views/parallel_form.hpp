#pragma once
// A scenario's fixed plan, [parallel], as a form beside its text (views/toml_form): the uniform
// degrees tp, pp, dp, and the keys every plan has (micro-batch, schedule, virtual stages,
// recompute, ZeRO, sequence parallelism). Without [parallel] Run searches the plan; a value typed
// here adds the table (the plan is then fixed), and a button removes it. Replica groups
// ([[parallel.replicas]]) are edited in the text; the form then shows the common keys only.
// Hidden for a purchase scenario (`hetsim buy` searches its plans).

#include <QString>

#include "gui/views/toml_form.hpp"

class QLabel;

namespace hetsim::gui {

class ParallelForm : public TomlForm {
  Q_OBJECT
 public:
  explicit ParallelForm(Document* doc, QWidget* parent = nullptr);

  /// The line above the fields: what the form's table means for Run.
  [[nodiscard]] QString note_text() const;

 protected:
  [[nodiscard]] bool shown() const override;
  [[nodiscard]] QString layout_key() const override;
  void lay_out() override;

 private:
  QLabel* note_ = nullptr;
};

}  // namespace hetsim::gui
