#include "sim/io/trace_json.hpp"

#include <fstream>
#include <limits>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/io/input_file.hpp"
#include "sim/io/json_strict.hpp"

namespace hetsim::io {

TraceFile make_trace_file(const schedule::TaskGraph& g, const engine::Trace& t, std::string source,
                          const std::vector<TaskParts>& parts) {
  TraceFile f;
  f.source = std::move(source);
  f.makespan_ns = t.makespan;
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    f.devices.push_back(g.devices[d].label);
    f.peak_bytes.push_back(d < t.peak_bytes.size() ? t.peak_bytes[d] : 0);
  }
  for (std::uint32_t i = 0; i < g.tasks.size(); ++i) {
    const auto& task = g.tasks[i];
    f.tasks.push_back({task.device, std::string(schedule::task_kind_name(task.kind)), schedule::task_name(task),
                       t.start[i], t.end[i], i < parts.size() ? parts[i] : TaskParts{}});
  }
  return f;
}

std::string trace_to_json(const TraceFile& t) {
  nlohmann::ordered_json j;
  j["format"] = "hetsim-trace";
  j["version"] = 1;
  j["source"] = t.source;
  j["makespan_ns"] = t.makespan_ns;
  j["devices"] = nlohmann::ordered_json::array();
  for (std::size_t d = 0; d < t.devices.size(); ++d)
    j["devices"].push_back({{"label", t.devices[d]}, {"peak_bytes", t.peak_bytes[d]}});
  j["tasks"] = nlohmann::ordered_json::array();
  for (const auto& k : t.tasks) {
    nlohmann::ordered_json task = {{"device", k.device}, {"kind", k.kind}, {"name", k.name}, {"start_ns", k.start_ns},
                                   {"end_ns", k.end_ns}};
    if (!k.parts.empty()) {
      task["parts_ns"] = nlohmann::ordered_json::object();
      for (const auto& [cls, ns] : k.parts) task["parts_ns"][cls] = ns;
    }
    j["tasks"].push_back(std::move(task));
  }
  return j.dump(1) + "\n";
}

namespace {
const char* const kTraceHint = "traces are written by `hetsim-exec run --out MEASURED.json --predicted PREDICTED.json`";
}  // namespace

Result<TraceFile> read_trace_json(const std::filesystem::path& file) {
  auto read = read_input_file(file, "trace file", kTraceHint);
  if (!read) return read.errors();
  return parse_trace_json(*read, file.string());
}

Result<TraceFile> parse_trace_json(std::string_view text, const std::string& name) {
  const std::string hint = kTraceHint;
  auto parsed = parse_json_strict(text, name, hint);  // ordered: op classes keep their order
  if (!parsed) return parsed.errors();
  const nlohmann::ordered_json& j = *parsed;
  // value() throws when a key holds another type: read the header keys only as what they are.
  auto text_of = [&](const char* key) -> std::string {
    return j.is_object() && j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : "";
  };
  if (!j.is_object() || text_of("format") != "hetsim-trace") {
    const std::string format = text_of("format");
    return Diagnostic{{name, 0, 0}, "/format",
                      format.empty() ? "not a hetsim trace (\"format\": \"hetsim-trace\" missing)"
                                     : "this is a " + format + " file, not a hetsim trace",
                      "compare takes two traces; " + hint};
  }
  if (!j.contains("version") || !j.at("version").is_number_integer() || j.at("version").get<std::int64_t>() != 1)
    return Diagnostic{{name, 0, 0}, "/version", "unsupported trace version", "this hetsim reads version 1"};
  // Each required key, by its JSON path when missing, of the wrong type or out of range: a
  // trace is a step of real work, so times and sizes are whole, non-negative and physical.
  std::string path;
  auto bounded = [&](const nlohmann::ordered_json& v, std::int64_t hi, const char* what) -> std::int64_t {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)))
      throw std::out_of_range(std::string(what) + " must be a whole number from 0 to " + std::to_string(hi));
    const auto x = v.get<std::int64_t>();
    if (x < 0 || x > hi) throw std::out_of_range(std::string(what) + " must be a whole number from 0 to " + std::to_string(hi));
    return x;
  };
  try {
    TraceFile t;
    path = "/source";
    if (j.contains("source") && !j.at("source").is_string()) throw std::out_of_range("source must be a string");
    t.source = text_of("source");
    path = "/makespan_ns";
    t.makespan_ns = bounded(j.at("makespan_ns"), kMaxTraceNs, "a time in ns (at most 10^15, 11.6 days)");
    path = "/devices";
    if (!j.at("devices").is_array()) throw std::out_of_range("devices must be an array");
    std::size_t i = 0;
    for (const auto& d : j.at("devices")) {
      path = "/devices/" + std::to_string(i++);
      t.devices.push_back(d.at("label").get<std::string>());
      t.peak_bytes.push_back(bounded(d.at("peak_bytes"), kMaxTraceBytes, "peak_bytes (at most 2^56, 64 PiB)"));
    }
    path = "/tasks";
    if (!j.at("tasks").is_array()) throw std::out_of_range("tasks must be an array");
    i = 0;
    for (const auto& k : j.at("tasks")) {
      path = "/tasks/" + std::to_string(i++);
      const std::int64_t device = bounded(k.at("device"), std::numeric_limits<std::int32_t>::max(), "device");
      if (static_cast<std::size_t>(device) >= t.devices.size())
        throw std::out_of_range("device " + std::to_string(device) + ": no such device (the trace has " +
                                std::to_string(t.devices.size()) + ")");
      const auto kind = k.at("kind").get<std::string>();
      bool known = false;
      for (int x = 0; x <= static_cast<int>(schedule::TaskKind::EpAllToAll); ++x)
        known = known || kind == schedule::task_kind_name(static_cast<schedule::TaskKind>(x));
      if (!known) throw std::out_of_range("unknown task kind '" + kind + "'");
      const std::int64_t start = bounded(k.at("start_ns"), kMaxTraceNs, "start_ns (at most 10^15)");
      const std::int64_t end_ns = bounded(k.at("end_ns"), kMaxTraceNs, "end_ns (at most 10^15)");
      if (end_ns < start) throw std::out_of_range("the task ends before it starts (a negative duration)");
      if (end_ns > t.makespan_ns) throw std::out_of_range("the task ends after the step (end_ns > makespan_ns)");
      t.tasks.push_back({static_cast<std::uint32_t>(device), kind, k.at("name").get<std::string>(), start, end_ns, {}});
      if (k.contains("parts_ns")) {
        if (!k.at("parts_ns").is_object()) throw std::out_of_range("parts_ns must be an object");
        for (const auto& [cls, ns] : k.at("parts_ns").items())
          t.tasks.back().parts.emplace_back(cls, bounded(ns, kMaxTraceNs, "a part of a task in ns (at most 10^15)"));
      }
    }
    return t;
  } catch (const nlohmann::json::exception& e) {
    return Diagnostic{{name, 0, 0}, path, "bad trace: " + std::string(e.what()), hint};
  } catch (const std::out_of_range& e) {
    return Diagnostic{{name, 0, 0}, path, "bad trace: " + std::string(e.what()), hint};
  }
}

}  // namespace hetsim::io
