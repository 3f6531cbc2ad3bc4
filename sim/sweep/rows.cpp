#include "sim/sweep/rows.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace hetsim::sweep {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const char* command_name(const io::SweepSpec& s) {
  switch (s.command) {
    case io::SweepCommand::Estimate: return "estimate";
    case io::SweepCommand::Simulate: return s.simgrid ? "simulate --engine simgrid" : "simulate";
    case io::SweepCommand::Plan: return s.cost_objective ? "plan --objective cost" : "plan";
  }
  return "";
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return "";
  return fmt::format("{}", v);
}

// A column's value typed for JSON: an integer, a float, a boolean, an array (written as JSON by
// the sweep reader), else the text.
nlohmann::ordered_json typed(const std::string& s) {
  if (s == "true") return true;
  if (s == "false") return false;
  if (!s.empty() && s.front() == '[') {
    auto a = nlohmann::ordered_json::parse(s, nullptr, /*allow_exceptions=*/false);
    if (a.is_array()) return a;
  }
  const char* b = s.data();
  const char* e = s.data() + s.size();
  std::int64_t i = 0;
  if (auto [p, ec] = std::from_chars(b, e, i); ec == std::errc() && p == e) return i;
  double d = 0;
  if (auto [p, ec] = std::from_chars(b, e, d); ec == std::errc() && p == e && std::isfinite(d)) return d;
  return s;
}

