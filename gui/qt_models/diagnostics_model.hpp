#pragma once
// The scenario reader's diagnostics as a table: where (file:line:col), the key, the message and
// the hint, each as the reader wrote it. kLineRole / kColumnRole say where to jump in the text.

#include <QAbstractTableModel>

#include "models/base/result.hpp"

namespace hetsim::gui {

class DiagnosticsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kWhere, kKey, kMessage, kHint, kColumns };
  static constexpr int kLineRole = Qt::UserRole + 1;    ///< 1-based; 0 when the reader gave none
  static constexpr int kColumnRole = Qt::UserRole + 2;  ///< 1-based; 0 when the reader gave none

  explicit DiagnosticsModel(QObject* parent = nullptr);

  void set_diagnostics(Diagnostics d);
  [[nodiscard]] const Diagnostics& diagnostics() const { return diagnostics_; }

  [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
  [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  [[nodiscard]] QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  Diagnostics diagnostics_;
};

/// "name.toml:line:col" (or "name.toml:line", or "name.toml"), as compilers write it; the file's
/// name without its folder (the tooltip has the whole path).
[[nodiscard]] QString where_text(const SourceLoc& where);

}  // namespace hetsim::gui
