#include "models/cost/memory.hpp"

#include <algorithm>

namespace hetsim::cost {

std::string_view recompute_name(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
    case Recompute::SelectiveOp: return "selective_op";
  }
  return "?";
}

double recompute_share(const workload::Op& op, Recompute r, workload::RecomputeModules modules) {
  switch (r) {
    case Recompute::None: return 0;
    case Recompute::Selective: return (op.modules & modules) != 0 ? 1 : 0;
    case Recompute::Full: return 1;
    case Recompute::SelectiveOp: return op.op_recompute;
  }
  return 0;
}

std::string_view schedule_name(Schedule s) {
  switch (s) {
    case Schedule::GPipe: return "gpipe";
    case Schedule::OneFOneB: return "1f1b";
    case Schedule::Interleaved: return "interleaved";
  }
  return "?";
}

Bytes activation_bytes_per_layer(const workload::ModelSpec& m, double b, double s, int tp,
                                 bool sequence_parallel, Recompute r, bool flash_attention,
                                 hw::Dtype precision, bool eager, int ep, workload::RecomputeModules modules) {
  const double t = tp;
  const double h = m.hidden;
  const double a = m.heads;
  // Activations are kept in 16 bits in mixed precision (fp8 GEMM inputs are cast on the fly).
  const double e = precision == hw::Dtype::Fp32 ? 4.0 : 2.0;
  const double mask = m.dropout ? 1.0 : 0.0;  // 1-byte dropout masks
  const double sbh = s * b * h;

  if (r == Recompute::Full) return Bytes{e * sbh / (sequence_parallel ? t : 1.0)};

  const double qr = m.q_width() / h;   // Q's width relative to the residual stream (1 unless head_dim is set)
  const double g = m.kv_width() / h;   // K's and V's
  const double f = static_cast<double>(m.ffn_hidden) / h;
  // Per unit of s·b·h (Korthikanti et al. §4.1, generalised to GQA, SwiGLU and MoE):
  // replicated over TP ranks unless sequence parallel: the two norm inputs, the QKV and MLP
  // GEMM inputs (norm outputs) and two dropout masks -> 4e + 2·mask (= 10 for e = 2);
  const double replicated = 4 * e + 2 * mask;
  // split over TP ranks: Q, K, V and the out-projection input -> e(2qr + 2g); the MLP keeps the
  // activation function's inputs and the down-projection input: GeLU 2 tensors of width f,
  // SwiGLU 3 (gate, up, product) -> e·2f or e·3f (= 24 together for MHA and f = 4h).
  // Eager modules without recompute (see the header): SwiGLU's SiLU output is a fourth tensor.
  const bool eager_none = eager && r == Recompute::None;
  const double act_tensors = m.activation == workload::Activation::SwiGlu ? (eager_none ? 4 : 3) : 2;
  // Without recompute, eager GQA keeps the repeated K and V the attention kernel saved (its
  // inputs), not the kv_heads-wide projections (freed once repeated).
  const double kv = eager_none ? qr : g;
  // Q and the out-projection input (Q's width each), K and V.
  // Multi-head latent attention: Q and K are heads·d wide, V and the out-projection input
  // heads·d_v (DeepSeek-V3: 192 and 128 a head).
  const double vo = m.mla() ? static_cast<double>(m.heads) * m.v_head_dim / h : 0;
  double split = m.mla() ? e * (2 * qr + 2 * vo) : e * (2 * qr + 2 * kv);
  // Selective recompute's modules (Megatron-Core, docs/research-recompute-modules.md): what each
  // re-creates in the backward is not kept. layernorm: the outputs of the norms that are modules
  // of their own (MLA's input norm, a MoE layer's pre-MLP norm; Transformer Engine fuses the
  // others into the next GEMM); mla_up_proj: MLA's Q, K and V (its latents, kept instead, are
  // not counted either way: ~); mlp: a dense MLP's internals and its fused norm's output; moe:
  // the whole MoE block's (its input, the norm output counted above, is kept); moe_act: one
  // f-wide tensor a routed row (the activation's output); shared_experts: their internals.
  const bool selective = r == Recompute::Selective;
  const auto on = [&](workload::RecomputeModule x) { return selective && workload::has_module(modules, x); };
  double replicated_kept = replicated;
  if (on(workload::RecomputeModule::LayerNorm)) replicated_kept -= e * ((m.mla() ? 1 : 0) + (m.moe() ? 1 : 0));
  if (!m.moe() && on(workload::RecomputeModule::Mlp)) replicated_kept -= e;
  if (m.mla() && on(workload::RecomputeModule::MlaUpProj)) split -= e * (2 * qr + vo);
  if (m.moe()) {
    // Each token visits top_k experts, padded to capacity: the permuted input and the expert
    // internals are duplicated top_k·capacity times (on the most loaded of the ep ranks under
    // routing imbalance: top_k·moe_rank_load); the router keeps fp32 logits. Shared experts keep
    // what a dense MLP of their total width does.
    const double dup = m.top_k * workload::moe_rank_load(m, ep);
    if (!on(workload::RecomputeModule::Moe)) {
      const double routed_act = act_tensors - (on(workload::RecomputeModule::MoeAct) ? 1 : 0);
      split += dup * e * (1 + routed_act * f) + 4.0 * m.experts / h;
      if (!on(workload::RecomputeModule::SharedExperts)) split += e * act_tensors * m.shared_width() / h;
    }
  } else if (!on(workload::RecomputeModule::Mlp)) {
    split += e * act_tensors * f;
  }
  const double per_sbh = replicated_kept / (sequence_parallel ? t : 1.0) + split / t;

  if (r == Recompute::SelectiveOp) {
    // What the per-op policy keeps (dense models; docs/cost-models.md#activations): the layer
    // input (the checkpoint's input), the outputs of the kept matmuls q (qr), v (g) and gate or
    // up (f), split over TP ranks, SwiGLU's down projection (7th matmul: its full-width partial
    // sums before the reduce-scatter), the reduce-scatter outputs under sequence-parallel TP
    // (kept by the policy), and fused attention's output and log-sum-exp. Everything else is
    // re-created in the backward, one layer at a time.
    const bool gated = m.activation == workload::Activation::SwiGlu;
    double keep = e / (sequence_parallel ? t : 1.0) + e * (qr + g + f) / t + e * qr / t;
    if (gated) keep += e;
    if (tp > 1 && sequence_parallel) keep += (gated ? 2 : 1) * e / t;
    double bytes = keep * sbh;
    if (flash_attention) bytes += 4.0 * a * s * b / t;
    return Bytes{bytes};
  }

  double bytes = per_sbh * sbh;
  const bool scores_kept = r == Recompute::None || (selective && !workload::has_module(modules, workload::RecomputeModule::CoreAttn));
  if (scores_kept && !flash_attention) {
    // Softmax output (e), dropout mask (1) and dropout output (e) of the a·s×s scores.
    bytes += (2 * e + mask) * a * s * s * b / t;
  }
  if (flash_attention) bytes += 4.0 * a * s * b / t;  // fp32 log-sum-exp per row and head
  return Bytes{bytes};
}

