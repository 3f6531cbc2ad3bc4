#include "models/base/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace hetsim {
namespace {

struct Unit {
  std::string_view name;
  double scale;  // SI value of one unit
};

constexpr std::array kByteUnits{
    Unit{"B", 1.0},         Unit{"KB", 1e3},        Unit{"MB", 1e6},
    Unit{"GB", 1e9},        Unit{"TB", 1e12},       Unit{"PB", 1e15},
    Unit{"KiB", 1024.0},    Unit{"MiB", 1048576.0}, Unit{"GiB", kGiB},
    Unit{"TiB", kGiB * 1024.0}};

constexpr std::array kBandwidthUnits{
    Unit{"B/s", 1.0},   Unit{"KB/s", 1e3},  Unit{"MB/s", 1e6},   Unit{"GB/s", 1e9},
    Unit{"TB/s", 1e12}, Unit{"Bps", 1.0},   Unit{"KBps", 1e3},   Unit{"MBps", 1e6},
    Unit{"GBps", 1e9},  Unit{"TBps", 1e12}, Unit{"KiB/s", 1024.0}, Unit{"MiB/s", 1048576.0},
    Unit{"GiB/s", kGiB}, Unit{"bps", 0.125}, Unit{"Kbps", 125.0}, Unit{"Mbps", 1.25e5},
    Unit{"Gbps", 1.25e8}, Unit{"Tbps", 1.25e11}, Unit{"b/s", 0.125}, Unit{"Kb/s", 125.0},
    Unit{"Mb/s", 1.25e5}, Unit{"Gb/s", 1.25e8}, Unit{"Tb/s", 1.25e11}};

constexpr std::array kTimeUnits{Unit{"ns", 1e-9}, Unit{"us", 1e-6}, Unit{"µs", 1e-6},
                                Unit{"ms", 1e-3}, Unit{"s", 1.0},   Unit{"min", 60.0},
                                Unit{"h", 3600.0}};

constexpr std::array kFlopRateUnits{
    Unit{"FLOPS", 1.0},    Unit{"GFLOPS", 1e9},   Unit{"TFLOPS", 1e12}, Unit{"PFLOPS", 1e15},
    Unit{"FLOP/s", 1.0},   Unit{"GFLOP/s", 1e9},  Unit{"TFLOP/s", 1e12}, Unit{"PFLOP/s", 1e15}};

constexpr std::array kPowerUnits{Unit{"W", 1.0}, Unit{"kW", 1e3}, Unit{"MW", 1e6}};

template <std::size_t N>
const Unit* find_unit(const std::array<Unit, N>& units, std::string_view name) {
  for (const Unit& u : units)
    if (u.name == name) return &u;
  return nullptr;
}

const Unit* find_in(Dimension d, std::string_view name) {
  switch (d) {
    case Dimension::Size: return find_unit(kByteUnits, name);
    case Dimension::Bandwidth: return find_unit(kBandwidthUnits, name);
    case Dimension::Time: return find_unit(kTimeUnits, name);
    case Dimension::Compute: return find_unit(kFlopRateUnits, name);
    case Dimension::Power: return find_unit(kPowerUnits, name);
  }
  return nullptr;
}

// Case-insensitive lookup, used only to make a hint ("gbps" -> "Gbps").
std::string case_hint(Dimension d, std::string_view name) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string want = lower(name);
  // All case-insensitive matches: "gbps" may mean "GBps" (bytes) or "Gbps" (bits).
  auto scan = [&](const auto& units) -> std::string {
    std::string out;
    for (const Unit& u : units)
      if (lower(u.name) == want) out += (out.empty() ? "" : "\" or \"") + std::string(u.name);
    return out;
  };
  switch (d) {
    case Dimension::Size: return scan(kByteUnits);
    case Dimension::Bandwidth: return scan(kBandwidthUnits);
    case Dimension::Time: return scan(kTimeUnits);
    case Dimension::Compute: return scan(kFlopRateUnits);
    case Dimension::Power: return scan(kPowerUnits);
  }
  return {};
}

