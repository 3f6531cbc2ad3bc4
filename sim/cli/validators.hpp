#pragma once
// Command-line checks shared by hetsim and hetsim-exec: numbers in a physical range, said in
// words a user can act on ("a number from 0.001 to 65536 (GiB), not 'nan'"), never CLI11's
// 300-digit bounds of a double's range.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace hetsim::cli {

/// A finite number in [lo, hi]; `unit` is named in the message.
inline CLI::Validator between(double lo, double hi, const std::string& unit) {
  return CLI::Validator(
      [lo, hi, unit](std::string& v) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        if (v.empty() || end == nullptr || *end != '\0' || !std::isfinite(x) || x < lo || x > hi)
          return fmt::format("a number from {:g} to {:g} ({}), not '{}'", lo, hi, unit, v);
        return {};
      },
      fmt::format("{:g}..{:g}", lo, hi));
}

/// A whole number in [lo, hi].
inline CLI::Validator count_between(long long lo, long long hi, const std::string& what) {
  return CLI::Validator(
      [lo, hi, what](std::string& v) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long x = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || end == nullptr || *end != '\0' || errno == ERANGE || x < lo || x > hi)
          return fmt::format("a whole number of {} from {} to {}, not '{}'", what, lo, hi, v);
        return {};
      },
      fmt::format("{}..{}", lo, hi));
}

}  // namespace hetsim::cli
