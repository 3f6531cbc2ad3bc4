#include "gui/app/recent_files.hpp"

#include <QFileInfo>
#include <QSettings>

namespace hetsim::gui {

namespace {
const char* const kKey = "recent_files";
}  // namespace

QStringList RecentFiles::list() {
  QStringList out;
  for (const QString& p : QSettings().value(kKey).toStringList())
    if (QFileInfo::exists(p) && !out.contains(p)) out.push_back(p);
  return out;
}

void RecentFiles::add(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  QStringList l = QSettings().value(kKey).toStringList();
  l.removeAll(abs);
  l.prepend(abs);
  while (l.size() > kMax) l.removeLast();
  QSettings().setValue(kKey, l);
}

void RecentFiles::clear() { QSettings().remove(kKey); }

}  // namespace hetsim::gui
