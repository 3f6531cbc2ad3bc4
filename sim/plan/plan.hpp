#pragma once
// A Plan: the whole answer to "how does this job run on this cluster". Data-parallel replicas,
// each a pipeline of stages; a stage is a group of devices of one pool with a tensor-parallel
// degree and a layer range. Identical replicas are grouped, so a uniform Megatron plan is one
// group, and a heterogeneous plan is a few.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "models/cost/collectives.hpp"
#include "models/cost/memory.hpp"
#include "models/workload/layer_ops.hpp"

namespace hetsim::plan {

/// One pipeline stage: `tp` devices of pool `pool` running layers [first_layer, first_layer +
/// layers). The first stage also runs the embedding, the last the output layer and loss.
struct Stage {
  int pool = 0;  ///< index into ClusterSpec::pools
  int tp = 1;
  int first_layer = 0;
  int layers = 0;
};

/// `replicas` identical data-parallel replicas, each a pipeline of `stages`, each processing
/// `micro_batches` micro-batches per step.
struct ReplicaGroup {
  int replicas = 1;
  int micro_batches = 1;
  std::vector<Stage> stages;
};

struct Plan {
  int micro_batch = 1;  ///< sequences per micro-batch
  cost::Schedule schedule = cost::Schedule::OneFOneB;
  int virtual_stages = 1;  ///< model chunks per stage for the interleaved schedule
  /// A step's micro-batches run as this many pipeline schedules one after another, each with its
  /// own fill and drain: gradient accumulation around a PyTorch pipeline schedule (torchtitan and
  /// NeMo Automodel call the schedule's step() once per accumulation step). 1: one schedule of
  /// all the micro-batches (Megatron-LM, DeepSpeed). Divides every group's micro_batches.
  /// docs/cost-models.md#pipeline.
  int pipeline_runs = 1;
  /// A group's micro-batches per pipeline run.
  [[nodiscard]] int run_micro_batches(const ReplicaGroup& g) const { return g.micro_batches / std::max(1, pipeline_runs); }
  cost::Recompute recompute = cost::Recompute::None;
  /// What recompute = selective re-runs: Megatron-Core's --recompute-modules (default: the
  /// attention core). docs/cost-models.md#activations.
  workload::RecomputeModules recompute_modules = workload::kDefaultRecomputeModules;
  /// Whether the backward re-runs module `m`'s forward: full recompute every module, selective
  /// those of recompute_modules.
  [[nodiscard]] bool recomputes(workload::RecomputeModule m) const {
    return recompute == cost::Recompute::Full ||
           (recompute == cost::Recompute::Selective && workload::has_module(recompute_modules, m));
  }
  int zero = 1;  ///< 1 = distributed optimizer (Megatron), the usual default
  /// Expert parallelism (mixture-of-experts models): each MoE layer's routed experts are spread
  /// over `ep` data-parallel replicas of a stage (Megatron-Core: EP ranks drawn from the DP
  /// ranks), tokens reach their experts by all-to-all; 1 = every replica holds every expert.
  int ep = 1;
  /// MoE: the routed experts' tensor parallelism (Megatron-Core's --expert-tensor-parallel-size):
  /// 0 = each stage's tp (the experts split like the dense MLP, EP ranks drawn from the DP
  /// replicas, tp apart); a divisor of every stage's tp folds the rest of the TP ranks into
  /// expert parallelism (MoE parallel folding: a stage's t·r devices form expert groups of
  /// expert_tp × ep × (t·r)/(expert_tp·ep) in Megatron-Core's rank order).
  /// docs/cost-models.md#expert-tensor-parallelism.
  int expert_tp = 0;
  [[nodiscard]] int expert_tp_of(int stage_tp) const { return expert_tp > 0 ? expert_tp : stage_tp; }
  /// expert_tp below some stage's tp: the TP ranks fold into expert parallelism there.
  [[nodiscard]] bool folds_experts() const;
  bool sequence_parallel = true;
  cost::Algorithm grad_sync = cost::Algorithm::Auto;
  bool overlap_grad_reduce = true;  ///< bucketed gradient reduction overlapped with backward
  bool overlap_tp_comm = false;     ///< TP collectives pipelined with their GEMMs
  /// The backward's column-parallel TP collectives run beside a gradient GEMM (Megatron-LM's
  /// asynchronous input-gradient all-reduce and sequence-parallel re-gather, default since 2022).
  bool overlap_tp_backward = true;
  /// MoE: a micro-batch's dispatch and combine all-to-alls run beside another micro-batch's
  /// compute (Megatron-Core's --overlap-moe-expert-parallel-comm, DeepSeek's DualPipe); needs
  /// ep > 1 and two micro-batches per replica to act. docs/cost-models.md#expert-parallelism.
  bool overlap_ep_comm = false;
  /// MoE: how tokens reach experts on other nodes. AllToAll: one copy per routed expert, each
  /// straight to its rank (NCCL's all-to-all, Megatron-Core's alltoall dispatcher).
  /// Hierarchical: one copy per destination node over the network, to the rank of the same
  /// local index there, fanned out to the experts' ranks over the node's fabric (DeepSeek-V3
  /// §3.2.2, DeepEP, Megatron-Core's flex dispatcher with DeepEP or HybridEP).
  /// docs/cost-models.md#hierarchical-dispatch.
  enum class EpDispatch : std::uint8_t { AllToAll, Hierarchical };
  EpDispatch ep_dispatch = EpDispatch::AllToAll;
  /// MoE: the dispatch all-to-alls (forward, and the combine's gradient in the backward) move
  /// their rows in fp8 with one fp32 scale per 128 values; the combine and the dispatch's
  /// gradient stay 16-bit (DeepSeek-V3 §3.3.2, DeepEP's FP8 dispatch).
  /// docs/cost-models.md#fp8-dispatch.
  bool fp8_dispatch = false;
  /// Context parallelism (Megatron-Core / Transformer Engine): every sequence is split over
  /// `cp` ranks that hold the same weights, each with seq_len/cp of its tokens (a causal
  /// sequence in 2·cp chunks, two to a rank, so that each does the same attention work); the
  /// ranks exchange keys and values inside attention. They sit next to the TP ranks in
  /// Megatron's rank order (tp, cp, dp, pp), so here they are `cp` consecutive replicas of each
  /// group: a group's `replicas` counts dp · cp devices blocks, and the gradients reduce over
  /// all of them. docs/cost-models.md#context-parallelism.
  int cp = 1;
  /// How the context-parallel ranks exchange keys and values (workload::CpExchange: the ring,
  /// Transformer Engine's "p2p" and the default; an all-gather; DeepSpeed-Ulysses' all-to-alls).
  using CpComm = workload::CpExchange;
  CpComm cp_comm = CpComm::Ring;
  std::vector<ReplicaGroup> groups;

  [[nodiscard]] int replicas() const;
  /// ZeRO 2/3 over several replica groups: each group shards within its own replicas and the
  /// groups all-reduce their shards once per step (docs/cost-models.md#hybrid-sharding).
  [[nodiscard]] bool hybrid_sharding() const { return groups.size() > 1 && zero >= 2; }
  /// Σ replicas · micro_batches · micro_batch / cp (cp replicas share each sequence)
  [[nodiscard]] int sequences_per_step() const;
  [[nodiscard]] int devices() const;
};

/// Copies how the framework runs (sequence_parallel, grad_sync, overlap_grad_reduce,
/// overlap_tp_comm, overlap_tp_backward, overlap_ep_comm, ep_dispatch, fp8_dispatch, cp_comm,
/// pipeline_runs) from `from` into `to`,
/// leaving the layout and what the planner searches (micro-batch, schedule, recompute, ZeRO,
/// ep) as they are.
void copy_framework(const Plan& from, Plan& to);

}  // namespace hetsim::plan
