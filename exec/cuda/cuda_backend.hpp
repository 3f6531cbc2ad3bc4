#pragma once
// The cuda backend: one device per GPU (cuBLAS GEMMs in fp32/bf16/fp16, own kernels for
// attention's softmax, norms, elementwise passes and Adam; CUDA events for timing), NCCL
// collectives among distinct GPUs of this process. Built when HETSIM_WITH_CUDA; CUDA headers stay
// in exec/cuda and exec/gpu.

#include <memory>

#include "exec/backend.hpp"

namespace hetsim::exec {

/// The GPUs of this machine, or the reason there are none ("no CUDA device: …").
/// `devices` above the GPU count makes that many devices sharing the GPUs round-robin.
[[nodiscard]] Result<std::unique_ptr<Backend>> make_cuda_backend(int devices = 0);

}  // namespace hetsim::exec
