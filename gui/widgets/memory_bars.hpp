#pragma once
// Peak memory per device type as horizontal bars against the device's capacity: each bar
// stacked by the parts of the worst stage (weights, gradients, optimizer, activations, …), the
// capacity as a line, a second peak (the simulated timeline's) as a tick when it differs.

#include <QColor>
#include <QString>
#include <QWidget>

#include <optional>
#include <utility>
#include <vector>

namespace hetsim::gui {

struct MemoryBar {
  QString label;                                  ///< "h100-sxm5 (pool h100)"
  std::vector<std::pair<QString, double>> parts;  ///< bytes
  double capacity = 0;                            ///< bytes
  std::optional<double> other_peak;               ///< bytes: the simulated peak, when known
  bool fits = true;
};

class MemoryBars : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryBars(QWidget* parent = nullptr);

  void set_bars(std::vector<MemoryBar> bars);
  [[nodiscard]] const std::vector<MemoryBar>& bars() const { return bars_; }
  [[nodiscard]] QSize sizeHint() const override;
  [[nodiscard]] QSize minimumSizeHint() const override;
  /// The colour a part is drawn in (the same name, the same colour in every bar).
  [[nodiscard]] static QColor part_color(const QString& part);

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::vector<MemoryBar> bars_;
};

}  // namespace hetsim::gui
