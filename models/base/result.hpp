#pragma once
// Result<T>: a value or the diagnostics that explain why there is none (a small std::expected
// look-alike for C++20). Bad input collects every Diagnostic before it stops.

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "models/base/assert.hpp"

namespace hetsim {

/// Where in an input file a problem is; line and col are 1-based, 0 when unknown.
struct SourceLoc {
  std::string file;
  std::uint32_t line = 0;
  std::uint32_t col = 0;
};

/// What kind of problem a diagnostic reports; a front end's exit status follows from it
/// (exit_status), so no caller routes on a key or a message.
enum class ErrorKind : std::uint8_t {
  BadInput,     ///< the user's input is wrong or asks the impossible (exit 2)
  DoesNotFit,   ///< a well-formed plan that does not fit in device memory (exit 3)
  Environment,  ///< the machine: a file that cannot be written, a device that fails (exit 1)
  Internal,     ///< a bug in hetsim (exit 4)
};

/// One problem, printed as "file:line:col: error: message [key]\n  hint: hint".
struct Diagnostic {
  SourceLoc where;
  std::string key;  ///< dotted key path, e.g. "cluster.pool[1].device"; may be empty
  std::string message;
  std::string hint;
  ErrorKind kind = ErrorKind::BadInput;
};

/// A diagnostic about `file` as a whole (no line), at `key` when one is known.
[[nodiscard]] inline Diagnostic about(std::string file, std::string key, std::string message, std::string hint,
                                      ErrorKind kind = ErrorKind::BadInput) {
  return {{std::move(file), 0, 0}, std::move(key), std::move(message), std::move(hint), kind};
}

/// Exit status of a command that ends with this kind of error: 2, 3, 1 or 4.
[[nodiscard]] int exit_status(ErrorKind k);
/// "bad_input", "does_not_fit", "environment", "internal" (the JSON spelling).
[[nodiscard]] const char* kind_name(ErrorKind k);

/// Formats a diagnostic the way compilers do, so IDEs and the GUI can jump to it.
[[nodiscard]] std::string to_string(const Diagnostic& d);

using Diagnostics = std::vector<Diagnostic>;

/// The kind that decides a command's exit status when several diagnostics end it: internal
/// before environment before bad input before does-not-fit; BadInput for an empty list.
[[nodiscard]] ErrorKind worst_kind(const Diagnostics& d);

/// The same diagnostics, each marked as `kind` (e.g. a device's errors as Environment).
[[nodiscard]] Diagnostics with_kind(Diagnostics d, ErrorKind kind);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                      // NOLINT: implicit on purpose
  Result(Diagnostics errors) : v_(std::move(errors)) {           // NOLINT
    HETSIM_ASSERT(!std::get<1>(v_).empty(), "a failed Result needs at least one diagnostic");
  }
  Result(Diagnostic error) : Result(Diagnostics{std::move(error)}) {}  // NOLINT

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  [[nodiscard]] T& value() & { HETSIM_ASSERT(ok(), "value() of a failed Result"); return std::get<0>(v_); }
  [[nodiscard]] const T& value() const& { HETSIM_ASSERT(ok(), "value() of a failed Result"); return std::get<0>(v_); }
  [[nodiscard]] T&& value() && { HETSIM_ASSERT(ok(), "value() of a failed Result"); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  [[nodiscard]] const Diagnostics& errors() const { HETSIM_ASSERT(!ok(), "errors() of a good Result"); return std::get<1>(v_); }

 private:
  std::variant<T, Diagnostics> v_;
};

}  // namespace hetsim
