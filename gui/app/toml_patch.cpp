#include "gui/app/toml_patch.hpp"

#include <QRegularExpression>
#include <QStringList>

namespace hetsim::gui {

namespace {

struct Span {
  int header = -1;  ///< the table's header line
  int end = 0;      ///< one past its last line (the next header, or the end)
};

bool is_header(const QString& line) { return line.trimmed().startsWith('['); }

// A header line's table name ("cluster.pool" for `[[cluster.pool]]  # …`), empty for any other line.
QString header_name(const QString& line) {
  static const QRegularExpression re(R"(^\s*\[\[?\s*([^\[\]#]+?)\s*\]\]?\s*(#.*)?$)");
  const auto m = re.match(line);
  return m.hasMatch() ? m.captured(1) : QString();
}

// One past the last line of `table` and the sub-tables right after it.
int end_with_subtables(const QStringList& lines, const TomlTable& table, int end) {
  while (end < lines.size() && header_name(lines[end]).startsWith(table.name + '.')) {
    ++end;
    while (end < lines.size() && !is_header(lines[end])) ++end;
  }
  return end;
}

// `end` moved back over the comment and blank lines that close a table (they stand before what
// follows it), never above `first`.
int trim_closing(const QStringList& lines, int first, int end) {
  while (end > first) {
    const QString t = lines[end - 1].trimmed();
    if (!t.isEmpty() && !t.startsWith('#')) break;
    --end;
  }
  return end;
}

// The lines of `table` in `lines`.
std::optional<Span> find_table(const QStringList& lines, const TomlTable& table) {
  const QString name = QRegularExpression::escape(table.name);
  const QRegularExpression header(table.array ? QString(R"(^\s*\[\[\s*%1\s*\]\]\s*(#.*)?$)").arg(name)
                                              : QString(R"(^\s*\[\s*%1\s*\]\s*(#.*)?$)").arg(name));
  int seen = 0;
  for (int i = 0; i < lines.size(); ++i) {
    if (!header.match(lines[i]).hasMatch()) continue;
    if (table.array && seen++ != table.index) continue;
    Span s{i, static_cast<int>(lines.size())};
    for (int j = i + 1; j < lines.size(); ++j)
      if (is_header(lines[j])) {
        s.end = j;
        break;
      }
    return s;
  }
  return std::nullopt;
}

QRegularExpression key_line(const QString& key) {
  // key = value   # comment   (the value may be a quoted string holding '#')
  return QRegularExpression(QString(R"(^(\s*%1\s*=\s*)("(?:[^"\\]|\\.)*"|[^#]*?)(\s*(#.*)?)$)")
                                .arg(QRegularExpression::escape(key)));
}

}  // namespace

std::optional<QString> toml_value(const QString& text, const TomlTable& table, const QString& key) {
  const QStringList lines = text.split('\n');
  const auto span = find_table(lines, table);
  if (!span) return std::nullopt;
  const QRegularExpression re = key_line(key);
  for (int i = span->header + 1; i < span->end; ++i)
    if (const auto m = re.match(lines[i]); m.hasMatch()) return m.captured(2).trimmed();
  return std::nullopt;
}

std::optional<QString> set_toml_value(const QString& text, const TomlTable& table, const QString& key,
                                      const QString& value) {
  QStringList lines = text.split('\n');
  const auto span = find_table(lines, table);
  const QString v = value.trimmed();
  if (!span && (table.array || v.isEmpty())) return table.array ? std::nullopt : std::optional<QString>(text);
  if (!span) {
    QString out = text;
    if (!out.endsWith('\n')) out += '\n';
    return out + "\n[" + table.name + "]\n" + key + " = " + v + "\n";
  }
  const QRegularExpression re = key_line(key);
  for (int i = span->header + 1; i < span->end; ++i) {
    const auto m = re.match(lines[i]);
    if (!m.hasMatch()) continue;
    if (v.isEmpty())
      lines.removeAt(i);
    else
      lines[i] = m.captured(1) + v + m.captured(3);
    return lines.join('\n');
  }
  if (v.isEmpty()) return text;
  // After the table's last non-blank line that is not a comment.
  int at = span->header + 1;
  for (int i = span->header + 1; i < span->end; ++i) {
    const QString t = lines[i].trimmed();
    if (!t.isEmpty() && !t.startsWith('#')) at = i + 1;
  }
  lines.insert(at, key + " = " + v);
  return lines.join('\n');
}

int toml_array_count(const QString& text, const QString& name) {
  int n = 0;
  for (const QString& line : text.split('\n'))
    if (line.trimmed().startsWith("[[") && header_name(line) == name) ++n;
  return n;
}

bool has_toml_table(const QString& text, const TomlTable& table) {
  return find_table(text.split('\n'), table).has_value();
}

QStringList toml_subtables(const QString& text, const TomlTable& table) {
  const QStringList lines = text.split('\n');
  const auto span = find_table(lines, table);
  QStringList out;
  if (!span) return out;
  const int end = end_with_subtables(lines, table, span->end);
  for (int i = span->end; i < end; ++i)
    if (const QString h = header_name(lines[i]); !h.isEmpty()) out << h;
  return out;
}

QString add_toml_array_table(const QString& text, const QString& name, const QStringList& lines_in) {
  QStringList block{"[[" + name + "]]"};
  block << lines_in;
  QStringList lines = text.split('\n');
  const int count = toml_array_count(text, name);
  if (count == 0) {
    QString out = text;
    if (!out.isEmpty() && !out.endsWith('\n')) out += '\n';
    return out + (out.isEmpty() ? "" : "\n") + block.join('\n') + '\n';
  }
  const TomlTable last{name, true, count - 1};
  const auto span = find_table(lines, last);
  const int at = trim_closing(lines, span->header + 1, end_with_subtables(lines, last, span->end));
  block.prepend(QString());
  for (int i = 0; i < block.size(); ++i) lines.insert(at + i, block[i]);
  return lines.join('\n');
}

std::optional<QString> copy_toml_array_table(const QString& text, const QString& name, int index) {
  const QStringList lines = text.split('\n');
  const TomlTable table{name, true, index};
  const auto span = find_table(lines, table);
  if (!span) return std::nullopt;
  const int end = trim_closing(lines, span->header + 1, end_with_subtables(lines, table, span->end));
  return add_toml_array_table(text, name, lines.mid(span->header + 1, end - span->header - 1));
}

std::optional<QString> remove_toml_table(const QString& text, const TomlTable& table) {
  QStringList lines = text.split('\n');
  const auto span = find_table(lines, table);
  if (!span) return std::nullopt;
  const int end = trim_closing(lines, span->header + 1, end_with_subtables(lines, table, span->end));
  for (int i = end; i-- > span->header;) lines.removeAt(i);
  // One blank line where the table was, not two; none at the top.
  const int at = span->header;
  const bool blank_after = at < lines.size() && lines[at].trimmed().isEmpty();
  if (at == 0 && blank_after && lines.size() > 1)
    lines.removeAt(0);
  else if (at > 0 && lines[at - 1].trimmed().isEmpty() && (at == lines.size() || blank_after))
    lines.removeAt(at - 1);
  return lines.join('\n');
}

}  // namespace hetsim::gui
