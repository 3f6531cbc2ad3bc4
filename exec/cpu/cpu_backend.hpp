#pragma once
// The cpu backend: each device is a worker thread with its own Eigen GEMMs (single-threaded, so
// devices do not fight over cores) and a memory budget. Always built and tested.

#include <memory>

#include "exec/backend.hpp"

namespace hetsim::exec {

/// The most cores one cpu device may have (its own thread and helpers).
inline constexpr int kMaxCores = 256;

/// `devices` cpu devices of `memory_bytes` each (0 = no limit), one core each.
[[nodiscard]] std::unique_ptr<Backend> make_cpu_backend(int devices, std::size_t memory_bytes = 0);

/// The same, every device running at `speed` (0 < speed ≤ 1) on `cores` cores (1 … kMaxCores).
/// Speed: each kernel (GEMM, attention, norm, elementwise, Adam) is followed by an idle until
/// 1/speed times its time has passed since it began (exec/cpu/pacer.hpp), so a device at 0.5
/// takes twice as long for every kernel; copies and collectives keep the host's pace. Cores: the
/// device's thread and `cores − 1` helpers split each kernel (rows of a GEMM or norm, heads of
/// attention, ranges of an elementwise pass or Adam; exec/cpu/team.hpp). open_as() multiplies a
/// further speed in and may set another core count or memory (a plan's pools as devices of
/// unequal speed, cores and memory).
/// Fails (key "speed" or "cores") on a value outside those ranges.
[[nodiscard]] Result<std::unique_ptr<Backend>> make_cpu_backend_at(int devices, std::size_t memory_bytes, double speed,
                                                                   int cores = 1);

}  // namespace hetsim::exec
