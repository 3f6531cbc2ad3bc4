#pragma once
// Reading a file a user named (scenario, plan, catalogue, trace): a clear diagnostic for a
// missing file, a directory, an unreadable one or one too large to be an input, never a
// misleading parse error or an out-of-memory death (`hetsim estimate /dev/zero`).

#include <filesystem>
#include <string>

#include "models/base/result.hpp"

namespace hetsim::io {

/// Inputs are text files of at most this many bytes (the largest bundled one is ~10 kB).
inline constexpr std::size_t kMaxInputBytes = 64u << 20;

/// The whole file. `what` names it in messages ("scenario file"); `hint` is added where the
/// fix is the caller's to tell.
[[nodiscard]] Result<std::string> read_input_file(const std::filesystem::path& file, const std::string& what,
                                                  const std::string& hint = "");

}  // namespace hetsim::io
