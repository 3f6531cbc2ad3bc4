#pragma once
// A scenario's fixed plan, [parallel], as a form beside its text (views/toml_form): the uniform
// degrees tp, pp, dp, and the keys every plan has (micro-batch, expert parallelism, schedule,
// virtual stages, recompute, ZeRO, sequence parallelism). Without [parallel] Run searches the plan; a value typed
// here adds the table (the plan is then fixed), and a button removes it. With replica groups
// ([[parallel.replicas]]) the form shows the common keys and, per group, its count and
// micro-batches, its stages as read (edited in the text), and buttons to copy or remove it.
// Hidden for a purchase scenario (`hetsim buy` searches its plans).

#include <QString>

#include <vector>

#include "gui/views/toml_form.hpp"

class QLabel;

namespace hetsim::gui {

class ParallelForm : public TomlForm {
  Q_OBJECT
 public:
  explicit ParallelForm(Document* doc, QWidget* parent = nullptr);

  /// The line above the fields: what the form's table means for Run.
  [[nodiscard]] QString note_text() const;
  /// Replica group `i`'s stages as read ("h100 tp8 L20 | h100 tp8 L20"), or a note that the file
  /// does not read.
  [[nodiscard]] QString stages_text(int i) const;

 protected:
  [[nodiscard]] bool shown() const override;
  [[nodiscard]] QString layout_key() const override;
  void lay_out() override;
  void refreshed() override;

 private:
  QLabel* note_ = nullptr;
  std::vector<QLabel*> stages_;
};

}  // namespace hetsim::gui
