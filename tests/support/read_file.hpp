#pragma once
// Test helper: a whole file as a string (empty when it cannot be read).

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hetsim::test {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace hetsim::test
