#pragma once
// One time origin for the processes of an MPI run: each process measures its tasks on its own
// steady clock, and a dependency between tasks of two processes is only comparable once both
// clocks count from the same instant.

#include <cstdint>

#include "exec/backend.hpp"

namespace hetsim::exec {

/// This process's steady clock minus rank 0's, in ns. Every process calls it (collective).
/// Estimated as Cristian's method does, from the best of `rounds` round trips (rank 0 reads its
/// clock and broadcasts it; every process reads its own on receipt; rank 0 reads again once all
/// readings are gathered): reading − midpoint, uncertain by half the round trip. Processes of
/// one host read the same CLOCK_MONOTONIC, so an estimate within that uncertainty is taken to be
/// exactly 0 (then tasks of different processes compare exactly).
[[nodiscard]] std::int64_t clock_offset_to_rank0(ProcessGroup& world, int rounds = 16);

/// The start of a step on this process's clock: after a barrier, rank 0's reading, moved to
/// this clock by `offset` (clock_offset_to_rank0). Collective.
[[nodiscard]] std::int64_t common_step_origin(ProcessGroup& world, std::int64_t offset);

}  // namespace hetsim::exec
