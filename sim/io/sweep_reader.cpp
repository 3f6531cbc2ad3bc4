#include "sim/io/sweep_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/base/nearest.hpp"
#include "sim/io/detail/scenario_document.hpp"
#include "sim/io/detail/toml_reader.hpp"
#include "sim/io/input_file.hpp"

namespace hetsim::io {

namespace {

using detail::TableRef;
using detail::TomlReader;

constexpr std::size_t kMaxAxisValues = 1'000'000;
constexpr std::size_t kMaxPoints = 10'000'000;

// One step of a key path: a key, then array indices ("pool[1]" is {"pool", {1}}).
struct Step {
  std::string key;
  std::vector<std::size_t> indices;
};

// "cluster.pool[1].nodes" or "cluster.pool.1.nodes" (a number after a dot indexes the array
// before it); std::nullopt when malformed.
std::optional<std::vector<Step>> parse_path(std::string_view path) {
  std::vector<Step> out;
  std::size_t i = 0;
  auto number = [&](std::size_t& v) {
    const std::size_t start = i;
    v = 0;
    while (i < path.size() && path[i] >= '0' && path[i] <= '9') {
      if (v > 1'000'000) return false;
      v = v * 10 + static_cast<std::size_t>(path[i++] - '0');
    }
    return i > start;
  };
  while (i <= path.size()) {
    if (i < path.size() && path[i] >= '0' && path[i] <= '9') {  // ".1." indexes the step before
      std::size_t v = 0;
      if (out.empty() || !number(v)) return std::nullopt;
      out.back().indices.push_back(v);
    } else {
      Step s;
      while (i < path.size() && path[i] != '.' && path[i] != '[') s.key += path[i++];
      if (s.key.empty()) return std::nullopt;
      while (i < path.size() && path[i] == '[') {
        ++i;
        std::size_t v = 0;
        if (!number(v) || i >= path.size() || path[i] != ']') return std::nullopt;
        ++i;
        s.indices.push_back(v);
      }
      out.push_back(std::move(s));
    }
    if (i == path.size()) break;
    if (path[i] != '.') return std::nullopt;
    ++i;
    if (i == path.size()) return std::nullopt;
  }
  return out;
}

// The path as the reader's messages write it: "cluster.pool[1].nodes".
std::string path_text(const std::vector<Step>& steps) {
  std::string s;
  for (const auto& st : steps) {
    if (!s.empty()) s += '.';
    s += st.key;
    for (auto i : st.indices) s += "[" + std::to_string(i) + "]";
  }
  return s;
}

// The node at `steps` in `doc`, or nullptr.
const toml::node* find(const toml::table& doc, const std::vector<Step>& steps) {
  const toml::node* n = &doc;
  for (const auto& st : steps) {
    const toml::table* t = n->as_table();
    if (t == nullptr) return nullptr;
    n = t->get(st.key);
    if (n == nullptr) return nullptr;
    for (auto i : st.indices) {
      const toml::array* a = n->as_array();
      if (a == nullptr || i >= a->size()) return nullptr;
      n = a->get(i);
    }
  }
  return n;
}

// Puts `value` at `steps` in `doc`: tables on the way that are missing are made; an array
// element must exist. "" on success, else why not.
std::string put(toml::table& doc, const std::vector<Step>& steps, const toml::node* value) {
  toml::table* t = &doc;
  std::string where;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const Step& st = steps[s];
    const bool last = s + 1 == steps.size();
    where += (where.empty() ? "" : ".") + st.key;
    if (last && st.indices.empty()) {
      if (value != nullptr) t->insert_or_assign(st.key, *value);
      return "";
    }
    toml::node* n = t->get(st.key);
    if (n == nullptr) {
      if (!st.indices.empty()) return "the scenario has no '" + where + "'";
      t->insert_or_assign(st.key, toml::table{});
      n = t->get(st.key);
    }
    for (std::size_t k = 0; k < st.indices.size(); ++k) {
      toml::array* a = n->as_array();
      if (a == nullptr) return "'" + where + "' is " + detail::type_name(*n) + ", not an array";
      const std::size_t i = st.indices[k];
      if (i >= a->size())
        return "'" + where + "' has " + std::to_string(a->size()) + " entr" + (a->size() == 1 ? "y" : "ies") +
               " (indices from 0), so no [" + std::to_string(i) + "]";
      where += "[" + std::to_string(i) + "]";
      if (last && k + 1 == st.indices.size()) {
        if (value != nullptr) a->replace(a->cbegin() + static_cast<std::ptrdiff_t>(i), *value);
        return "";
      }
      n = a->get(i);
    }
    t = n->as_table();
    if (t == nullptr) return "'" + where + "' is " + detail::type_name(*n) + ", not a table";
  }
  return "";
}

std::string value_text(const toml::node& n);

// A TOML value as JSON: strings, numbers, booleans, arrays and tables of them; anything else
// (dates, times) as its text.
nlohmann::json as_json(const toml::node& n) {
  if (const auto* s = n.as_string()) return s->get();
  if (const auto* i = n.as_integer()) return i->get();
  if (const auto* f = n.as_floating_point()) return f->get();
  if (const auto* b = n.as_boolean()) return b->get();
  if (const auto* a = n.as_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& el : *a) out.push_back(as_json(el));
    return out;
  }
  if (const auto* t = n.as_table()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : *t) out[std::string(k.str())] = as_json(v);
    return out;
  }
  return value_text(n);
}

