#include "sim/io/output_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace hetsim::io {

Diagnostics write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path tmp = path.string() + ".tmp-hetsim";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return {{{path.string(), 0, 0}, "", "cannot write output file", std::strerror(errno)}};
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return {{{path.string(), 0, 0}, "", "write failed", std::strerror(errno)}};
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return {{{path.string(), 0, 0}, "", "cannot move output into place", ec.message()}};
  }
  return {};
}

}  // namespace hetsim::io