const PoolFigures* pool_of(const Row& r, const std::string& name) {
  for (const auto& p : r.pools)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

std::vector<std::string> csv_columns(const Layout& l) {
  std::vector<std::string> c = {"point"};
  c.insert(c.end(), l.spec->columns.begin(), l.spec->columns.end());
  c.emplace_back("status");
  c.emplace_back("step_s");
  if (l.variability)
    for (const char* f : {"step_p50_s", "step_p90_s", "step_p99_s"}) c.emplace_back(f);
  for (const char* f : {"tokens_per_s", "mfu", "time_to_train_s", "goodput", "effective_time_to_train_s",
                        "cost_to_train_usd", "devices", "plan"})
    c.emplace_back(f);
  for (const auto& p : l.pools) {
    c.push_back(p + ".peak_GiB");
    c.push_back(p + ".fits");
  }
  c.emplace_back("error");
  return c;
}

nlohmann::ordered_json sweep_json(const Layout& l) {
  nlohmann::ordered_json j;
  j["file"] = l.spec->file;
  j["hash"] = io::sweep_hash_hex(l.spec->hash);
  j["points"] = l.spec->points;
  j["command"] = command_name(*l.spec);
  j["combine"] = l.spec->zip ? "zip" : "product";
  j["columns"] = l.spec->columns;
  j["axes"] = l.spec->axes;
  j["pools"] = l.pools;
  return j;
}

std::string file_header(Format f, const Layout& l) {
  if (f == Format::Jsonl) {
    nlohmann::ordered_json j;
    j["hetsim_sweep"] = 1;
    const nlohmann::ordered_json about = sweep_json(l);
    for (const auto& [k, v] : about.items()) j[k] = v;
    return j.dump() + "\n";
  }
  std::string out = fmt::format("# hetsim sweep: file={} hash={} points={} command={}\n", l.spec->file,
                                io::sweep_hash_hex(l.spec->hash), l.spec->points, command_name(*l.spec));
  const auto cols = csv_columns(l);
  for (std::size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + csv_field(cols[i]);
  return out + "\n";
}

nlohmann::ordered_json row_json(const Layout& l, const Row& r) {
  nlohmann::ordered_json j;
  j["point"] = r.point;
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  for (std::size_t c = 0; c < l.spec->columns.size() && c < r.values.size(); ++c)
    values[l.spec->columns[c]] = typed(r.values[c]);
  j["values"] = values;
  j["status"] = r.status();
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.has_figures) return j;
  j["step_s"] = r.step_s;
  if (r.sampled) {
    j["step_p50_s"] = r.step_p50_s;
    j["step_p90_s"] = r.step_p90_s;
    j["step_p99_s"] = r.step_p99_s;
  }
  j["tokens_per_s"] = r.tokens_per_s;
  j["mfu"] = r.mfu;
  j["time_to_train_s"] = r.time_to_train_s;
  j["goodput"] = r.goodput;
  j["effective_time_to_train_s"] = r.effective_time_to_train_s;
  j["cost_to_train_usd"] = r.cost_to_train_usd;
  j["devices"] = r.devices;
  j["plan"] = r.plan;
  nlohmann::ordered_json pools = nlohmann::ordered_json::array();
  for (const auto& p : r.pools)
    pools.push_back({{"name", p.name},
                     {"devices", p.devices},
                     {"peak_GiB", p.peak_bytes / kGiB},
                     {"capacity_GiB", p.capacity_bytes / kGiB},
                     {"fits", p.fits}});
  j["pools"] = pools;
  return j;
}

std::string row_line(Format f, const Layout& l, const Row& r) {
  if (f == Format::Jsonl) return row_json(l, r).dump() + "\n";
  std::string out = std::to_string(r.point);
  auto add = [&out](std::string_view s) {
    out += ',';
    out += csv_field(s);
  };
  for (std::size_t c = 0; c < l.spec->columns.size(); ++c) add(c < r.values.size() ? r.values[c] : "");
  add(r.status());
  const bool f_ = r.has_figures;
  add(f_ ? number(r.step_s) : "");
  if (l.variability)
    for (double v : {r.step_p50_s, r.step_p90_s, r.step_p99_s}) add(f_ && r.sampled ? number(v) : "");
  for (double v : {r.tokens_per_s, r.mfu, r.time_to_train_s, r.goodput, r.effective_time_to_train_s, r.cost_to_train_usd})
    add(f_ ? number(v) : "");
  add(f_ ? std::to_string(r.devices) : "");
  add(f_ ? r.plan : "");
  for (const auto& name : l.pools) {
    const PoolFigures* p = f_ ? pool_of(r, name) : nullptr;
    add(p ? number(p->peak_bytes / kGiB) : "");
    add(p ? (p->fits ? "true" : "false") : "");
  }
  add(r.error);
  return out + "\n";
}

std::string Finished::status() const { return ok ? "ok" : kind_name(kind); }

Finished finish(const Encoding& e, Row r) {
  HETSIM_ASSERT(e.layout.spec != nullptr || !(e.line || e.json), "a row's line and JSON need the sweep's layout");
  Finished f;
  f.point = r.point;
  f.ok = r.ok;
  f.kind = r.kind;
  if (e.json) f.json = row_json(e.layout, r).dump();
  if (e.line) f.line = e.format == Format::Jsonl && e.json ? f.json + "\n" : row_line(e.format, e.layout, r);
  if (e.row) f.row = std::move(r);
  return f;
}

namespace {

// A figure of a row read back (a figure that was not finite was written as null).
double figure(const nlohmann::json& j, const char* key, double otherwise) {
  const auto it = j.find(key);
  if (it == j.end()) return otherwise;
  return it->is_number() ? it->get<double>() : std::nan("");
}

std::string text(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

Row row_from_json(const nlohmann::json& j) {
  Row r;
  r.kind = ErrorKind::Internal;
  if (!j.is_object()) {
    r.error = "error: a row that is not a JSON object";
    return r;
  }
  const std::string status = text(j, "status");
  r.ok = status == "ok";
  for (ErrorKind k : {ErrorKind::BadInput, ErrorKind::DoesNotFit, ErrorKind::Environment, ErrorKind::Internal})
    if (status == kind_name(k)) r.kind = k;
  r.error = text(j, "error");
  r.has_figures = j.contains("step_s");
  if (!r.has_figures) return r;
  r.step_s = figure(j, "step_s", 0);
  r.sampled = j.contains("step_p50_s");
  r.step_p50_s = figure(j, "step_p50_s", 0);
  r.step_p90_s = figure(j, "step_p90_s", 0);
  r.step_p99_s = figure(j, "step_p99_s", 0);
  r.tokens_per_s = figure(j, "tokens_per_s", 0);
  r.mfu = figure(j, "mfu", 0);
  r.time_to_train_s = figure(j, "time_to_train_s", 0);
  r.goodput = figure(j, "goodput", 1);
  r.effective_time_to_train_s = figure(j, "effective_time_to_train_s", 0);
  r.cost_to_train_usd = figure(j, "cost_to_train_usd", 0);
  r.devices = static_cast<int>(figure(j, "devices", 0));
  r.plan = text(j, "plan");
  if (const auto p = j.find("pools"); p != j.end() && p->is_array())
    for (const auto& x : *p) {
      if (!x.is_object()) continue;
      const auto fits = x.find("fits");
      r.pools.push_back({text(x, "name"), figure(x, "peak_GiB", 0) * kGiB, figure(x, "capacity_GiB", 0) * kGiB,
                         static_cast<int>(figure(x, "devices", 0)), fits != x.end() && fits->is_boolean() && fits->get<bool>()});
    }
  return r;
}

namespace {

// The fields of one CSV line as csv_field writes them.
std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

double to_double(const std::string& s) { return s.empty() ? 0 : std::strtod(s.c_str(), nullptr); }

}  // namespace

namespace {

// The header's lines without the scenario file's name: a sweep resumed from another folder (or
// with the path spelt otherwise) is the same sweep; its hash says so.
std::string without_file(Format f, std::string_view first_line) {
  if (f == Format::Jsonl) {
    auto j = nlohmann::json::parse(first_line, nullptr, false);
    if (!j.is_object()) return std::string(first_line);
    j.erase("file");
    return j.dump();
  }
  const auto a = first_line.find(" file=");
  const auto b = a == std::string_view::npos ? a : first_line.find(" hash=", a);
  if (b == std::string_view::npos) return std::string(first_line);
  return std::string(first_line.substr(0, a)) + std::string(first_line.substr(b));
}

// The length of the header at the start of `content` (its first 1 or 2 lines), or npos.
std::size_t header_length(Format f, std::string_view content) {
  std::size_t at = 0;
  for (int line = 0; line < (f == Format::Csv ? 2 : 1); ++line) {
    at = content.find('\n', at);
    if (at == std::string_view::npos) return at;
    ++at;
  }
  return at;
}

}  // namespace

std::vector<Row> read_rows(Format f, const Layout& l, std::string_view content) {
  std::vector<Row> rows;
  std::size_t at = header_length(f, content);
  if (at == std::string_view::npos) return rows;
  const auto cols = csv_columns(l);
  const std::size_t nv = l.spec->columns.size();
  for (std::size_t nl; (nl = content.find('\n', at)) != std::string_view::npos; at = nl + 1) {
    const std::string_view line = content.substr(at, nl - at);
    Row r;
    if (f == Format::Jsonl) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object()) break;
      r = row_from_json(j);
      r.point = j.value("point", std::size_t{0});
      for (const auto& c : l.spec->columns) {
        const auto& v = j["values"][c];
        r.values.push_back(v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump());
      }
    } else {
      const auto fl = csv_fields(line);
      if (fl.size() != cols.size()) break;
      std::size_t k = 0;
      r.point = static_cast<std::size_t>(to_double(fl[k++]));
      for (std::size_t c = 0; c < nv; ++c) r.values.push_back(fl[k++]);
      const std::string status = fl[k++];
      r.ok = status == "ok";
      for (ErrorKind e : {ErrorKind::BadInput, ErrorKind::DoesNotFit, ErrorKind::Environment, ErrorKind::Internal})
        if (status == kind_name(e)) r.kind = e;
      r.has_figures = !fl[k].empty();
      r.step_s = to_double(fl[k++]);
      if (l.variability) {
        r.sampled = !fl[k].empty();
        r.step_p50_s = to_double(fl[k++]);
        r.step_p90_s = to_double(fl[k++]);
        r.step_p99_s = to_double(fl[k++]);
      }
      r.tokens_per_s = to_double(fl[k++]);
      r.mfu = to_double(fl[k++]);
      r.time_to_train_s = to_double(fl[k++]);
      r.goodput = to_double(fl[k++]);
      r.effective_time_to_train_s = to_double(fl[k++]);
      r.cost_to_train_usd = to_double(fl[k++]);
      r.devices = static_cast<int>(to_double(fl[k++]));
      r.plan = fl[k++];
      for (const auto& p : l.pools) {
        const std::string peak = fl[k++], fits = fl[k++];
        if (!peak.empty()) r.pools.push_back({p, to_double(peak) * kGiB, 0, 0, fits == "true"});
      }
      r.error = fl[k];
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

Result<Existing> check_existing(Format f, const Layout& l, std::string_view content, const std::string& file) {
  const std::string expected = file_header(f, l);
  const std::size_t length = header_length(f, content);
  auto same = [&] {
    if (length == std::string_view::npos) return false;
    const std::string_view have = content.substr(0, length);
    const std::size_t e1 = expected.find('\n'), h1 = have.find('\n');
    return without_file(f, have.substr(0, h1)) == without_file(f, std::string_view(expected).substr(0, e1)) &&
           have.substr(h1) == std::string_view(expected).substr(e1);
  };
  const std::string header(length == std::string_view::npos ? expected : std::string(content.substr(0, length)));
  if (!same()) {
    const std::string hash = io::sweep_hash_hex(l.spec->hash);
    const bool other = content.find(hash) == std::string_view::npos;
    return about(file, "--resume",
                 other ? "this results file was written by a different sweep (its header does not carry this "
                         "sweep's hash " + hash + ")"
                       : "this results file's header differs from this sweep's (another format or other pools)",
                 "write to a new file, or run without --resume to start this sweep over");
  }
  Existing e;
  e.keep_bytes = header.size();
  std::size_t at = header.size();
  while (true) {
    const std::size_t nl = content.find('\n', at);
    if (nl == std::string_view::npos) break;  // a line cut short: dropped, its point runs again
    const std::string_view line = content.substr(at, nl - at);
    std::size_t point = 0;
    bool ok = false;
    if (f == Format::Csv) {
      const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), point);
      ok = ec == std::errc() && p != line.data() + line.size() && *p == ',';
    } else {
      auto j = nlohmann::json::parse(line, nullptr, false);
      ok = j.is_object() && j.contains("point") && j["point"].is_number_unsigned();
      if (ok) point = j["point"].get<std::size_t>();
    }
    if (!ok || point != e.rows || point >= l.spec->points)
      return about(file, "--resume",
                   fmt::format("line {} of this results file is not the row of point {}", e.rows + 2 + (f == Format::Csv),
                               e.rows),
                   "the file was edited or written by something else: write to a new file");
    ++e.rows;
    at = nl + 1;
    e.keep_bytes = at;
  }
  return e;
}

}  // namespace hetsim::sweep
