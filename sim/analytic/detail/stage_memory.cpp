#include "sim/analytic/detail/stage_memory.hpp"

namespace hetsim::analytic::detail {

void price_memory(const PlanContext& ctx, const plan::Stage& st, bool sp, bool first, bool last, int n_moe, int shard,
                  StageCost& c) {
  const auto& s = ctx.s;
  const auto& m = ctx.m;
  const auto& p = ctx.p;
  const auto& tr = ctx.tr;
  const hw::Dtype dt = ctx.dt;
  const double e = ctx.e;
  const auto& sb = ctx.sb;
  const int seq = ctx.seq;
  const double sbh = ctx.sbh;
  const int ep = ctx.ep;
  const auto& dense_m = ctx.dense_m;
  const hw::DeviceSpec& dev = ctx.cl.pools[st.pool].device;
  const bool mixed = m.moe() && n_moe < st.layers;
  const double moe_share = st.layers > 0 ? static_cast<double>(n_moe) / st.layers : 0;
  // Memory. Eager modules save more than fused kernels (memory.hpp: repeated GQA K and V,
  // SwiGLU's SiLU output).
  const bool eager = !tr.fused_kernels;
  c.act_per_layer = cost::activation_bytes_per_layer(m, p.micro_batch, seq, st.tp, sp,
                                                     p.recompute, tr.flash_attention, dt, eager, ep, p.recompute_modules);
  if (mixed)
    c.act_per_layer = Bytes{c.act_per_layer.v * moe_share +
                            cost::activation_bytes_per_layer(dense_m, p.micro_batch, seq, st.tp, sp, p.recompute,
                                                             tr.flash_attention, dt, eager, 1, p.recompute_modules)
                                    .v * (1 - moe_share)};
  if (first) c.act_edge = Bytes{e * sbh / (sp ? st.tp : 1)};  // embedding output
  // The loss's peak per logit: Megatron-LM's fused vocabulary-parallel cross-entropy keeps
  // the bf16 logits and one fp32 buffer it works in place on (6 bytes); PyTorch's eager
  // cross_entropy on .float() logits holds, at its backward's peak, the saved fp32
  // log-softmax, the fp32 gradient nll_loss's backward writes and the fp32 gradient
  // log-softmax's backward writes (12 bytes; docs/cost-models.md#other-parts).
  // A fused 16-bit cross-entropy holds the logits and their gradient written in place (2 +
  // 2 bytes at most).
  const double per_logit = tr.loss_kernel == workload::LossKernel::Fused ? 4.0 : tr.fused_kernels ? 6.0 : 12.0;
  if (last) c.logits = Bytes{per_logit * p.micro_batch * seq * m.vocab / st.tp};
  // PyTorch FSDP (ZeRO-3 on GPUs): what sharding does not shard while a unit computes
  // (docs/cost-models.md#zero-3-buffers). TPUs run JAX/XLA, which gathers each weight where
  // it is used, so only the two layers count there.
  const bool torch_fsdp = p.zero == 3 && shard > 1 && dev.vendor != "google";
  if (p.zero == 3) {
    // Two layers' weights gathered: the one computing and the one prefetched.
    c.gathered = Bytes{2 * c.params_layer * sb.weights};
    // The root unit (embedding, final norm, output layer) is not resharded after the
    // forward (FSDP's _lazy_init sets the root's post_forward_mesh_info to None): its
    // weights stay gathered through the loss and the whole backward.
    if (torch_fsdp) c.gathered += Bytes{(c.params_emb + c.params_head) * sb.weights};
  }
  c.memory.params = c.params;
  c.memory.expert_params = c.expert_params;
  c.memory.ep = ep;
  c.memory.expert_fold = c.expert_fold;
  c.memory.state = sb;
  // What the framework keeps (memory only).
  c.memory.state.grads = s.memory.gradient_bytes;
  c.memory.state.expert_grads = s.memory.expert_gradient_bytes.value_or(s.memory.gradient_bytes);
  if (s.memory.optimizer_bytes) c.memory.state.optimizer = *s.memory.optimizer_bytes;
  c.memory.zero = p.zero;
  c.memory.dp = shard;
  // A layer's backward holds more than what was kept for it: what recompute re-creates
  // (the whole layer under full recompute, the recompute modules' activations under selective), and the
  // gradients in flight (the layer's output gradient and the MLP's intermediate
  // gradients). The head's logits are freed before the layers' backward starts, so the
  // larger of the two counts (docs/cost-models.md#other-parts).
  {
    const Bytes kept = c.act_per_layer;
    // A layer's backward at a time: the larger kind's, MoE where the stage has any.
    const workload::ModelSpec& wm = n_moe > 0 ? m : dense_m;
    const Bytes whole = cost::activation_bytes_per_layer(wm, p.micro_batch, seq, st.tp, sp,
                                                         cost::Recompute::None, tr.flash_attention, dt, eager, ep);
    const double act = m.activation == workload::Activation::SwiGlu ? 2 : 1;
    const Bytes grads{e * p.micro_batch * seq *
                      (m.hidden / (sp ? st.tp : 1.0) +
                       act * (wm.ffn_hidden * (wm.moe() ? wm.top_k : 1) + wm.shared_width()) / st.tp)};
    c.backward_working = (whole > kept ? whole - kept : Bytes{0}) + grads;
    if (torch_fsdp) {
      // FSDP's backward per layer: autograd writes the layer's unsharded weight gradients in
      // the unsharded weights' dtype, and foreach_reduce copies them into a reduce-scatter
      // input of the reduce dtype that lives until the collective ends, while the next
      // layer's gradients are computed; the root's output-layer gradient is held unsharded
      // until the root's post-backward at the end of the backward.
      c.backward_working += Bytes{c.params_layer * (sb.weights + tr.grad_reduce_bytes) + c.params_head * sb.weights};
    }
  }
  c.memory.transient = (c.logits > c.backward_working ? c.logits : c.backward_working) + c.gathered;
  c.memory.comm_buffers = s.memory.comm_buffers;
  c.memory.runtime_reserve = s.memory.runtime_reserve;
  c.memory.fragmentation = s.memory.fragmentation;
}

}  // namespace hetsim::analytic::detail
