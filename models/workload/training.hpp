#pragma once
// How a model is trained: batch, sequence, number format, optimizer, how many tokens.

#include "models/hw/device.hpp"

namespace hetsim::workload {

enum class Optimizer { Adam, Sgd };

struct TrainingSpec {
  int global_batch = 0;  ///< sequences per optimizer step
  int seq_len = 0;       ///< tokens per sequence
  hw::Dtype precision = hw::Dtype::Bf16;  ///< GEMM and activation format (mixed precision)
  Optimizer optimizer = Optimizer::Adam;
  double tokens = 0;     ///< tokens to train, for time and cost to train; 0 = one step only
  bool flash_attention = true;  ///< fused attention: no s×s score matrix kept in memory
  bool causal = true;           ///< causal mask: fused kernels skip the masked half
  /// Memory-bound kernels fused as Megatron-LM / Transformer Engine fuse them; false: one
  /// PyTorch eager kernel per elementary op (workload::MicroBatchShape::fused_kernels).
  bool fused_kernels = true;

  [[nodiscard]] double tokens_per_step() const {
    return static_cast<double>(global_batch) * seq_len;
  }
};

}  // namespace hetsim::workload