// An array as compact JSON ([\"moe_act\",\"layernorm\"]): a row's typed JSON reads it back as an
// array, and a row read back from JSON dumps it to the same text (sweep/rows.cpp).
std::string array_text(const toml::array& a) { return as_json(a).dump(); }

// A value as a column shows it: a string without quotes, an array as JSON writes it, others as
// TOML writes them.
std::string value_text(const toml::node& n) {
  if (const auto* s = n.as_string()) return s->get();
  if (const auto* a = n.as_array()) return array_text(*a);
  if (const auto* f = n.as_floating_point()) {  // the shortest text that reads back the same
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f->get());
    std::string t(buf, ec == std::errc() ? end : buf);
    if (std::isfinite(f->get()) && t.find_first_of(".e") == std::string::npos) t += ".0";
    return t;
  }
  std::ostringstream o;
  n.visit([&o](const auto& v) { o << v; });
  return o.str();
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

// One axis or one case key: where the file names it, and its steps.
struct Column {
  std::string path;
  std::vector<Step> steps;
  SourceLoc where;
  std::string base;  ///< the scenario's own value as text ("" when it has none)
};

struct Axis {
  std::size_t column = 0;
  toml::array values;
  std::vector<std::string> texts;
};

struct Case {
  std::vector<std::size_t> columns;
  toml::array values;
  std::vector<std::string> texts;
};

// A number given to a range: a plain integer or float, or a string with a unit ("100Gbps").
struct RangeNumber {
  double v = 0;
  bool integer = false;
  std::string unit;  ///< "" for a plain number
};

class SweepParser {
 public:
  SweepParser(TomlReader& r, const toml::table& doc) : r_(r), doc_(doc) {}

  std::vector<Column> columns;
  std::vector<Axis> axes;
  std::vector<Case> cases;

