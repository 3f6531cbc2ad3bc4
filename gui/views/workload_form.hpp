#pragma once
// The workload and the owned cluster of a scenario as a form beside its text (views/toml_form):
// the model (a preset, or its shape: layers, hidden, heads, kv heads, FFN, vocabulary), the
// training (global batch, sequence length, precision, tokens, optimizer, kernels), each owned
// pool (a device picked from the catalogue, shown with its figures and their sources, its name,
// nodes, node shape and links; pools added and removed) and the network (NIC, topology,
// oversubscription). As typed, each value is written into the TOML and checked by the scenario
// reader, whose messages show under the form; Run waits for a file that reads.

#include <QString>
#include <QStringList>

#include <vector>

#include "gui/views/toml_form.hpp"
#include "models/hw/device.hpp"

class QGroupBox;
class QLabel;

namespace hetsim::gui {

/// A catalogue device in a few lines (HTML): its name, peak per format, memory and bandwidth,
/// TDP, prices, and where each group of figures comes from (the catalogue's sources, each cut
/// to its opening).
[[nodiscard]] QString device_summary(const hw::DeviceSpec& d);
/// The catalogue's sources of `d` in full, one group a paragraph (plain text).
[[nodiscard]] QString device_sources(const hw::DeviceSpec& d);

/// The names the reader gives the owned pools and the candidates of `text` (each its `name`,
/// else its device's), which a new one must not take.
[[nodiscard]] QStringList pool_names_in(const QString& text);
/// The lines of a new table of `array` ("cluster.pool", "purchase.candidate"): from the device of
/// its last table (the H100 without one), the first catalogue device in the catalogue's order that
/// no pool or candidate is named after, or (all taken) that device with a name of its own; then
/// `more` ("nodes = 1").
[[nodiscard]] QStringList new_pool_lines(const QString& text, const QString& array, const QStringList& more);

class WorkloadForm : public TomlForm {
  Q_OBJECT
 public:
  explicit WorkloadForm(Document* doc, QWidget* parent = nullptr);

  /// What is shown under owned pool `i`'s device picker.
  [[nodiscard]] QString device_text(int i) const;
  /// … and its tooltip: every source of those figures, whole.
  [[nodiscard]] QString device_tooltip(int i) const;

 protected:
  [[nodiscard]] QString layout_key() const override;
  void lay_out() override;
  void refreshed() override;

 private:
  struct Pool {
    QGroupBox* box = nullptr;
    QLabel* figures = nullptr;
    bool inline_device = false;  ///< an inline [cluster.pool.device] table: edited in the text
  };
  std::vector<Pool> pools_;
};

}  // namespace hetsim::gui
