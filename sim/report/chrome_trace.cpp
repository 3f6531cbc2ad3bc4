#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <vector>

#include "sim/report/simulation_report.hpp"

namespace hetsim::report {
namespace {

// Microseconds with nanosecond precision, as Chrome's trace format expects.
std::string us(schedule::SimTime ns) { return fmt::format("{}.{:03d}", ns / 1000, static_cast<int>(ns % 1000)); }

// A string's JSON form without its quotes, by the JSON library: quotes, backslashes and every
// control character escaped; invalid UTF-8 replaced (U+FFFD) rather than thrown on.
std::string escape(const std::string& in) {
  const std::string q = nlohmann::json(in).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return q.substr(1, q.size() - 2);
}

}  // namespace

std::string chrome_trace(const Scenario& s, const schedule::TaskGraph& g, const engine::Trace& t) {
  std::string o = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& ev) {
    if (!first) o += ",\n";
    first = false;
    o += ev;
  };
  std::vector<bool> ep_track(g.devices.size(), false);
  for (const auto& task : g.tasks)
    if (task.stream == schedule::Stream::EpComm) ep_track[task.device] = true;
  // One process per simulated device; its first real device decides the node number shown.
  int node = 0;
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    const auto& rep = g.devices[d];
    const auto& pool = s.cluster.pools[rep.pool];
    const int nodes_spanned = std::max(1, rep.count / std::max(1, pool.devices_per_node));
    emit(fmt::format(R"j({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"node {} · {} ({} devices)"}}}})j",
                     d, node, escape(rep.label), rep.count));
    emit(fmt::format(R"j({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})j", d, d));
    // A track per stream; the expert all-to-alls' only on devices that have them (MoE, ep > 1).
    for (int k = 0; k < schedule::kStreams; ++k)
      if (k != static_cast<int>(schedule::Stream::EpComm) || ep_track[d])
        emit(fmt::format(R"j({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"{}"}}}})j", d, k,
                         schedule::stream_name(static_cast<schedule::Stream>(k))));
    node += nodes_spanned;
  }
  for (std::uint32_t i = 0; i < g.tasks.size(); ++i) {
    const auto& task = g.tasks[i];
    if (t.end[i] == t.start[i]) continue;
    emit(fmt::format(R"j({{"name":"{}","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"layers":"{}-{}","micro_batch":{}}}}})j",
                     escape(schedule::task_name(task)), schedule::task_kind_name(task.kind), task.device,
                     static_cast<int>(task.stream), us(t.start[i]), us(t.end[i] - t.start[i]), task.first_layer,
                     task.first_layer + task.layers - 1, task.micro_batch));
  }
  // Memory as a counter track per device, in GiB.
  for (std::size_t d = 0; d < g.devices.size(); ++d)
    for (const auto& pt : t.memory[d])
      emit(fmt::format(R"j({{"name":"memory","ph":"C","pid":{},"ts":{},"args":{{"GiB":{:.4f}}}}})j", d, us(pt.time),
                       static_cast<double>(pt.bytes) / kGiB));
  o += "\n]}\n";
  return o;
}

}  // namespace hetsim::report
