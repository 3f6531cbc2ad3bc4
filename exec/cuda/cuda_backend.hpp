#pragma once
// The cuda backend: one device per GPU, cuBLAS fp32 GEMMs, an own streaming kernel, device
// memory with the GPU's capacity. Built when HETSIM_WITH_CUDA; CUDA headers stay in this folder.

#include <memory>

#include "exec/backend.hpp"

namespace hetsim::exec {

/// The GPUs of this machine, or the reason there are none ("no CUDA device: …").
[[nodiscard]] Result<std::unique_ptr<Backend>> make_cuda_backend();

}  // namespace hetsim::exec
