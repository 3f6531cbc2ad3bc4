#include "sim/io/detail/toml_reader.hpp"

#include <cmath>

#include "models/base/nearest.hpp"

namespace hetsim::io::detail {

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

std::optional<toml::table> parse_toml(std::string_view text, const std::string& file,
                                      Diagnostics& diags) {
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& err) {
    diags.push_back({{file, err.source().begin.line, err.source().begin.column}, "",
                     "TOML syntax: " + std::string(err.description()), ""});
    return std::nullopt;
  }
#else
  toml::parse_result r = toml::parse(text, file);
  if (!r) {
    const auto& err = r.error();
    diags.push_back({{file, err.source().begin.line, err.source().begin.column}, "",
                     "TOML syntax: " + std::string(err.description()), ""});
    return std::nullopt;
  }
  return std::move(r).table();
#endif
}

SourceLoc TomlReader::loc(const toml::source_region& r) const {
  return {file_, r.begin.line, r.begin.column};
}

SourceLoc TomlReader::loc(const toml::node* n) const {
  if (n == nullptr) return {file_, 0, 0};
  return loc(n->source());
}

void TomlReader::error(SourceLoc where, std::string key, std::string message, std::string hint) {
  diags_.push_back({std::move(where), std::move(key), std::move(message), std::move(hint)});
}

std::string TomlReader::key_path(const TableRef& t, std::string_view key) const {
  return t.path.empty() ? std::string(key) : t.path + "." + std::string(key);
}

void TomlReader::check_keys(const TableRef& t, const std::vector<std::string>& allowed) {
  for (auto&& [k, v] : *t.table) {
    const std::string name(k.str());
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == name;
    if (ok) continue;
    const std::string near = nearest_name(name, allowed);
    std::string hint = near.empty() ? suggest(name, allowed) : "did you mean '" + near + "'?";
    error(loc(k.source()), key_path(t, name),
          "unknown key '" + name + "' in " + (t.path.empty() ? "the top level" : "[" + t.path + "]"),
          hint);
  }
}

void TomlReader::missing(const TableRef& t, std::string_view key, std::string_view what) {
  error(loc(t.table), key_path(t, key), "missing key '" + std::string(key) + "'",
        "add " + std::string(key) + " = " + std::string(what));
}

const toml::node* TomlReader::node(const TableRef& t, std::string_view key) const {
  return t.table->get(key);
}

std::optional<TableRef> TomlReader::table(const TableRef& t, std::string_view key) {
  const toml::node* n = node(t, key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_table()) {
    error(loc(n), key_path(t, key), "expected a table, got " + type_name(*n),
          "write it as [" + key_path(t, key) + "]");
    return std::nullopt;
  }
  return TableRef{n->as_table(), key_path(t, key)};
}

std::vector<TableRef> TomlReader::table_array(const TableRef& t, std::string_view key) {
  std::vector<TableRef> out;
  const toml::node* n = node(t, key);
  if (n == nullptr) return out;
  const toml::array* arr = n->as_array();
  if (arr == nullptr) {
    error(loc(n), key_path(t, key), "expected an array of tables, got " + type_name(*n),
          "write each entry as [[" + key_path(t, key) + "]]");
    return out;
  }
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const toml::node& el = (*arr)[i];
    const std::string p = key_path(t, key) + "[" + std::to_string(i) + "]";
    if (!el.is_table()) {
      error(loc(&el), p, "expected a table, got " + type_name(el));
      continue;
    }
    out.push_back({el.as_table(), p});
  }
  return out;
}

std::optional<std::string> TomlReader::string(const TableRef& t, std::string_view key) {
  const toml::node* n = node(t, key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_string()) {
    error(loc(n), key_path(t, key), "expected a string, got " + type_name(*n),
          "quote it: " + std::string(key) + " = \"…\"");
    return std::nullopt;
  }
  return n->as_string()->get();
}

std::optional<std::int64_t> TomlReader::integer(const TableRef& t, std::string_view key,
                                                std::int64_t min, std::int64_t max) {
  const toml::node* n = node(t, key);
  if (n == nullptr) return std::nullopt;
  std::int64_t v = 0;
  if (n->is_integer()) {
    v = n->as_integer()->get();
  } else if (n->is_floating_point() && std::floor(n->as_floating_point()->get()) ==
                                           n->as_floating_point()->get() &&
             std::fabs(n->as_floating_point()->get()) < 9e15) {
    v = static_cast<std::int64_t>(n->as_floating_point()->get());  // 1e3 means 1000
  } else {
    error(loc(n), key_path(t, key), "expected an integer, got " + type_name(*n),
          n->is_string() ? "counts are plain integers, without quotes or units" : "");
    return std::nullopt;
  }
  if (v < min || v > max) {
    error(loc(n), key_path(t, key),
          std::string(key) + " = " + std::to_string(v) + " is out of range",
          "expected " + std::to_string(min) + " to " + std::to_string(max));
    return std::nullopt;
  }
  return v;
}

