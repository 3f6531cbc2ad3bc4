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

int exit_status(ErrorKind k) {
  switch (k) {
    case ErrorKind::BadInput: return 2;
    case ErrorKind::DoesNotFit: return 3;
    case ErrorKind::Environment: return 1;
    case ErrorKind::Internal: return 4;
  }
  return 4;
}

const char* kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::BadInput: return "bad_input";
    case ErrorKind::DoesNotFit: return "does_not_fit";
    case ErrorKind::Environment: return "environment";
    case ErrorKind::Internal: return "internal";
  }
  return "internal";
}

ErrorKind worst_kind(const Diagnostics& d) {
  auto rank = [](ErrorKind k) {
    switch (k) {
      case ErrorKind::DoesNotFit: return 0;
      case ErrorKind::BadInput: return 1;
      case ErrorKind::Environment: return 2;
      case ErrorKind::Internal: return 3;
    }
    return 3;
  };
  ErrorKind w = ErrorKind::BadInput;
  int best = -1;
  for (const auto& x : d)
    if (rank(x.kind) > best) {
      best = rank(x.kind);
      w = x.kind;
    }
  return w;
}

Diagnostics with_kind(Diagnostics d, ErrorKind kind) {
  for (auto& x : d) x.kind = kind;
  return d;
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
