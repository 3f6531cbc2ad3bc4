#pragma once
// A validated scenario: the model, how it is trained, the cluster, an optional fixed plan and
// the cost assumptions. Produced by sim/io's read_scenario; every field already checked.

#include <optional>
#include <string>

#include "models/hw/catalog.hpp"
#include "models/hw/device.hpp"
#include "models/workload/model_spec.hpp"
#include "models/workload/training.hpp"
#include "sim/plan/plan.hpp"

namespace hetsim {

/// How money is counted: renting devices by the hour, or owning them.
struct CostSpec {
  enum class Mode { Rent, Own } mode = Mode::Rent;
  double electricity_usd_per_kwh = 0.10;
  double pue = 1.3;                ///< data-centre power usage effectiveness
  double amortisation_years = 4;   ///< for Mode::Own: purchase price spread over this
};

/// Memory assumptions that no datasheet gives (docs/cost-models.md#memory).
struct MemorySpec {
  Bytes runtime_reserve{2.0 * kGiB};  ///< CUDA context, allocator pools, library workspaces
  Bytes comm_buffers{0.5 * kGiB};     ///< NCCL channel buffers
  double fragmentation = 0.05;        ///< caching-allocator fragmentation
  /// Bytes per parameter of the gradient buffers a device holds: 4 = Megatron-LM's fp32 main
  /// gradients (the default); 6 = DeepSpeed's BF16 optimizer (the bf16 param.grad beside its fp32
  /// accumulator). Memory only: gradients are reduced from the fp32 buffer either way.
  double gradient_bytes = 4;
};

/// A published or measured result the scenario reproduces ([reference]); reports compare the
/// prediction with it.
/// What a published peak-memory figure measured: PyTorch's max_memory_allocated (tensors
/// only), max_memory_reserved (+ the caching allocator's slack), or the whole device as
/// nvidia-smi shows it (+ CUDA context, NCCL buffers, workspaces).
enum class MemoryKind { Allocated, Reserved, Device };

struct ReferenceSpec {
  double step_time_s = 0;        ///< 0 = not given
  double tflops_per_device = 0;  ///< model TFLOP/s per device as the source counts it
  Bytes peak_memory;             ///< per device, the highest the source reports; 0 = not given
  MemoryKind peak_memory_kind = MemoryKind::Device;
  std::string source;
};

struct Scenario {
  std::string file;  ///< where it was read from ("" for built in code)
  std::string name;  ///< [scenario] name, or the file stem
  workload::ModelSpec model;
  workload::TrainingSpec training;
  hw::ClusterSpec cluster;
  std::optional<plan::Plan> plan;  ///< from [parallel]; absent = for the planner to choose
  CostSpec cost;
  MemorySpec memory;
  std::optional<ReferenceSpec> reference;
  std::uint64_t seed = 1;
};

}  // namespace hetsim
