#include "sim/io/output_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace hetsim::io {

std::string output_path_problem(const std::string& path) {
  if (path.empty()) return "an empty path is not an output file";
  std::error_code ec;
  const std::filesystem::path p(path);
  if (std::filesystem::is_directory(p, ec)) return "'" + path + "' is a directory; name a file inside it";
  const auto dir = p.parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) return "folder '" + dir.string() + "' does not exist";
  return {};
}

Diagnostics write_files_atomic(const std::vector<OutputFile>& files) {
  std::vector<std::filesystem::path> staged;
  auto discard = [&] {
    std::error_code ec;
    for (const auto& t : staged) std::filesystem::remove(t, ec);
  };
  for (const OutputFile& f : files) {
    if (const std::string why = output_path_problem(f.path.string()); !why.empty()) {
      discard();
      return {{{f.path.string(), 0, 0}, "", "cannot write output file", why, ErrorKind::Environment}};
    }
    const std::filesystem::path tmp = f.path.string() + ".tmp-hetsim";
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      const std::string why = std::strerror(errno);
      discard();
      return {{{f.path.string(), 0, 0}, "", "cannot write output file", why, ErrorKind::Environment}};
    }
    staged.push_back(tmp);
    out.write(f.content.data(), static_cast<std::streamsize>(f.content.size()));
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      discard();
      return {{{f.path.string(), 0, 0}, "", "write failed", why, ErrorKind::Environment}};
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    std::filesystem::rename(staged[i], files[i].path, ec);
    if (ec) {
      const std::string why = ec.message();
      for (std::size_t k = 0; k < i; ++k) std::filesystem::remove(files[k].path, ec);
      for (std::size_t k = i; k < staged.size(); ++k) std::filesystem::remove(staged[k], ec);
      return {{{files[i].path.string(), 0, 0}, "", "cannot move output into place", why, ErrorKind::Environment}};
    }
  }
  return {};
}

Diagnostics write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  return write_files_atomic({{path, std::string(content)}});
}

}  // namespace hetsim::io
