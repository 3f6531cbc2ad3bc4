#pragma once
// Reading a JSON document a user gave us (plans, traces), strictly: syntax errors, numbers out of
// double range and duplicate keys are diagnostics with file:line:column, never exceptions.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "models/base/result.hpp"

namespace hetsim::io {

/// The document, or one diagnostic naming the file, line and column (and the key, for a
/// duplicate). `hint` is added to every diagnostic.
[[nodiscard]] Result<nlohmann::ordered_json> parse_json_strict(std::string_view text, const std::string& file,
                                                               const std::string& hint = "");

}  // namespace hetsim::io
