#include "sim/io/input_file.hpp"

#include <fstream>
#include <system_error>

namespace hetsim::io {

Result<std::string> read_input_file(const std::filesystem::path& file, const std::string& what,
                                    const std::string& hint) {
  const std::string name = file.string();
  if (name.empty()) return Diagnostic{{"", 0, 0}, "", "empty path given as " + what, "name a file"};
  std::error_code ec;
  const auto st = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(st))
    return Diagnostic{{name, 0, 0}, "", "cannot open " + what, hint.empty() ? "no such file" : "no such file; " + hint};
  if (std::filesystem::is_directory(st))
    return Diagnostic{{name, 0, 0}, "", what + " is a directory", "name a file inside it"};
  std::ifstream in(file, std::ios::binary);
  if (!in) return Diagnostic{{name, 0, 0}, "", "cannot open " + what, "check its permissions"};
  // Read in chunks, at most one byte more than the limit: devices and pipes have no size to
  // ask for, and a buffer of the whole limit up front costs every run 0.2 s of zero-filling.
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kMaxInputBytes && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxInputBytes)
    return Diagnostic{{name, 0, 0}, "", what + " is larger than " + std::to_string(kMaxInputBytes >> 20) + " MiB",
                      "inputs are small text files; is this the right path?"};
  return text;
}

}  // namespace hetsim::io
