#include "exec/replay/clock_sync.hpp"

#include <cstdlib>
#include <limits>
#include <vector>

namespace hetsim::exec {

std::int64_t clock_offset_to_rank0(ProcessGroup& world, int rounds) {
  const auto n = static_cast<std::size_t>(world.size());
  std::vector<std::int64_t> offset(n, 0), best_rtt(n, std::numeric_limits<std::int64_t>::max());
  for (int round = 0; round < rounds; ++round) {
    world.barrier();
    std::int64_t sent = host_clock_ns();  // rank 0's reading, broadcast
    world.broadcast(&sent, sizeof sent, 0);
    const std::int64_t mine = host_clock_ns();
    const auto all = world.gather({mine}, 0);
    const std::int64_t back = host_clock_ns();  // rank 0: every reading is in
    if (world.rank() != 0) continue;
    const std::int64_t rtt = back - sent;
    for (std::size_t r = 1; r < n && r < all.size(); ++r)
      if (!all[r].empty() && rtt < best_rtt[r]) {
        best_rtt[r] = rtt;
        const std::int64_t est = all[r][0] - (sent + back) / 2;
        offset[r] = std::llabs(est) <= rtt / 2 ? 0 : est;  // one host: the same clock
      }
  }
  world.broadcast(offset.data(), offset.size() * sizeof(std::int64_t), 0);
  return offset[static_cast<std::size_t>(world.rank())];
}

std::int64_t common_step_origin(ProcessGroup& world, std::int64_t offset) {
  world.barrier();
  std::int64_t t0 = host_clock_ns();
  world.broadcast(&t0, sizeof t0, 0);
  return t0 + offset;
}

}  // namespace hetsim::exec
