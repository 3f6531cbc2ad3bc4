#pragma once
// What the GUI exports, made by sim/ exactly as `hetsim buy --out DIR` and `--csv` make it
// (api::buy_files: point-N.toml, point-N.plan.json, front.csv; docs/formats.md#buy-out), so an
// exported plan runs with `hetsim simulate point-N.toml --plan point-N.plan.json`.

#include <QString>

#include <cstddef>
#include <string>
#include <vector>

#include "models/base/result.hpp"
#include "sim/plan/buy.hpp"

namespace hetsim::gui {

/// One file to write: its name inside the chosen folder (or the chosen file) and its content.
struct ExportFile {
  std::string name;  ///< "point-2.plan.json", "point-2.toml", "front.csv"
  std::string content;
};

/// The plan JSON of front point `i` (0-based) of `r`, searched on `s` read from `source_text`.
[[nodiscard]] Result<ExportFile> point_plan(const Scenario& s, const std::string& source_text,
                                            const buy::Result& r, std::size_t i);
/// Front point `i`'s scenario TOML and plan JSON, as `hetsim buy --out dir` writes them (the
/// scenario's relative paths and its header name `dir`).
[[nodiscard]] Result<std::vector<ExportFile>> point_files(const Scenario& s, const std::string& source_text,
                                                          const buy::Result& r, std::size_t i, const QString& dir);
/// The front as CSV (docs/formats.md#buy-csv).
[[nodiscard]] Result<ExportFile> front_csv(const Scenario& s, const std::string& source_text, const buy::Result& r);

/// Diagnostics as the CLI prints them ("file:line:col: error: … [key]" and the hint), one after
/// the other.
[[nodiscard]] QString errors_text(const Diagnostics& d);

/// Writes `content` to `path` whole or not at all (QSaveFile); false with `error` set on failure.
bool write_text_file(const QString& path, const std::string& content, QString* error);

}  // namespace hetsim::gui