double in_flight_micro_batches(Schedule sch, int stage, int stages, int micro_batches,
                               int virtual_stages) {
  const double m = micro_batches;
  switch (sch) {
    case Schedule::GPipe: return m;
    case Schedule::OneFOneB: return std::min<double>(stages - stage, m);
    case Schedule::Interleaved: {
      // Megatron-LM's interleaved warm-up: (p − i − 1)·2 + (v − 1)·p + 1 model chunks in flight,
      // each 1/v of the stage. For stage 0 this is p + (p − 1)/v stages' worth, Korthikanti's
      // L·(1 + (p − 1)/(p·v)) for the first stage.
      const double v = virtual_stages;
      const double chunks = (stages - stage - 1) * 2.0 + (v - 1) * stages + 1;
      return std::min(chunks, m * v) / v;
    }
  }
  return m;
}

StateBytes state_bytes(hw::Dtype precision, workload::Optimizer opt, bool autocast) {
  const bool mixed = precision != hw::Dtype::Fp32 && !autocast;
  StateBytes sb;
  sb.weights = mixed ? 2 : 4;
  sb.grads = 4;  // fp32 main gradients (Megatron accumulates in fp32 by default)
  sb.expert_grads = sb.grads;
  const double master = mixed ? 4 : 0;
  sb.optimizer = master + (opt == workload::Optimizer::Adam ? 8 : 4);
  return sb;
}

MemoryBreakdown device_memory(const DeviceMemoryInput& in) {
  const double d = std::max(1, in.dp);
  const double de = std::max(1.0, d * std::max(1, in.expert_fold) / std::max(1, in.ep));  // the experts' data-parallel ranks
  const double dense = in.params - in.expert_params;
  auto state = [&](double bytes, double expert_bytes, bool sharded) {
    return Bytes{dense * bytes / (sharded ? d : 1.0) + in.expert_params * expert_bytes / (sharded ? de : 1.0)};
  };
  MemoryBreakdown mb;
  mb.add("weights", state(in.state.weights, in.state.weights, in.zero >= 3));
  mb.add("gradients", state(in.state.grads, in.state.expert_grads, in.zero >= 2));
  mb.add("optimizer", state(in.state.optimizer, in.state.optimizer, in.zero >= 1));
  mb.add("activations", in.activations_per_micro_batch * in.in_flight);
  mb.add("transient", in.transient);
  mb.add("comm buffers", in.comm_buffers);
  mb.add("fragmentation", mb.total() * in.fragmentation);
  mb.add("runtime reserve", in.runtime_reserve);
  return mb;
}

}  // namespace hetsim::cost