std::optional<double> TomlReader::number(const TableRef& t, std::string_view key, double min,
                                         double max) {
  const toml::node* n = node(t, key);
  if (n == nullptr) return std::nullopt;
  double v = 0;
  if (n->is_floating_point()) v = n->as_floating_point()->get();
  else if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
  else {
    error(loc(n), key_path(t, key), "expected a number, got " + type_name(*n));
    return std::nullopt;
  }
  if (!(v >= min && v <= max)) {
    char said[64], buf[160];
    std::snprintf(said, sizeof said, "%.6g", v);
    std::snprintf(buf, sizeof buf, "expected %g to %g", min, max);
    error(loc(n), key_path(t, key), std::string(key) + " = " + said + " is out of range", buf);
    return std::nullopt;
  }
  return v;
}

std::optional<bool> TomlReader::boolean(const TableRef& t, std::string_view key) {
  const toml::node* n = node(t, key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_boolean()) {
    error(loc(n), key_path(t, key), "expected true or false, got " + type_name(*n));
    return std::nullopt;
  }
  return n->as_boolean()->get();
}

std::optional<double> TomlReader::quantity(const TableRef& t, std::string_view key, Dimension dim) {
  const toml::node* n = node(t, key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_string()) {
    std::string hint = "write " + std::string(dimension_name(dim)) + " as a string with a unit (" +
                       std::string(dimension_units(dim)) + ")";
    error(loc(n), key_path(t, key),
          "expected " + std::string(dimension_name(dim)) + " with a unit, got " + type_name(*n),
          hint);
    return std::nullopt;
  }
  ParsedQuantity q = parse_quantity(n->as_string()->get(), dim);
  if (!q.ok()) {
    error(loc(n), key_path(t, key), q.error + " in " + key_path(t, key), q.hint);
    return std::nullopt;
  }
  // Beyond anything physical: numbers past these would overflow the arithmetic they enter
  // (bytes in 64-bit counts, times in nanoseconds) or print as null in JSON. Keys with a
  // tighter range check it where they are read.
  struct Cap {
    double hi;
    const char* said;
  };
  auto cap = [](Dimension d) -> Cap {
    switch (d) {
      case Dimension::Size: return {1125899906842624.0 * 1024, "1 EiB"};
      case Dimension::Bandwidth: return {1e21, "1 ZB/s"};
      case Dimension::Time: return {1e9, "10^9 s (about 32 years)"};
      case Dimension::Compute: return {1e21, "1 ZFLOPS"};
      case Dimension::Power: return {1e9, "1 GW"};
    }
    return {0, ""};
  };
  // A positive bandwidth below 1 KB/s is no link: it would stretch a step past what the
  // simulated clock (int64 nanoseconds) holds. 0 is left to each key's own "must be positive".
  if (dim == Dimension::Bandwidth && q.value > 0 && q.value < 1e3) {
    error(loc(n), key_path(t, key), "bandwidth out of range in " + key_path(t, key) + ": at least 1 KB/s",
          "a physical value, e.g. \"400Gbps\"");
    return std::nullopt;
  }
  if (const Cap c = cap(dim); !std::isfinite(q.value) || q.value < 0 || q.value > c.hi) {
    error(loc(n), key_path(t, key),
          std::string(dimension_name(dim)) + " out of range in " + key_path(t, key) + ": at most " + c.said,
          "a physical value, e.g. " + std::string(dimension_units(dim)));
    return std::nullopt;
  }
  return q.value;
}

std::optional<std::string> TomlReader::choice(const TableRef& t, std::string_view key,
                                              const std::vector<std::string>& choices) {
  auto s = string(t, key);
  if (!s) return std::nullopt;
  for (const auto& c : choices)
    if (c == *s) return s;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "\"" : ", \"") + c + "\"";
  const std::string near = nearest_name(*s, choices);
  error(loc(node(t, key)), key_path(t, key), "unknown " + std::string(key) + " \"" + *s + "\"",
        (near.empty() ? "" : "did you mean \"" + near + "\"? ") + "expected one of " + list);
  return std::nullopt;
}

}  // namespace hetsim::io::detail
