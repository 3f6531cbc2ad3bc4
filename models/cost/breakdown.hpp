#pragma once
// Every cost is a list of named parts, so a report (or the GUI) can say where time goes.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/base/units.hpp"

namespace hetsim::cost {

/// Named parts that add up to a total. Parts with the same name are merged by `add`.
template <class Q>
struct Breakdown {
  static constexpr std::size_t kTypicalParts = 8;
  std::vector<std::pair<std::string, Q>> parts;

  void add(std::string_view name, Q q) {
    for (auto& [n, v] : parts)
      if (n == name) { v += q; return; }
    // Room for a step's parts at once: the planner builds many thousands of these, and
    // growing one part at a time was a quarter of its time in malloc.
    if (parts.capacity() == 0) parts.reserve(kTypicalParts);
    parts.emplace_back(name, q);
  }
  void add_all(const Breakdown& other, double scale = 1.0) {
    for (const auto& [n, v] : other.parts) add(n, v * scale);
  }
  [[nodiscard]] Q total() const {
    Q t{};
    for (const auto& [n, v] : parts) t += v;
    return t;
  }
  [[nodiscard]] Q get(std::string_view name) const {
    for (const auto& [n, v] : parts)
      if (n == name) return v;
    return Q{};
  }
};

using TimeBreakdown = Breakdown<Duration>;
using MemoryBreakdown = Breakdown<Bytes>;

}  // namespace hetsim::cost
