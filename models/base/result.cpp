#include "models/base/result.hpp"

#include <cstdio>
#include <cstdlib>

namespace hetsim {

std::string to_string(const Diagnostic& d) {
  if (d.where.file.empty()) {  // not about an input file: the environment, a device
    std::string out = "error: " + d.message;
    if (!d.key.empty()) out += " [" + d.key + "]";
    if (!d.hint.empty()) out += "\n  hint: " + d.hint;
    return out;
  }
  std::string out = d.where.file;
  if (d.where.line > 0) {
    out += ":" + std::to_string(d.where.line);
    if (d.where.col > 0) out += ":" + std::to_string(d.where.col);
  }
  out += ": error: " + d.message;
  if (!d.key.empty()) out += " [" + d.key + "]";
  if (!d.hint.empty()) out += "\n  hint: " + d.hint;
  return out;
}

namespace detail {
[[noreturn]] void assert_fail(const char* cond, const char* msg, const char* file, int line) {
  // The one place library code may print: it is about to abort on a programmer bug.
  std::fprintf(stderr, "%s:%d: hetsim internal error: %s (assertion %s failed)\n", file, line, msg,
               cond);
  std::abort();
}
}  // namespace detail

}  // namespace hetsim
