#include "models/base/nearest.hpp"

#include <algorithm>
#include <cctype>

namespace hetsim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  auto lc = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (lc(a[i - 1]) == lc(b[j - 1]) ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(name, c);
    // A prefix ("h100" for "h100-sxm5") is a likely intent even when far in edit distance.
    if (name.size() >= 3 && c.size() > name.size() && c.compare(0, name.size(), name) == 0)
      d = std::min(d, std::size_t{1});
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string suggest(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string near = nearest_name(name, candidates);
  if (!near.empty()) return "did you mean '" + near + "'?";
  std::string out = "known: ";
  for (std::size_t i = 0; i < candidates.size() && i < 12; ++i) {
    if (i) out += ", ";
    out += candidates[i];
  }
  if (candidates.size() > 12) out += ", …";
  return out;
}

}  // namespace hetsim