  // Collects the axes of [sweep] (nested tables are dotted keys), in the file's order.
  void read_axes(const toml::table& t, const std::string& prefix, bool top) {
    struct Found {
      std::string path;
      const toml::node* node;
    };
    std::vector<Found> found;
    collect(t, prefix, top, found);
    std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
      const auto& x = a.node->source().begin;
      const auto& y = b.node->source().begin;
      return x.line != y.line ? x.line < y.line : x.column < y.column;
    });
    for (const auto& f : found) read_axis(f.path, *f.node);
  }

  void read_cases(const TableRef& sweep) {
    for (const TableRef& c : r_.table_array(sweep, "case")) {
      std::vector<std::pair<std::string, const toml::node*>> keys;
      flatten_case(*c.table, "", keys);
      std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {  // the file's order
        const auto& x = a.second->source().begin;
        const auto& y = b.second->source().begin;
        return x.line != y.line ? x.line < y.line : x.column < y.column;
      });
      if (keys.empty()) {
        r_.error(r_.loc(c.table), c.path, "an empty [[sweep.case]]", "give each case the key paths it sets, e.g. \"training.global_batch\" = 1024");
        continue;
      }
      Case k;
      for (const auto& [path, node] : keys) {
        auto col = column(path, *node, "sweep.case");
        if (!col) continue;
        if (std::find(k.columns.begin(), k.columns.end(), *col) != k.columns.end()) {
          r_.error(r_.loc(node), c.path + "." + path, "the case sets " + columns[*col].path + " twice");
          continue;
        }
        k.columns.push_back(*col);
        k.values.push_back(*node);
        k.texts.push_back(value_text(*node));
      }
      cases.push_back(std::move(k));
    }
  }

 private:
  TomlReader& r_;
  const toml::table& doc_;

  static bool reserved(std::string_view k) {
    return k == "command" || k == "engine" || k == "objective" || k == "combine" || k == "case";
  }

  template <class Found>
  void collect(const toml::table& t, const std::string& prefix, bool top, std::vector<Found>& out) {
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      if (top && reserved(key)) continue;
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      // A top-level key that is no key path (no dot) is a misspelt setting, not an axis.
      if (top && !v.is_table() && key.find_first_of(".[") == std::string::npos) {
        const std::vector<std::string> settings = {"command", "engine", "objective", "combine", "case"};
        const std::string near = nearest_name(key, settings);
        r_.error(r_.loc(k.source()), "sweep." + key, "unknown key '" + key + "' in [sweep]",
                 near.empty() ? "an axis is a scenario key path, e.g. \"training.global_batch\" = [256, 512]; the "
                                "settings are command, engine, objective, combine and [[sweep.case]]"
                              : "did you mean '" + near + "'?");
        continue;
      }
      if (const toml::table* sub = v.as_table(); sub != nullptr && !sub->contains("from") && !sub->contains("to"))
        collect(*sub, path, false, out);
      else
        out.push_back({path, &v});
    }
  }

  static void flatten_case(const toml::table& t, const std::string& prefix,
                           std::vector<std::pair<std::string, const toml::node*>>& out) {
    for (auto&& [k, v] : t) {
      const std::string path = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      if (const toml::table* sub = v.as_table()) flatten_case(*sub, path, out);
      else out.emplace_back(path, &v);
    }
  }

  // The column of key path `path` (made when new), or nullopt after an error.
  std::optional<std::size_t> column(const std::string& path, const toml::node& at, const std::string& table) {
    const auto steps = parse_path(path);
    if (!steps) {
      r_.error(r_.loc(&at), table + "." + path, "'" + path + "' is not a key path",
               "write a scenario key as \"table.key\", an array entry as \"cluster.pool[1].nodes\" (indices from 0)");
      return std::nullopt;
    }
    const std::string norm = path_text(*steps);
    for (std::size_t c = 0; c < columns.size(); ++c)
      if (columns[c].path == norm) return c;
    // The path must lead to a place in the scenario: arrays to an existing entry, scalars not
    // to be walked into. The key itself may be new (a default the scenario leaves out); the
    // reader then says whether it is a key at all.
    toml::table probe = doc_;
    if (const std::string why = put(probe, *steps, nullptr); !why.empty()) {
      r_.error(r_.loc(&at), table + "." + path, "the key path " + norm + " does not lead into the scenario: " + why,
               "sweep a key the scenario has or could have, e.g. \"cluster.pool[0].nodes\"");
      return std::nullopt;
    }
    Column col{norm, *steps, r_.loc(&at), ""};
    if (const toml::node* b = find(doc_, *steps)) col.base = value_text(*b);
    columns.push_back(std::move(col));
    return columns.size() - 1;
  }

  void read_axis(const std::string& path, const toml::node& v) {
    const std::string key = "sweep." + path;
    Axis a;
    if (const toml::array* arr = v.as_array()) {
      if (arr->empty()) {
        r_.error(r_.loc(&v), key, "the axis " + path + " has no values", "give at least one value");
        return;
      }
      a.values = *arr;
    } else if (const toml::table* t = v.as_table()) {
      if (!range(*t, TableRef{t, key}, a.values)) return;
    } else {
      r_.error(r_.loc(&v), key, "expected a list of values or a range, got " + detail::type_name(v),
               "write " + path + " = [1, 2, 4] or { from = 1, to = 8, step = 1 } (or times = 2, or count = 4)");
      return;
    }
    if (a.values.size() > kMaxAxisValues) {
      r_.error(r_.loc(&v), key, "the axis " + path + " has " + std::to_string(a.values.size()) + " values, more than " +
                                    std::to_string(kMaxAxisValues));
      return;
    }
    for (const auto& x : a.values) a.texts.push_back(value_text(x));
    auto col = column(path, v, "sweep");
    if (!col) return;
    if (std::any_of(axes.begin(), axes.end(), [&](const Axis& o) { return o.column == *col; })) {
      r_.error(r_.loc(&v), key, "the key " + columns[*col].path + " has two axes", "one axis per key");
      return;
    }
    a.column = *col;
    axes.push_back(std::move(a));
  }

  std::optional<RangeNumber> range_number(const TableRef& t, const char* key, bool required) {
    const toml::node* n = r_.node(t, key);
    if (n == nullptr) {
      if (required) r_.missing(t, key, "<number> (or a string with a unit, \"100Gbps\")");
      return std::nullopt;
    }
    RangeNumber out;
    if (const auto* i = n->as_integer()) {
      out.v = static_cast<double>(i->get());
      out.integer = true;
    } else if (const auto* f = n->as_floating_point()) {
      out.v = f->get();
    } else if (const auto* s = n->as_string()) {
      const std::string& text = s->get();
      char* end = nullptr;
      out.v = std::strtod(text.c_str(), &end);
      std::string unit(end);
      unit.erase(0, unit.find_first_not_of(' '));
      if (end == text.c_str() || unit.empty()) {
        r_.error(r_.loc(n), r_.key_path(t, key), "'" + text + "' is not a number with a unit",
                 "e.g. \"100Gbps\", \"2us\", \"80GiB\"");
        return std::nullopt;
      }
      out.unit = unit;
    } else {
      r_.error(r_.loc(n), r_.key_path(t, key), "expected a number, got " + detail::type_name(*n));
      return std::nullopt;
    }
    if (!std::isfinite(out.v)) {
      r_.error(r_.loc(n), r_.key_path(t, key), "not a finite number");
      return std::nullopt;
    }
    return out;
  }

  // A range table: { from, to, step } (linear), { from, to, times } (geometric) or
  // { from, to, count [, scale = "log"] } (evenly spaced, or evenly spaced in log).
  bool range(const toml::table& tbl, const TableRef& t, toml::array& out) {
    r_.check_keys(t, {"from", "to", "step", "times", "count", "scale"});
    const auto from = range_number(t, "from", true);
    const auto to = range_number(t, "to", true);
    const bool has_step = r_.node(t, "step") != nullptr, has_times = r_.node(t, "times") != nullptr,
               has_count = r_.node(t, "count") != nullptr;
    if (int(has_step) + int(has_times) + int(has_count) != 1) {
      r_.error(r_.loc(&tbl), t.path, "a range needs exactly one of step, times and count",
               "{ from = 8, to = 64, step = 8 }, { from = 8, to = 64, times = 2 } or { from = 1, to = 2, count = 5 }");
      return false;
    }
    if (!from || !to) return false;
    if (from->unit != to->unit) {
      r_.error(r_.loc(r_.node(t, "to")), r_.key_path(t, "to"),
               "from and to have different units ('" + from->unit + "' and '" + to->unit + "')",
               "write both in the same unit");
      return false;
    }
    std::vector<double> vs;
    bool integer = from->integer && to->integer;
    const double span = to->v - from->v;
    const double eps = 1e-9 * std::max({std::fabs(from->v), std::fabs(to->v), 1e-300});
    auto too_many = [&](double n) {
      if (n <= static_cast<double>(kMaxAxisValues)) return false;
      r_.error(r_.loc(&tbl), t.path, "the range has more than " + std::to_string(kMaxAxisValues) + " values");
      return true;
    };
    if (r_.node(t, "scale") != nullptr && !has_count) {
      r_.error(r_.loc(r_.node(t, "scale")), r_.key_path(t, "scale"), "scale applies to a range given by count");
      return false;
    }
    if (has_step) {
      const auto step = range_number(t, "step", true);
      if (!step) return false;
      if (!step->unit.empty() && step->unit != from->unit) {
        r_.error(r_.loc(r_.node(t, "step")), r_.key_path(t, "step"), "step is in '" + step->unit + "', from in '" + from->unit + "'");
        return false;
      }
      if (step->v == 0 || (span != 0 && (span > 0) != (step->v > 0))) {
        r_.error(r_.loc(r_.node(t, "step")), r_.key_path(t, "step"),
                 "step = " + format_number(step->v) + " never goes from " + format_number(from->v) + " to " +
                     format_number(to->v),
                 span >= 0 ? "a positive step" : "a negative step");
        return false;
      }
      integer = integer && step->integer;
      const double n = std::floor(span / step->v + 1e-9) + 1;
      if (too_many(n)) return false;
      for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) vs.push_back(from->v + static_cast<double>(k) * step->v);
    } else if (has_times) {
      const auto times = range_number(t, "times", true);
      if (!times) return false;
      if (!times->unit.empty() || !(times->v > 0) || times->v == 1 || from->v == 0 ||
          (span != 0 && (span > 0) != (times->v > 1)) || (from->v > 0) != (to->v > 0)) {
        r_.error(r_.loc(r_.node(t, "times")), r_.key_path(t, "times"),
                 "times = " + format_number(times->v) + " never goes from " + format_number(from->v) + " to " +
                     format_number(to->v),
                 "a factor above 1 from a smaller to a larger value of the same sign (below 1 the other way)");
        return false;
      }
      integer = integer && times->integer;
      for (double v = from->v; (times->v > 1 ? v <= to->v + eps : v >= to->v - eps); v *= times->v) {
        if (too_many(static_cast<double>(vs.size()) + 1)) return false;
        vs.push_back(v);
      }
    } else {
      const auto count = r_.integer(t, "count", 1, static_cast<std::int64_t>(kMaxAxisValues));
      if (!count) return false;
      bool log = false;
      if (auto sc = r_.choice(t, "scale", {"linear", "log"})) log = *sc == "log";
      else if (r_.node(t, "scale") != nullptr) return false;
      if (log && (from->v <= 0 || to->v <= 0)) {
        r_.error(r_.loc(&tbl), t.path, "a log scale needs from and to above 0");
        return false;
      }
      const auto n = static_cast<std::size_t>(*count);
      for (std::size_t k = 0; k < n; ++k) {
        const double f = n == 1 ? 0.0 : static_cast<double>(k) / static_cast<double>(n - 1);
        vs.push_back(log ? from->v * std::pow(to->v / from->v, f) : from->v + f * span);
      }
    }
    for (double v : vs) {
      // 12 significant digits: 0.1 + 0.2 is written 0.3; an integral value of integral ends stays an integer.
      const double rounded = std::strtod(format_number(v).c_str(), nullptr);
      if (!from->unit.empty()) out.push_back(format_number(rounded) + from->unit);
      else if (integer || (from->integer && to->integer && has_count && rounded == std::floor(rounded) &&
                           std::fabs(rounded) < 9e15))
        out.push_back(static_cast<std::int64_t>(std::llround(rounded)));
      else
        out.push_back(rounded);
    }
    return true;
  }
};

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

