#pragma once
// Command-line checks shared by hetsim and hetsim-exec: numbers in a physical range, said in
// words a user can act on ("a number from 0.001 to 65536 (GiB), not 'nan'"), never CLI11's
// 300-digit bounds of a double's range.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

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

/// A list of device indexes, "0,2" or "0-3" or "0-1,4": every index in [0, limit). False, with
/// `why` said in words, for anything else (empty items, reversed ranges, duplicates).
inline bool index_list(const std::string& v, int limit, std::vector<int>& out, std::string& why) {
  out.clear();
  std::size_t at = 0;
  while (at <= v.size()) {
    const std::size_t comma = std::min(v.find(',', at), v.size());
    const std::string item = v.substr(at, comma - at);
    const std::size_t dash = item.find('-');
    auto number = [&](const std::string& t, long& x) {
      char* end = nullptr;
      errno = 0;
      x = std::strtol(t.c_str(), &end, 10);
      return !t.empty() && std::isdigit(static_cast<unsigned char>(t[0])) && end != nullptr && *end == '\0' &&
             errno != ERANGE && x >= 0 && x < limit;
    };
    long lo = 0, hi = 0;
    const bool ok = dash == std::string::npos ? number(item, lo) && number(item, hi)
                                              : number(item.substr(0, dash), lo) && number(item.substr(dash + 1), hi) && lo <= hi;
    if (!ok) {
      why = fmt::format("'{}' is not a device index from 0 to {} or a range of them such as 0-3", item, limit - 1);
      return false;
    }
    for (long i = lo; i <= hi; ++i) {
      if (std::find(out.begin(), out.end(), static_cast<int>(i)) != out.end()) {
        why = fmt::format("device {} is listed twice", i);
        return false;
      }
      out.push_back(static_cast<int>(i));
    }
    at = comma + 1;
  }
  return true;
}

}  // namespace hetsim::cli
