#include "sim/io/trace_json.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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
  std::ifstream in(file, std::ios::binary);
  if (!in) return Diagnostic{{file.string(), 0, 0}, "", "cannot open trace file", ""};
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    const auto j = nlohmann::json::parse(ss.str());
    if (j.value("format", "") != "hetsim-trace")
      return Diagnostic{{file.string(), 0, 0}, "/format", "not a hetsim trace (\"format\": \"hetsim-trace\" missing)", ""};
    TraceFile t;
    t.source = j.value("source", "");
    t.makespan_ns = j.at("makespan_ns").get<std::int64_t>();
    for (const auto& d : j.at("devices")) {
      t.devices.push_back(d.at("label").get<std::string>());
      t.peak_bytes.push_back(d.at("peak_bytes").get<std::int64_t>());
    }
    for (const auto& k : j.at("tasks")) {
      t.tasks.push_back({k.at("device").get<std::uint32_t>(), k.at("kind").get<std::string>(),
                         k.at("name").get<std::string>(), k.at("start_ns").get<std::int64_t>(),
                         k.at("end_ns").get<std::int64_t>(), {}});
      if (k.contains("parts_ns"))
        for (const auto& [cls, ns] : k.at("parts_ns").items()) t.tasks.back().parts.emplace_back(cls, ns.get<std::int64_t>());
    }
    if (j.value("version", 0) != 1)
      return Diagnostic{{file.string(), 0, 0}, "/version", "unsupported trace version", "this hetsim reads version 1"};
    for (std::size_t i = 0; i < t.tasks.size(); ++i)
      if (t.tasks[i].device >= t.devices.size())
        return Diagnostic{{file.string(), 0, 0}, "/tasks/" + std::to_string(i) + "/device", "no such device", ""};
    return t;
  } catch (const nlohmann::json::exception& e) {
    return Diagnostic{{file.string(), 0, 0}, "", std::string("bad trace JSON: ") + e.what(), ""};
  }
}

}  // namespace hetsim::io
