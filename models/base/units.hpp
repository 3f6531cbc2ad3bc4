#pragma once
// Physical quantities as distinct types, so that the compiler rejects adding bytes to seconds.
// All values are SI (bytes, seconds, FLOP, FLOP/s, bytes/s, watts) held in a double: cost-model
// arithmetic divides sizes by parallel degrees, so integral bytes would only add rounding noise.

#include <compare>
#include <string>
#include <string_view>

namespace hetsim {

/// A double tagged with its physical dimension. Same-dimension arithmetic and scaling only.
template <class Tag>
struct Quantity {
  double v = 0;

  constexpr Quantity& operator+=(Quantity o) { v += o.v; return *this; }
  constexpr Quantity& operator-=(Quantity o) { v -= o.v; return *this; }
  constexpr Quantity& operator*=(double k) { v *= k; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return {a.v + b.v}; }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return {a.v - b.v}; }
  friend constexpr Quantity operator*(Quantity a, double k) { return {a.v * k}; }
  friend constexpr Quantity operator*(double k, Quantity a) { return {a.v * k}; }
  friend constexpr Quantity operator/(Quantity a, double k) { return {a.v / k}; }
  friend constexpr double operator/(Quantity a, Quantity b) { return a.v / b.v; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;
};

using Bytes = Quantity<struct BytesTag>;              ///< bytes
using Duration = Quantity<struct DurationTag>;        ///< seconds
using Flops = Quantity<struct FlopsTag>;              ///< floating-point operations (a count)
using FlopRate = Quantity<struct FlopRateTag>;        ///< FLOP/s
using BytesPerSec = Quantity<struct BytesPerSecTag>;  ///< bytes/s
using Watts = Quantity<struct WattsTag>;              ///< watts

[[nodiscard]] constexpr Duration operator/(Bytes b, BytesPerSec r) { return {b.v / r.v}; }
[[nodiscard]] constexpr Duration operator/(Flops f, FlopRate r) { return {f.v / r.v}; }
[[nodiscard]] constexpr Bytes operator*(BytesPerSec r, Duration d) { return {r.v * d.v}; }

[[nodiscard]] constexpr Duration max(Duration a, Duration b) { return a.v < b.v ? b : a; }
[[nodiscard]] constexpr Duration min(Duration a, Duration b) { return a.v < b.v ? a : b; }

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// What a quantity string measures; selects the units `parse_quantity` accepts.
enum class Dimension { Size, Bandwidth, Time, Compute, Power };

/// A human name for the dimension and its accepted units, for error messages.
[[nodiscard]] std::string_view dimension_name(Dimension d);
[[nodiscard]] std::string_view dimension_units(Dimension d);

/// The outcome of parsing "80GiB", "3.35TB/s", "400Gbps", "2us", "989TFLOPS", "700W".
/// On success `error` is empty and `value` is in SI units (bytes, bytes/s, s, FLOP/s, W).
/// On failure `error` says what is wrong and `hint` suggests the fix.
struct ParsedQuantity {
  double value = 0;
  std::string error;
  std::string hint;
  [[nodiscard]] bool ok() const { return error.empty(); }
};

/// Parses a number immediately followed by a unit of dimension `dim` (no space needed; one
/// space allowed). Decimal (KB, MB, GB, TB) and binary (KiB…TiB) byte prefixes; bandwidth in
/// bytes ("GB/s", "GBps") or bits ("Gbps", "Gb/s"). Rejects negative values and bare numbers.
[[nodiscard]] ParsedQuantity parse_quantity(std::string_view text, Dimension dim);

/// Formats a quantity for people with a sensible prefix: "80 GiB", "3.35 TB/s", "12.3 ms".
[[nodiscard]] std::string format_bytes(Bytes b);
[[nodiscard]] std::string format_bandwidth(BytesPerSec r);
[[nodiscard]] std::string format_duration(Duration d);
[[nodiscard]] std::string format_flop_rate(FlopRate r);

}  // namespace hetsim
