#pragma once
// Writing output files whole or not at all: a temporary file next to the target, then rename.

#include <filesystem>
#include <string_view>

#include "models/base/result.hpp"

namespace hetsim::io {

/// Writes `content` to `path` atomically. On failure nothing is left at `path` (an old file
/// there stays untouched) and the diagnostic says why.
[[nodiscard]] Diagnostics write_file_atomic(const std::filesystem::path& path,
                                            std::string_view content);

/// Why `path` cannot be an output file (empty, a directory, its folder missing), or "" when it
/// can; for command-line validators, before any work is done.
[[nodiscard]] std::string output_path_problem(const std::string& path);

}  // namespace hetsim::io
