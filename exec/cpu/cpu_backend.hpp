#pragma once
// The cpu backend: each device is a worker thread with its own Eigen GEMMs (single-threaded, so
// devices do not fight over cores) and a memory budget. Always built and tested.

#include <memory>

#include "exec/backend.hpp"

namespace hetsim::exec {

/// `devices` cpu devices of `memory_bytes` each (0 = no limit).
[[nodiscard]] std::unique_ptr<Backend> make_cpu_backend(int devices, std::size_t memory_bytes = 0);

/// The same, every device running at `speed` (0 < speed ≤ 1): each kernel (GEMM, attention,
/// norm, elementwise, Adam) is followed by an idle until 1/speed times its time has passed since
/// it began (exec/cpu/pacer.hpp), so a device at 0.5 takes twice as long for every kernel;
/// copies and collectives keep the host's pace. open_slowed() multiplies a further factor in (a
/// plan's pools at different speeds).
/// Fails (key "speed") on a speed outside (0, 1].
[[nodiscard]] Result<std::unique_ptr<Backend>> make_cpu_backend_at(int devices, std::size_t memory_bytes, double speed);

}  // namespace hetsim::exec
