#pragma once
// Small edits of a scenario's TOML text for the forms: read or set one `key = value` line of a
// table, add or remove a whole table, leaving every other line (comments, order, spacing) as it
// was, so that the file stays the user's and the reader checks the result as it checks any file.
// Handles a table opened by `[name]` or the n-th `[[name]]`, with its keys on lines of their own
// (what scenario files use); not dotted keys, inline tables or values over several lines.

#include <QString>
#include <QStringList>

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

/// How many `[[name]]` tables `text` has (the index space of TomlTable::index).
[[nodiscard]] int toml_array_count(const QString& text, const QString& name);
/// Whether `text` has the table `table` (`[name]`, or the index-th `[[name]]`).
[[nodiscard]] bool has_toml_table(const QString& text, const TomlTable& table);
/// The names of the sub-tables written right after `table` ("cluster.pool.device" after a
/// `[[cluster.pool]]` with an inline device), in order.
[[nodiscard]] QStringList toml_subtables(const QString& text, const TomlTable& table);

/// `text` with a new `[[name]]` table of `lines` ("key = value"), after the last `[[name]]` table
/// and its sub-tables (their trailing comments stay with what follows), or at the end.
[[nodiscard]] QString add_toml_array_table(const QString& text, const QString& name, const QStringList& lines);
/// `text` with a copy of the index-th `[[name]]` table (its lines and sub-tables, as
/// remove_toml_table would take them; not its header's comment) after the last `[[name]]` table;
/// nullopt when it is not there.
[[nodiscard]] std::optional<QString> copy_toml_array_table(const QString& text, const QString& name, int index);
/// `text` without `table`: its header, its lines and the sub-tables (`[name.…]`, `[[name.…]]`)
/// right after it, except the comment and blank lines that end it (they stand before what
/// follows). nullopt when the table is not there.
[[nodiscard]] std::optional<QString> remove_toml_table(const QString& text, const TomlTable& table);

}  // namespace hetsim::gui
