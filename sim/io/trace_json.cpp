#include "sim/io/trace_json.hpp"

#include <fstream>
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

Result<TraceFile> read_trace_json(const std::filesystem::path& file) {
  const std::string name = file.string();
  const std::string hint = "traces are written by `hetsim-exec run --out MEASURED.json --predicted PREDICTED.json`";
  auto read = read_input_file(file, "trace file", hint);
  if (!read) return read.errors();
  const std::string& text = *read;
  auto parsed = parse_json_strict(text, name, hint);  // ordered: op classes keep their order
  if (!parsed) return parsed.errors();
  const nlohmann::ordered_json& j = *parsed;
  if (!j.is_object() || j.value("format", "") != "hetsim-trace") {
    const std::string format = j.is_object() ? j.value("format", "") : "";
    return Diagnostic{{name, 0, 0}, "/format",
                      format.empty() ? "not a hetsim trace (\"format\": \"hetsim-trace\" missing)"
                                     : "this is a " + format + " file, not a hetsim trace",
                      "compare takes two traces; " + hint};
  }
  if (j.value("version", 0) != 1)
    return Diagnostic{{name, 0, 0}, "/version", "unsupported trace version", "this hetsim reads version 1"};
  // Each required key, by its JSON path when missing or of the wrong type.
  std::string path;
  try {
    TraceFile t;
    t.source = j.value("source", "");
    path = "/makespan_ns";
    t.makespan_ns = j.at("makespan_ns").get<std::int64_t>();
    path = "/devices";
    for (const auto& d : j.at("devices")) {
      t.devices.push_back(d.at("label").get<std::string>());
      t.peak_bytes.push_back(d.at("peak_bytes").get<std::int64_t>());
    }
    std::size_t i = 0;
    for (const auto& k : j.at("tasks")) {
      path = "/tasks/" + std::to_string(i++);
      t.tasks.push_back({k.at("device").get<std::uint32_t>(), k.at("kind").get<std::string>(),
                         k.at("name").get<std::string>(), k.at("start_ns").get<std::int64_t>(),
                         k.at("end_ns").get<std::int64_t>(), {}});
      if (k.contains("parts_ns"))
        for (const auto& [cls, ns] : k.at("parts_ns").items()) t.tasks.back().parts.emplace_back(cls, ns.get<std::int64_t>());
    }
    for (std::size_t k = 0; k < t.tasks.size(); ++k)
      if (t.tasks[k].device >= t.devices.size())
        return Diagnostic{{name, 0, 0}, "/tasks/" + std::to_string(k) + "/device", "no such device", hint};
    return t;
  } catch (const nlohmann::json::exception& e) {
    return Diagnostic{{name, 0, 0}, path, "bad trace: " + std::string(e.what()), hint};
  }
}

}  // namespace hetsim::io
