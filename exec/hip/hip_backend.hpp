#pragma once
// The hip backend: one device per AMD GPU, with the kernels shared with the cuda backend
// (exec/gpu) and an own tiled GEMM (Debian's ROCm has no hipBLAS), collectives staged through host
// memory (no RCCL there). Built with hipcc when HETSIM_WITH_HIP; HIP headers stay in exec/hip.

#include <memory>

#include "exec/backend.hpp"

namespace hetsim::exec {

/// The AMD GPUs of this machine, or the reason there are none ("no HIP device: …").
/// `devices` above the GPU count makes that many devices sharing the GPUs round-robin.
[[nodiscard]] Result<std::unique_ptr<Backend>> make_hip_backend(int devices = 0);

}  // namespace hetsim::exec
