#pragma once
// How the GUI writes numbers: money as the CLI's buy report does ("$93.1M"), durations with
// models/base's format_duration ("311 days"), so a number on screen reads as the CLI prints it.

#include <QString>

#include <string>

namespace hetsim::gui {

/// "$93.1M", "$412k", "$950": three significant digits, as `hetsim buy` prints money.
[[nodiscard]] QString format_usd(double usd);
/// "311 days", "4.36 years", "1.2 s" (format_duration).
[[nodiscard]] QString format_seconds(double seconds);
/// "62.1 GiB" (format_bytes).
[[nodiscard]] QString format_gib(double bytes);
[[nodiscard]] QString qs(const std::string& s);

}  // namespace hetsim::gui