std::string format_scaled(double v, const char* const* names, const double* scales, int n) {
  int i = n - 1;
  while (i > 0 && std::fabs(v) < scales[i]) --i;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s", v / scales[i], names[i]);
  return buf;
}

}  // namespace

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::Size: return "a size";
    case Dimension::Bandwidth: return "a bandwidth";
    case Dimension::Time: return "a duration";
    case Dimension::Compute: return "a compute rate";
    case Dimension::Power: return "a power";
  }
  return "a quantity";
}

std::string_view dimension_units(Dimension d) {
  switch (d) {
    case Dimension::Size: return "B, KB, MB, GB, TB (decimal) or KiB, MiB, GiB, TiB";
    case Dimension::Bandwidth: return "GB/s or GBps (bytes/s), Gbps or Gb/s (bits/s), GiB/s";
    case Dimension::Time: return "ns, us, ms, s, min, h";
    case Dimension::Compute: return "GFLOPS, TFLOPS, PFLOPS (or TFLOP/s)";
    case Dimension::Power: return "W, kW";
  }
  return "";
}

ParsedQuantity parse_quantity(std::string_view text, Dimension dim) {
  ParsedQuantity out;
  std::string_view s = text;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  const std::string units = std::string(dimension_units(dim));
  if (s.empty()) {
    out.error = "empty quantity";
    out.hint = "write " + std::string(dimension_name(dim)) + " with a unit: " + units;
    return out;
  }
  double value = 0;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr == first) {
    out.error = "\"" + std::string(text) + "\" does not start with a number";
    out.hint = "write " + std::string(dimension_name(dim)) + " like \"" +
               (dim == Dimension::Size       ? "80GiB"
                : dim == Dimension::Bandwidth ? "400Gbps"
                : dim == Dimension::Time      ? "2us"
                : dim == Dimension::Compute  ? "989TFLOPS"
                                              : "700W") +
               "\"";
    return out;
  }
  std::string_view unit(ptr, static_cast<std::size_t>(last - ptr));
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.empty()) {
    out.error = "\"" + std::string(text) + "\" has no unit";
    out.hint = "units for " + std::string(dimension_name(dim)) + ": " + units;
    return out;
  }
  const Unit* u = find_in(dim, unit);
  if (u == nullptr) {
    out.error = "unknown unit \"" + std::string(unit) + "\" for " + std::string(dimension_name(dim));
    const std::string near = case_hint(dim, unit);
    out.hint = near.empty() ? "use one of: " + units : "did you mean \"" + near + "\"?";
    if (near.empty() && dim == Dimension::Bandwidth && find_in(Dimension::Size, unit))
      out.hint = "a bandwidth needs a rate: \"" + std::string(unit) + "/s\"";
    return out;
  }
  if (!std::isfinite(value) || value < 0) {
    out.error = "\"" + std::string(text) + "\" must be a finite, non-negative value";
    return out;
  }
  out.value = value * u->scale;
  return out;
}

std::string format_bytes(Bytes b) {
  static const char* const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  static const double scales[] = {1.0, 1024.0, 1048576.0, kGiB, kGiB * 1024, kGiB * 1048576};
  return format_scaled(b.v, names, scales, 6);
}

std::string format_bandwidth(BytesPerSec r) {
  static const char* const names[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  static const double scales[] = {1.0, 1e3, 1e6, 1e9, 1e12};
  return format_scaled(r.v, names, scales, 5);
}

std::string format_duration(Duration d) {
  static const char* const names[] = {"ns", "us", "ms", "s"};
  static const double scales[] = {1e-9, 1e-6, 1e-3, 1.0};
  if (d.v >= 86400.0 * 999.5) {  // "1.51e+03 days" reads badly
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g years", d.v / (86400.0 * 365.25));
    return buf;
  }
  if (d.v >= 86400.0 * 2) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g days", d.v / 86400.0);
    return buf;
  }
  if (d.v >= 3600.0 * 2) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g h", d.v / 3600.0);
    return buf;
  }
  if (d.v >= 60.0 * 10) {  // "1.8e+03 s" reads badly
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g min", d.v / 60.0);
    return buf;
  }
  return format_scaled(d.v, names, scales, 4);
}

std::string format_flop_rate(FlopRate r) {
  static const char* const names[] = {"FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s"};
  static const double scales[] = {1.0, 1e9, 1e12, 1e15};
  return format_scaled(r.v, names, scales, 4);
}

}  // namespace hetsim
