#pragma once
// The cpu backend: each device is a worker thread with its own Eigen GEMMs (single-threaded, so
// devices do not fight over cores) and a memory budget. Always built and tested.

#include <memory>

#include "exec/backend.hpp"

namespace hetsim::exec {

/// `devices` cpu devices of `memory_bytes` each (0 = no limit).
[[nodiscard]] std::unique_ptr<Backend> make_cpu_backend(int devices, std::size_t memory_bytes = 0);

}  // namespace hetsim::exec
