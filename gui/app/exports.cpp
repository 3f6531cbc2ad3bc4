#include "gui/app/exports.hpp"

#include <QSaveFile>

#include <algorithm>
#include <filesystem>

#include "sim/api/api.hpp"

namespace hetsim::gui {

namespace {

// Every file `hetsim buy --out` would write for this front, named without a folder.
Result<std::vector<ExportFile>> all_files(const Scenario& s, const std::string& source_text, const buy::Result& r,
                                          const std::filesystem::path& dir = {}) {
  auto files = api::buy_files(s, source_text, r, dir);
  if (!files) return files.errors();
  std::vector<ExportFile> out;
  for (auto& f : *files) out.push_back({f.path.filename().string(), std::move(f.content)});
  return out;
}

Result<ExportFile> named(Result<std::vector<ExportFile>> files, const std::string& name) {
  if (!files) return files.errors();
  for (auto& f : *files)
    if (f.name == name) return std::move(f);
  return about("", "", "the export has no " + name, "", ErrorKind::Internal);
}

std::string stem(std::size_t i) { return "point-" + std::to_string(i + 1); }

}  // namespace

Result<ExportFile> point_plan(const Scenario& s, const std::string& source_text, const buy::Result& r, std::size_t i) {
  if (i >= r.front.size()) return about(s.file, "", "no such front point", "", ErrorKind::Internal);
  return named(all_files(s, source_text, r), stem(i) + ".plan.json");
}

Result<std::vector<ExportFile>> point_files(const Scenario& s, const std::string& source_text, const buy::Result& r,
                                            std::size_t i, const QString& dir) {
  if (i >= r.front.size()) return about(s.file, "", "no such front point", "", ErrorKind::Internal);
  auto files = all_files(s, source_text, r, dir.toStdString());
  if (!files) return files.errors();
  std::vector<ExportFile> out;
  for (auto& f : *files)
    if (f.name == stem(i) + ".toml" || f.name == stem(i) + ".plan.json") out.push_back(std::move(f));
  return out;
}

Result<ExportFile> front_csv(const Scenario& s, const std::string& source_text, const buy::Result& r) {
  return named(all_files(s, source_text, r), "front.csv");
}

QString errors_text(const Diagnostics& d) {
  QString t;
  for (const Diagnostic& x : d) t += (t.isEmpty() ? "" : "\n") + QString::fromStdString(to_string(x));
  return t;
}

bool write_text_file(const QString& path, const std::string& content, QString* error) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  const auto n = static_cast<qint64>(content.size());
  if (f.write(content.data(), n) != n || !f.commit()) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

}  // namespace hetsim::gui
