#pragma once
// The simgrid engine: the same TaskGraph on a SimGrid platform built from the ClusterSpec
// (platform.hpp), every communication task as the flows of its algorithm (flows.hpp), so that
// flows sharing a NIC, a fabric port or an oversubscribed uplink slow each other down by
// SimGrid's flow-level (max-min) network model. Results map back into the native engine's Trace.
// This header is SimGrid-free; simgrid_engine.cpp is the only file that includes SimGrid.

#include <cstdint>
#include <string>
#include <vector>

#include "models/base/result.hpp"
#include "models/hw/device.hpp"
#include "sim/engine/native_engine.hpp"

namespace hetsim::engine {

/// A link that had to carry more than its bandwidth: flows on it got less than they would alone.
struct Contention {
  std::string link;       ///< platform link name ("p0n3-uplink")
  double overloaded_s = 0;  ///< time during which the flows on it asked for more than its bandwidth
  double peak_demand = 0;   ///< the largest Σ of those flows' rates alone / its bandwidth
};

struct SimgridRun {
  Trace trace;
  std::vector<Contention> contended;  ///< most overloaded first
  std::uint64_t activities = 0;       ///< executions and flows SimGrid ran
  std::uint64_t flows = 0;
  /// Σ over flows of (time taken − time alone on the fabric): what contention cost, summed.
  double flow_delay_s = 0;
};

/// What SimGrid read from a platform file: its hosts, and the links of the route src → dst.
struct PlatformCheck {
  std::size_t hosts = 0;
  std::size_t route_links = 0;
};

/// Loads a platform file (`hetsim platform -o`) with SimGrid itself. Uses this process's one
/// simulation.
[[nodiscard]] Result<PlatformCheck> load_platform_file(const std::string& path, const std::string& src,
                                                       const std::string& dst);

/// Runs the graph on `cluster`'s platform. SimGrid allows one simulation per process: a second
/// call fails with a message.
[[nodiscard]] Result<SimgridRun> run_simgrid(const schedule::TaskGraph& g, const hw::ClusterSpec& cluster);

}  // namespace hetsim::engine
