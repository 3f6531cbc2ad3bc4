#pragma once
// Figures measured from a simulated timeline: utilisation, bubble, exposed communication,
// the critical path by kind of task, peak memory per device.

#include <string>
#include <utility>
#include <vector>

#include "sim/engine/native_engine.hpp"

namespace hetsim::engine {

struct DeviceUsage {
  double busy_fraction = 0;  ///< compute-stream busy time / step
  std::array<double, schedule::kStreams> stream_fraction{};  ///< per stream busy / step
  SimTime bubble = 0;  ///< idle in its group's pipeline window (first to last compute task of
                       ///< the group), not explained by its own TP collectives and sends
  std::int64_t peak_bytes = 0;  ///< live peak × (1 + fragmentation) + runtime reserve
};

struct Summary {
  SimTime step = 0;
  double bubble_fraction = 0;  ///< bubble / step of the busiest device of the slowest group
  SimTime exposed_comm = 0;    ///< communication tasks on the critical path
  std::vector<std::pair<std::string, SimTime>> critical_by_kind;  ///< sums to the step
  std::vector<DeviceUsage> devices;
};

[[nodiscard]] Summary summarize(const schedule::TaskGraph& g, const Trace& t);

}  // namespace hetsim::engine
