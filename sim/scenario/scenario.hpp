#pragma once
// A validated scenario: the model, how it is trained, the cluster, an optional fixed plan and
// the cost assumptions. Produced by sim/io's read_scenario; every field already checked.

#include <optional>
#include <string>
#include <vector>

#include "models/hw/catalog.hpp"
#include "models/hw/device.hpp"
#include "models/workload/model_spec.hpp"
#include "models/workload/training.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/variability.hpp"

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
  /// Bytes per parameter of the routed experts' gradient buffers; unset: gradient_bytes. NeMo
  /// Automodel keeps its experts (outside FSDP) with bf16 gradients, 2, beside fp32 accumulators
  /// for the FSDP-managed rest (docs/research-automodel-memory.md).
  std::optional<double> expert_gradient_bytes;
  /// Bytes per parameter of optimizer state; unset: the precision's and optimizer's own
  /// (cost::state_bytes: 12 for Adam over 16-bit weights, an fp32 master copy and two fp32
  /// moments). 4: Adam's two moments in bf16 on a model cast to bf16, no master copy (NeMo
  /// Automodel, torch.optim.Adam's zeros_like). Memory only, as gradient_bytes.
  std::optional<double> optimizer_bytes;
};

/// Interruptions, checkpoints and restarts of a long run ([reliability];
/// docs/cost-models.md#goodput). Defaults from shared/reference/hardware.md §6–7.
struct ReliabilitySpec {
  /// Mean device-hours between job interruptions, overriding every device's catalogue
  /// `mtbf_hours` when set (> 0).
  double mtbf_hours = 0;
  /// A catalogue device without `mtbf_hours`: 50,000 device-hours (public fleets span
  /// 8k–51k per interruption; hardware.md §6).
  static constexpr double kDefaultMtbfHours = 50000;
  /// Checkpoint write bandwidth per device: BLOOM wrote 2.3 TB in 40 s from 384 GPUs
  /// (0.148 GB/s each), Llama 3's storage sustains 2 TB/s for 16,384 GPUs (0.122 GB/s each).
  BytesPerSec checkpoint_bandwidth_per_device{0.12e9};
  /// Detect, reschedule, reload and warm up (assumption: 10 min; a 504-GPU B200 cluster's
  /// automatic retries came a median 11 min apart, hardware.md §6).
  Duration restart{600};
  Duration checkpoint_interval{0};  ///< 0: the Young/Daly optimum
};

/// What may be bought ([purchase]; docs/scenario-format.md#purchase): `hetsim buy` adds these to
/// the owned pools and searches the compositions.
struct PurchaseSpec {
  struct Candidate {
    hw::PoolSpec pool;  ///< nodes = 0; the device with the prices used
    int max_nodes = 0;  ///< > 0
    int node_step = 1;  ///< nodes are bought this many at a time
    double lead_time_days = 0;  ///< from the order to the nodes in service; 0 = at once
  };
  std::vector<Candidate> candidates;
  enum class Objective { Pareto, Time, Cost } objective = Objective::Pareto;
  double budget_usd = 0;     ///< capex (own) or rent for the run (rent); 0 = no limit
  double power_kw = 0;       ///< at the wall (TDP × PUE), owned + bought; 0 = no limit
  double deadline_days = 0;  ///< lead time + effective time to train; 0 = none
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
  /// How the framework runs, from [parallel]'s framework keys (sequence_parallel, grad_sync,
  /// overlap_grad_reduce, overlap_tp_comm, overlap_tp_backward, overlap_ep_comm, ep_dispatch, fp8_dispatch),
  /// the defaults elsewhere: read even where the layout is not (`hetsim plan`, `hetsim buy`),
  /// so that every plan the planner makes runs the framework as the scenario says.
  plan::Plan framework;
  CostSpec cost;
  MemorySpec memory;
  ReliabilitySpec reliability;
  std::optional<PurchaseSpec> purchase;
  std::optional<ReferenceSpec> reference;
  std::optional<VariabilitySpec> variability;  ///< [variability]; absent = every step nominal
  std::uint64_t seed = 1;
};

}  // namespace hetsim
