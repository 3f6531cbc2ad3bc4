#pragma once
// The workload and the owned cluster of a scenario as a form beside its text (views/toml_form):
// the model (a preset, or its shape: layers, hidden, heads, kv heads, FFN, vocabulary), the
// training (global batch, sequence length, precision, tokens), each owned pool (a device picked
// from the catalogue, shown with its figures and their sources, and its nodes) and the network
// (NIC, topology, oversubscription). As typed, each value is written into the TOML and checked
// by the scenario reader, whose messages show under the form; Run waits for a file that reads.

#include <QString>

#include <vector>

#include "gui/views/toml_form.hpp"
#include "models/hw/device.hpp"

class QLabel;

namespace hetsim::gui {

/// A catalogue device in a few lines (HTML): its name, peak per format, memory and bandwidth,
/// TDP, prices, and where each group of figures comes from (the catalogue's sources, each cut
/// to its opening).
[[nodiscard]] QString device_summary(const hw::DeviceSpec& d);
/// The catalogue's sources of `d` in full, one group a paragraph (plain text).
[[nodiscard]] QString device_sources(const hw::DeviceSpec& d);

class WorkloadForm : public TomlForm {
  Q_OBJECT
 public:
  explicit WorkloadForm(Document* doc, QWidget* parent = nullptr);

  /// What is shown under owned pool `i`'s device picker.
  [[nodiscard]] QString device_text(int i) const;

 protected:
  void rebuild() override;
  void refreshed() override;

 private:
  int pools_ = -1;
  std::vector<QLabel*> device_labels_;
};

}  // namespace hetsim::gui
