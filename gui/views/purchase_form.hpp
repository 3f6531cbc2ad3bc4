#pragma once
// The purchase and cost fields of a scenario as a form beside its text (views/toml_form):
// objective, budget, deadline, power limit; rent or own, electricity, PUE, amortisation; per
// candidate the device (from the catalogue), its name, the most nodes, the node step, the prices
// and the lead time; candidates added and removed. A scenario without [purchase] shows the cost
// only.

#include <QString>

#include <vector>

#include "gui/views/toml_form.hpp"

class QGroupBox;

namespace hetsim::gui {

class PurchaseForm : public TomlForm {
  Q_OBJECT
 public:
  explicit PurchaseForm(Document* doc, QWidget* parent = nullptr);

 protected:
  [[nodiscard]] bool shown() const override;
  [[nodiscard]] QString layout_key() const override;
  void lay_out() override;
  void refreshed() override;

 private:
  std::vector<QGroupBox*> candidates_;
};

}  // namespace hetsim::gui
