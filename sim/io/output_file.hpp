#pragma once
// Writing output files whole or not at all: a temporary file next to the target, then rename.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "models/base/result.hpp"

namespace hetsim::io {

/// Writes `content` to `path` atomically. On failure nothing is left at `path` (an old file
/// there stays untouched) and the diagnostic says why.
[[nodiscard]] Diagnostics write_file_atomic(const std::filesystem::path& path,
                                            std::string_view content);

/// Several output files of one command, all or none: every file is written to its temporary
/// first; only when all are complete are they renamed into place. On failure no temporary is
/// left and none of the targets was replaced (a failed rename — a full disk cannot cause one —
/// removes those already moved).
struct OutputFile {
  std::filesystem::path path;
  std::string content;
};
[[nodiscard]] Diagnostics write_files_atomic(const std::vector<OutputFile>& files);

/// Why `path` cannot be an output file (empty, a directory, its folder missing), or "" when it
/// can; for command-line validators, before any work is done.
[[nodiscard]] std::string output_path_problem(const std::string& path);

}  // namespace hetsim::io
