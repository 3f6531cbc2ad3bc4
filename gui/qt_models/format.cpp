#include "gui/qt_models/format.hpp"

#include <fmt/format.h>

#include "models/base/units.hpp"

namespace hetsim::gui {

QString format_usd(double usd) {
  if (usd >= 1e6) return qs(fmt::format("${:.3g}M", usd / 1e6));
  if (usd >= 1e3) return qs(fmt::format("${:.3g}k", usd / 1e3));
  return qs(fmt::format("${:.3g}", usd));
}

QString format_seconds(double seconds) { return qs(format_duration(Duration{seconds})); }

QString format_gib(double bytes) { return qs(format_bytes(Bytes{bytes})); }

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace hetsim::gui
