#pragma once
// Small edits of a scenario's TOML text for the forms: read or set one `key = value` line of a
// table, leaving every other line (comments, order, spacing) as it was, so that the file stays
// the user's and the reader checks the result as it checks any file. Handles a table opened by
// `[name]` or the n-th `[[name]]`, with its keys on lines of their own (what scenario files use);
// not dotted keys, inline tables or values over several lines.

#include <QString>

#include <optional>

namespace hetsim::gui {

/// Where a key lives: the table `name` ("purchase"), or the `index`-th (0-based) table of the
/// array `name` ("purchase.candidate") when `array` is set.
struct TomlTable {
  QString name;
  bool array = false;
  int index = 0;
};

/// The value text of `key` in `table` ("12e6", "\"pareto\""), without a trailing comment;
/// nullopt when the table or the key is not there.
[[nodiscard]] std::optional<QString> toml_value(const QString& text, const TomlTable& table, const QString& key);

/// `text` with `key = value` in `table`: the key's line rewritten (its comment kept), or a new
/// line after the table's last key line; an empty `value` removes the key's line. A missing
/// plain table is added at the end; nullopt when an array's table is not there.
[[nodiscard]] std::optional<QString> set_toml_value(const QString& text, const TomlTable& table, const QString& key,
                                                    const QString& value);

}  // namespace hetsim::gui
