#pragma once
// The purchase and cost fields of a scenario as a form beside its text (views/toml_form):
// objective, budget, deadline, power limit; rent or own, electricity; per candidate the most
// nodes, the node step, the prices and the lead time. Hidden for a scenario without [purchase].

#include "gui/views/toml_form.hpp"

namespace hetsim::gui {

class PurchaseForm : public TomlForm {
  Q_OBJECT
 public:
  explicit PurchaseForm(Document* doc, QWidget* parent = nullptr);

 protected:
  void rebuild() override;

 private:
  int candidates_ = -1;
};

}  // namespace hetsim::gui
