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

}  // namespace hetsim::gui
