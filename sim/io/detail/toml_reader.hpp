#pragma once
// Typed, diagnosed access to a TOML++ table: every problem becomes a Diagnostic with the file,
// line, column and key path, and unknown keys get a did-you-mean. Private to sim/io.

#include <toml++/toml.h>

#include <optional>
#include <string>
#include <vector>

#include "models/base/result.hpp"
#include "models/base/units.hpp"

namespace hetsim::io::detail {

/// A table being read, with its dotted path for messages.
struct TableRef {
  const toml::table* table = nullptr;
  std::string path;  ///< "" for the root, "cluster.pool[0]" …
};

class TomlReader {
 public:
  TomlReader(std::string file, Diagnostics& diags) : file_(std::move(file)), diags_(diags) {}

  [[nodiscard]] SourceLoc loc(const toml::source_region& r) const;
  [[nodiscard]] SourceLoc loc(const toml::node* n) const;
  void error(SourceLoc where, std::string key, std::string message, std::string hint = {});
  [[nodiscard]] std::string key_path(const TableRef& t, std::string_view key) const;

  /// Reports every key of `t` not in `allowed` (with a did-you-mean).
  void check_keys(const TableRef& t, const std::vector<std::string>& allowed);
  /// Reports a missing required key at the table's position.
  void missing(const TableRef& t, std::string_view key, std::string_view what);

  [[nodiscard]] const toml::node* node(const TableRef& t, std::string_view key) const;
  [[nodiscard]] std::optional<TableRef> table(const TableRef& t, std::string_view key);
  /// An array of tables (`[[x]]`); reports a wrong type.
  [[nodiscard]] std::vector<TableRef> table_array(const TableRef& t, std::string_view key);

  [[nodiscard]] std::optional<std::string> string(const TableRef& t, std::string_view key);
  [[nodiscard]] std::optional<std::int64_t> integer(const TableRef& t, std::string_view key,
                                                    std::int64_t min, std::int64_t max);
  /// A float; integers are accepted too.
  [[nodiscard]] std::optional<double> number(const TableRef& t, std::string_view key, double min,
                                             double max);
  [[nodiscard]] std::optional<bool> boolean(const TableRef& t, std::string_view key);
  /// A string with a unit, e.g. "80GiB"; a bare number is an error with a hint.
  [[nodiscard]] std::optional<double> quantity(const TableRef& t, std::string_view key,
                                               Dimension dim);
  /// One of `choices`; reports the choices otherwise.
  [[nodiscard]] std::optional<std::string> choice(const TableRef& t, std::string_view key,
                                                  const std::vector<std::string>& choices);

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] bool failed() const { return !diags_.empty(); }

 private:
  std::string file_;
  Diagnostics& diags_;
};

/// Parses TOML text; on a syntax error adds a Diagnostic and returns nullopt.
[[nodiscard]] std::optional<toml::table> parse_toml(std::string_view text, const std::string& file,
                                                    Diagnostics& diags);

/// "an integer", "a string", … for the type of `n`.
[[nodiscard]] std::string type_name(const toml::node& n);

}  // namespace hetsim::io::detail