struct SweepDocument::Impl {
  SweepSpec spec;
  std::string text;
  hw::Catalog catalog;
  std::vector<Column> columns;
  std::vector<Axis> axes;
  std::vector<Case> cases;

  // Point i's values: (column, value) pairs.
  std::vector<std::pair<std::size_t, const toml::node*>> assignments(std::size_t i) const {
    std::vector<std::pair<std::size_t, const toml::node*>> out;
    if (i < spec.grid_points) {
      std::size_t rest = i;
      out.resize(axes.size());
      for (std::size_t a = axes.size(); a-- > 0;) {
        const std::size_t n = axes[a].values.size();
        const std::size_t k = spec.zip ? i : rest % n;
        if (!spec.zip) rest /= n;
        out[a] = {axes[a].column, axes[a].values.get(k)};
      }
    } else {
      const Case& c = cases[i - spec.grid_points];
      for (std::size_t k = 0; k < c.columns.size(); ++k) out.emplace_back(c.columns[k], c.values.get(k));
    }
    return out;
  }
};

std::string sweep_hash_hex(std::uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

const SweepSpec& SweepDocument::spec() const { return impl_->spec; }

std::vector<std::string> SweepDocument::values(std::size_t i) const {
  const Impl& m = *impl_;
  std::vector<std::string> out;
  out.reserve(m.columns.size());
  for (const auto& c : m.columns) out.push_back(c.base);
  for (const auto& [col, node] : m.assignments(i)) out[col] = value_text(*node);
  return out;
}

Result<Scenario> SweepDocument::scenario(std::size_t i) const {
  const Impl& m = *impl_;
  const auto as = m.assignments(i);
  std::string label = "sweep point " + std::to_string(i) + " (";
  for (std::size_t k = 0; k < as.size(); ++k)
    label += (k ? ", " : "") + m.columns[as[k].first].path + " = " + value_text(*as[k].second);
  label += "): ";
  Diagnostics diags;
  auto doc = detail::parse_toml(m.text, m.spec.file, diags);
  if (!doc) return diags;
  doc->erase("sweep");
  for (const auto& [col, node] : as)
    if (const std::string why = put(*doc, m.columns[col].steps, node); !why.empty())
      diags.push_back({m.columns[col].where, m.columns[col].path, label + why, ""});
  if (!diags.empty()) return diags;
  auto r = detail::read_scenario_document(*doc, m.spec.file, m.catalog, {.plan = m.spec.command != SweepCommand::Plan});
  if (r) return r;
  Diagnostics out = r.errors();
  for (auto& d : out) {
    if (d.where.line == 0)
      for (const auto& [col, node] : as) {
        const std::string& p = m.columns[col].path;
        if (d.key == p || d.key.rfind(p + ".", 0) == 0 || d.key.rfind(p + "[", 0) == 0) {
          d.where = m.columns[col].where;
          break;
        }
      }
    d.message = label + d.message;
  }
  return out;
}

Result<SweepDocument> parse_sweep(std::string_view text, const std::string& file, const hw::Catalog& catalog) {
  Diagnostics diags;
  auto doc = detail::parse_toml(text, file, diags);
  if (!doc) return diags;
  TomlReader r(file, diags);
  const TableRef root{&*doc, ""};
  auto sw = r.table(root, "sweep");
  if (!sw) {
    if (!r.failed())
      r.error({file, 1, 1}, "sweep", "the scenario has no [sweep] table",
              "add [sweep] with the keys to vary (docs/scenario-format.md#sweep), or run it with `hetsim estimate`");
    return diags;
  }
  auto impl = std::make_shared<SweepDocument::Impl>();
  SweepSpec& spec = impl->spec;
  spec.file = file;
  spec.hash = fnv1a(text);
  if (auto c = r.choice(*sw, "command", {"estimate", "simulate", "plan"}))
    spec.command = *c == "simulate" ? SweepCommand::Simulate : *c == "plan" ? SweepCommand::Plan : SweepCommand::Estimate;
  if (auto e = r.choice(*sw, "engine", {"native", "simgrid"})) {
    spec.simgrid = *e == "simgrid";
    if (spec.command != SweepCommand::Simulate)
      r.error(r.loc(r.node(*sw, "engine")), "sweep.engine", "engine applies to command = \"simulate\"");
  }
  if (auto o = r.choice(*sw, "objective", {"time", "cost"})) {
    spec.cost_objective = *o == "cost";
    if (spec.command != SweepCommand::Plan)
      r.error(r.loc(r.node(*sw, "objective")), "sweep.objective", "objective applies to command = \"plan\"");
  }
  if (auto c = r.choice(*sw, "combine", {"product", "zip"})) spec.zip = *c == "zip";

  toml::table base = *doc;
  base.erase("sweep");
  SweepParser p(r, base);
  p.read_axes(*sw->table, "", true);
  p.read_cases(*sw);
  if (r.failed()) return diags;
  if (p.axes.empty() && p.cases.empty()) {
    r.error(r.loc(sw->table), "sweep", "the [sweep] table has no axes and no cases",
            "add an axis, e.g. \"training.global_batch\" = [256, 512, 1024]");
    return diags;
  }
  if (!p.axes.empty()) {
    double n = spec.zip ? static_cast<double>(p.axes.front().values.size()) : 1.0;
    for (const auto& a : p.axes) {
      if (spec.zip && a.values.size() != p.axes.front().values.size())
        r.error(p.columns[a.column].where, "sweep." + p.columns[a.column].path,
                "zipped axes must have as many values each: " + p.columns[p.axes.front().column].path + " has " +
                    std::to_string(p.axes.front().values.size()) + ", " + p.columns[a.column].path + " has " +
                    std::to_string(a.values.size()),
                "give them the same number of values, or combine = \"product\"");
      if (!spec.zip) n *= static_cast<double>(a.values.size());
    }
    if (r.failed()) return diags;
    if (n + static_cast<double>(p.cases.size()) > static_cast<double>(kMaxPoints)) {
      r.error(r.loc(sw->table), "sweep",
              "the sweep has " + format_number(n + static_cast<double>(p.cases.size())) + " points, more than " +
                  std::to_string(kMaxPoints),
              "fewer values per axis, or combine = \"zip\"");
      return diags;
    }
    spec.grid_points = static_cast<std::size_t>(n);
  }
  spec.points = spec.grid_points + p.cases.size();
  spec.axes = p.axes.size();
  for (const auto& c : p.columns) spec.columns.push_back(c.path);
  impl->text = std::string(text);
  impl->catalog = catalog;
  impl->columns = std::move(p.columns);
  impl->axes = std::move(p.axes);
  impl->cases = std::move(p.cases);
  SweepDocument d;
  d.impl_ = std::move(impl);
  return d;
}

Result<SweepDocument> read_sweep(const std::filesystem::path& file, const hw::Catalog& catalog) {
  auto text = read_input_file(file, "scenario file");
  if (!text) return text.errors();
  return parse_sweep(*text, file.string(), catalog);
}

}  // namespace hetsim::io
