#pragma once
// "Did you mean …?" support: the closest candidate to a misspelt name.

#include <string>
#include <string_view>
#include <vector>

namespace hetsim {

/// Levenshtein distance between a and b, case-insensitive.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate nearest to `name`, or "" when none is close enough to be a likely typo
/// (distance at most max(2, |name|/3)). A candidate that starts with `name` (3+ characters)
/// counts as distance 1: "h100" suggests "h100-sxm5".
[[nodiscard]] std::string nearest_name(std::string_view name,
                                       const std::vector<std::string>& candidates);

/// "did you mean 'x'?" when a near name exists, otherwise "known: a, b, c" (at most 12 shown).
[[nodiscard]] std::string suggest(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace hetsim
