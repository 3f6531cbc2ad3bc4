#include "sim/engine/summary.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::engine {

using schedule::Stream;
using schedule::TaskKind;

Summary summarize(const schedule::TaskGraph& g, const Trace& t) {
  Summary s;
  s.step = t.makespan;
  const double step = static_cast<double>(std::max<SimTime>(1, t.makespan));
  const std::size_t nd = g.devices.size();
  std::vector<SimTime> first(nd, -1), last(nd, -1);
  for (std::uint32_t i = 0; i < g.tasks.size(); ++i) {
    const auto& task = g.tasks[i];
    if (task.stream != Stream::Compute || task.kind == TaskKind::Optimizer) continue;
    if (first[task.device] < 0 || t.start[i] < first[task.device]) first[task.device] = t.start[i];
    last[task.device] = std::max(last[task.device], t.end[i]);
  }
  // Busy compute time inside the pipeline span (the optimizer comes after it).
  std::vector<SimTime> pipeline_busy(nd, 0);
  for (std::uint32_t i = 0; i < g.tasks.size(); ++i) {
    const auto& task = g.tasks[i];
    const bool blocks = task.stream == Stream::TpComm || task.stream == Stream::PpComm || task.stream == Stream::EpComm ||
                        (task.stream == Stream::Compute && task.kind != TaskKind::Optimizer);
    if (blocks) pipeline_busy[task.device] += t.end[i] - t.start[i];  // the engine's time (simgrid: with contention)
  }
  // The pipeline window of each replica group: from its first compute task to its last.
  // A device's bubble is the part of that window it spends neither computing nor blocked on
  // its own TP collectives, expert all-to-alls and sends: fill, drain and waiting for slower
  // stages.
  std::vector<SimTime> win_first, win_last;
  for (std::size_t d = 0; d < nd; ++d) {
    const auto grp = static_cast<std::size_t>(g.devices[d].group);
    if (win_first.size() <= grp) {
      win_first.resize(grp + 1, -1);
      win_last.resize(grp + 1, -1);
    }
    if (first[d] >= 0 && (win_first[grp] < 0 || first[d] < win_first[grp])) win_first[grp] = first[d];
    win_last[grp] = std::max(win_last[grp], last[d]);
  }
  // The group whose pipeline ends last sets the step; its busiest device is the bottleneck.
  std::size_t slowest = 0;
  for (std::size_t k = 0; k < win_last.size(); ++k)
    if (win_last[k] > win_last[slowest]) slowest = k;
  std::vector<int> stages_in_group(win_last.size(), 0);
  for (std::size_t d = 0; d < nd; ++d) ++stages_in_group[static_cast<std::size_t>(g.devices[d].group)];
  std::size_t bottleneck = nd;
  for (std::size_t d = 0; d < nd; ++d) {
    DeviceUsage u;
    for (int k = 0; k < schedule::kStreams; ++k) u.stream_fraction[k] = static_cast<double>(t.busy[d][k]) / step;
    u.busy_fraction = u.stream_fraction[0];
    const auto grp = static_cast<std::size_t>(g.devices[d].group);
    // Without a pipeline there is no bubble (waiting for gathers is exposed DP communication).
    u.bubble = first[d] < 0 || stages_in_group[grp] < 2
                   ? 0
                   : std::max<SimTime>(0, win_last[grp] - win_first[grp] - pipeline_busy[d]);
    const auto& dev = g.devices[d];
    u.peak_bytes = static_cast<std::int64_t>(std::llround(static_cast<double>(t.peak_bytes[d]) * (1.0 + dev.fragmentation))) +
                   dev.reserve_bytes;
    if (grp == slowest && (bottleneck == nd || pipeline_busy[d] > pipeline_busy[bottleneck])) bottleneck = d;
    s.devices.push_back(u);
  }
  // The bubble that costs time is the busiest device's: every other device idles longer only
  // because it waits for that one.
  if (bottleneck < nd) s.bubble_fraction = static_cast<double>(s.devices[bottleneck].bubble) / step;
  // The critical path by kind of task (it has no gaps: each task starts when its predecessor
  // on the path ends).
  std::vector<std::pair<std::string, SimTime>> kinds;
  auto add = [&](const std::string& k, SimTime v) {
    for (auto& [n, x] : kinds)
      if (n == k) { x += v; return; }
    kinds.emplace_back(k, v);
  };
  for (std::uint32_t id : t.critical_path) {
    const auto& task = g.tasks[id];
    add(std::string(schedule::task_kind_name(task.kind)), t.end[id] - t.start[id]);
    if (task.stream != Stream::Compute) s.exposed_comm += t.end[id] - t.start[id];
  }
  s.critical_by_kind = std::move(kinds);
  return s;
}

}  // namespace hetsim::engine
