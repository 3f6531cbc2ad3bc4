#pragma once
// Errors for programs: the JSON document a `--json` command prints on stdout when it ends without
// a report (docs/formats.md#error-json), so that stdout is always one JSON document.

#include <string>

#include "models/base/result.hpp"

namespace hetsim::io {

/// {"error": {"kind", "exit_status", "diagnostics": [{file, line, column, key, message, hint,
/// kind}]}}, pretty-printed, one trailing newline; kind and exit_status from worst_kind(d).
[[nodiscard]] std::string error_json(const Diagnostics& d);

}  // namespace hetsim::io
