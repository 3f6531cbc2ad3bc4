#pragma once
// The recently opened scenario files, newest first, kept in QSettings ("recent_files") so that
// they survive restarts; at most kMax, no duplicates, absolute paths.

#include <QStringList>

namespace hetsim::gui {

class RecentFiles {
 public:
  static constexpr int kMax = 8;

  /// The list as stored, newest first, without files that no longer exist.
  [[nodiscard]] static QStringList list();
  /// Puts `path` first (moving it up when already listed) and stores the list.
  static void add(const QString& path);
  static void clear();
};

}  // namespace hetsim::gui
