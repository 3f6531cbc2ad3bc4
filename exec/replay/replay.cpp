#include "exec/replay/replay.hpp"

#include "exec/replay/clock_sync.hpp"
#include "exec/replay/dp_groups.hpp"
#include "exec/replay/payload.hpp"
#include "exec/replay/routing.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "models/cost/compute.hpp"
#include "models/workload/layer_ops.hpp"
#include "models/workload/model_spec.hpp"
#include "sim/analytic/op_breakdown.hpp"
#include "sim/analytic/stage_cost.hpp"
#include "sim/schedule/schedule.hpp"

namespace hetsim::exec {
namespace {

using schedule::TaskKind;
using workload::OpKind;

// Op classes timed inside a task: workload::OpKind's, then the optimizer, a MoE layer's expert
// GEMMs, and expert parallelism's all-to-alls.
constexpr int kClasses = 9;
constexpr int kOptimizerClass = 6;
constexpr int kExpertGemmClass = 7;
constexpr int kAllToAllClass = 8;
std::string class_name(int c) {
  if (c == kOptimizerClass) return "optimizer";
  if (c == kExpertGemmClass) return "expert gemm";
  if (c == kAllToAllClass) return "all-to-all";
  return std::string(workload::op_kind_name(static_cast<OpKind>(c)));
}
bool expert_gemm(const workload::Op& op) { return op.kind == OpKind::Gemm && op.name.rfind("expert_", 0) == 0; }
int op_class(const workload::Op& op) { return expert_gemm(op) ? kExpertGemmClass : static_cast<int>(op.kind); }

// A MoE layer's ops as EP rank `q` runs them under `r`: each local expert's GEMMs with the rows
// routed to it (a grouped GEMM of the real per-expert token counts; an expert no token reached
// runs nothing), its activation over those rows. The rest as priced.
std::vector<workload::Op> routed_ops(const std::vector<workload::Op>& ops, const LayerRouting& r, int q, int local) {
  std::vector<workload::Op> out;
  double priced = 0, real = 0;  // expert rows as priced, as routed
  for (int j = 0; j < local; ++j) real += static_cast<double>(r.expert_rows(q * local + j));
  for (const auto& op : ops)
    if (op.name == "expert_up") priced = op.m * op.count;
  for (const auto& op : ops) {
    if (expert_gemm(op)) {
      for (int j = 0; j < local; ++j) {
        const auto rows = r.expert_rows(q * local + j);
        if (rows <= 0) continue;
        workload::Op one = op;
        const double share = static_cast<double>(rows) / std::max(1.0, op.m * op.count);
        one.m = static_cast<double>(rows);
        one.count = 1;
        one.fwd_flops = op.fwd_flops * share;
        one.bwd_flops = op.bwd_flops * share;
        one.fwd_bytes = op.fwd_bytes * share;
        one.bwd_bytes = op.bwd_bytes * share;
        out.push_back(one);
      }
    } else if (op.name.rfind("expert_", 0) == 0 && priced > 0) {
      workload::Op scaled = op;  // the activation between the experts' GEMMs
      const double share = real / priced;
      scaled.elems = op.elems * share;
      scaled.fwd_bytes = op.fwd_bytes * share;
      scaled.bwd_bytes = op.bwd_bytes * share;
      out.push_back(scaled);
    } else {
      out.push_back(op);
    }
  }
  return out;
}

Format format_for(hw::Dtype d) {
  switch (d) {
    case hw::Dtype::Fp32: return Format::Fp32;
    case hw::Dtype::Fp16: return Format::Fp16;
    default: return Format::Bf16;  // bf16, and fp8 (whose GEMMs no backend here runs in 8 bits)
  }
}

// The device's three scratch buffers, big enough for the largest operands seen so far.
struct Scratch {
  Device* dev = nullptr;
  void *pa = nullptr, *pb = nullptr, *pc = nullptr;
  std::size_t na = 0, nb = 0, nc = 0;
  bool failed = false;  ///< a workspace could not be had: the task must fail, not compute
  void fit(std::size_t a, std::size_t b, std::size_t c) {
    if (a > na) { pa = dev->workspace(0, a); na = pa ? a : 0; }
    if (b > nb) { pb = dev->workspace(1, b); nb = pb ? b : 0; }
    if (c > nc) { pc = dev->workspace(2, c); nc = pc ? c : 0; }
    failed = failed || pa == nullptr || pb == nullptr || pc == nullptr;
  }
  float* fa() const { return static_cast<float*>(pa); }
  float* fb() const { return static_cast<float*>(pb); }
  float* fc() const { return static_cast<float*>(pc); }
};

std::size_t as_size(double x) { return std::max<std::size_t>(1, static_cast<std::size_t>(x + 0.5)); }
int as_int(double x) { return static_cast<int>(as_size(x)); }

// What the op of a compute task runs as (the same op lists the cost model prices).
struct OpContext {
  Format format = Format::Fp32;
  Format norm_format = Format::Fp32;  ///< the norms' tensors: fp32 under autocast, else `format`
  AttentionShape attention;  ///< heads: micro-batch × heads per rank
  int hidden = 1;            ///< norm width
  int vocab_rank = 1;        ///< loss width (the rank's vocabulary shard)
};

// Runs one op's pass as its kernel: GEMMs as GEMMs of the op's shape (backward: the data- and
// weight-gradient GEMMs), attention as the blocked softmax attention (FlashAttention-2's five
// GEMMs backward), norms and the loss as row normalisations, everything else as an elementwise
// pass over the op's bytes (one element at a time for the ops PyTorch cannot vectorize).
void run_op(Device& dev, Scratch& sc, const workload::Op& op, bool backward, const OpContext& c) {
  const std::size_t eb = format_bytes(c.format);
  switch (op.kind) {
    case OpKind::Gemm: {
      const int m = as_int(op.m), n = as_int(op.n), k = as_int(op.k);
      // Forward reads m×k and k×n and writes m×n; backward swaps the roles: every buffer must
      // hold the largest of the three matrices.
      const std::size_t most = std::max({std::size_t(m) * n, std::size_t(n) * k, std::size_t(m) * k}) * eb;
      sc.fit(most, most, most);
      if (sc.failed) return;
      for (int i = 0; i < op.count; ++i) {
        if (!backward) {
          dev.gemm(m, n, k, c.format, sc.pa, sc.pb, sc.pc);
        } else {
          dev.gemm(m, k, n, c.format, sc.pa, sc.pb, sc.pc);  // dA = dC·Bᵀ
          dev.gemm(k, n, m, c.format, sc.pa, sc.pb, sc.pc);  // dB = Aᵀ·dC
        }
      }
      return;
    }
    case OpKind::Attention: {
      const auto& a = c.attention;
      // Inputs come from a and b, results go to c (forward: O; backward: dQ, dK, dV from dO in
      // b): no result is read back, so values stay as bounded as the workspaces' fill.
      const std::size_t one = std::size_t(a.heads) * a.seq * a.head_dim * eb;
      sc.fit(3 * one, one, 3 * one);
      if (sc.failed) return;
      if (backward) dev.attention(a, c.format, sc.pa, sc.pb, sc.pc, true);
      else dev.attention(a, c.format, sc.pa, sc.pc, sc.pb, false);
      return;
    }
    case OpKind::Norm:
    case OpKind::Loss: {
      // The forward pass reads and writes the tensor once: rows × width elements.
      const bool loss = op.kind == OpKind::Loss;
      const Format f = loss ? Format::Fp32 : c.norm_format;  // the loss works on fp32 logits
      const int cols = loss ? c.vocab_rank : c.hidden;
      const std::size_t elems = as_size(op.elems);
      const int rows = as_int(static_cast<double>(elems) / cols);
      const std::size_t bytes = std::size_t(rows) * cols * format_bytes(f);
      sc.fit(bytes, 1, bytes);
      if (sc.failed) return;
      dev.norm(rows, cols, f, sc.pa, sc.pc, backward);
      // The cross-entropy moves more than one normalisation (its casts, max, exp, sum; see
      // head_ops): the rest of the bytes the cost model counts, as an elementwise pass.
      const double rest = (backward ? op.bwd_bytes : op.fwd_bytes).v - 2.0 * static_cast<double>(bytes);
      const std::size_t count = std::min(as_size(std::max(0.0, rest) / 8.0), bytes / 4);
      if (loss && count > 0) {
        for (double left = rest; left > 0; left -= 8.0 * static_cast<double>(count))
          dev.elementwise(count, Format::Fp32, sc.pa, sc.pc);
      }
      return;
    }
    default: {
      // Read one element, write one: the pass moves the op's bytes.
      const double bytes = (backward ? op.bwd_bytes : op.fwd_bytes).v;
      const std::size_t count = as_size(bytes / (2.0 * static_cast<double>(eb)));
      if (count == 0) return;  // a pass this op does not run (backward-only casts and reductions)
      sc.fit(count * eb, 1, count * eb);
      if (sc.failed) return;
      if (op.unvectorized) dev.elementwise_unvectorized(count, c.format, sc.pa, sc.pc);
      else dev.elementwise(count, c.format, sc.pa, sc.pc);
      return;
    }
  }
}

// The members of a predecessor task's device (tensor-parallel degree `ptp`) that feed member
// (replica, rank) of a device with degree `tp`, in the same replica: for a pipeline message, the
// sender ranks whose slices it reads (schedule::pipeline_feeders: resharded between degrees when
// the message is split); for any other task, the ranks ≡ rank (mod the smaller degree).
std::vector<int> feeders(const schedule::Task& pred, int ptp, int tp, int replica, int rank) {
  std::vector<int> out;
  if (pred.kind == TaskKind::SendActivation || pred.kind == TaskKind::SendGradient) {
    for (int j : schedule::pipeline_feeders(ptp, tp, rank, pred.split)) out.push_back(replica * ptp + j);
    return out;
  }
  if (ptp <= tp) {
    out.push_back(replica * ptp + rank % ptp);
  } else {
    for (int r = rank; r < ptp; r += tp) out.push_back(replica * ptp + r);
  }
  return out;
}

// The backend device of each real device (ReplayOptions::pool_devices): its pool's list, taken
// round-robin in the plan's order, else its own index; `mapped` when some pool has a list.
struct BackendDevices {
  std::vector<int> index;
  bool mapped = false;
};
Result<BackendDevices> backend_devices(const Scenario& s, const schedule::TaskGraph& g,
                                       const std::vector<int>& first_real, int needed,
                                       const ReplayOptions& o, const Backend& backend) {
  BackendDevices out;
  out.index.resize(static_cast<std::size_t>(needed));
  for (int d = 0; d < needed; ++d) out.index[static_cast<std::size_t>(d)] = d;
  if (o.pool_devices.empty()) return out;
  if (o.pool_devices.size() != s.cluster.pools.size())
    return Diagnostic{{}, "devices",
                      "device lists for " + std::to_string(o.pool_devices.size()) + " pools, the scenario has " +
                          std::to_string(s.cluster.pools.size()) + " pools",
                      "one list per pool of the scenario (empty: unmapped)"};
  if (o.world != nullptr)
    return Diagnostic{{}, "devices",
                      "pool device lists are for one process: under mpirun each process drives its node-local device",
                      "place each pool's processes on its nodes (hostfile or rankfile) instead"};
  const int count = backend.device_count();
  for (std::size_t k = 0; k < o.pool_devices.size(); ++k)
    for (const int i : o.pool_devices[k])
      if (i < 0 || i >= count)
        return Diagnostic{{}, "devices",
                          "pool '" + s.cluster.pools[k].name + "': device " + std::to_string(i) + " is not one of the " +
                              backend.name() + " backend's " + std::to_string(count) + " (0-" +
                              std::to_string(count - 1) + ")",
                          "list device indexes the backend has", ErrorKind::Environment};
  std::vector<std::size_t> next(s.cluster.pools.size(), 0);
  for (std::size_t rep = 0; rep < g.devices.size(); ++rep) {
    const auto pool = static_cast<std::size_t>(g.devices[rep].pool);
    const auto& list = o.pool_devices[pool];
    if (list.empty()) continue;
    out.mapped = true;
    for (int m = 0; m < g.devices[rep].count; ++m)
      out.index[static_cast<std::size_t>(first_real[rep] + m)] = list[next[pool]++ % list.size()];
  }
  return out;
}

}  // namespace

Result<Replay> replay(const Scenario& s, const plan::Plan& p, Backend& backend, const ReplayOptions& o) {
  Replay out;
  if (o.steps < 1 || o.warmup < 0)
    return Diagnostic{{}, "steps", "at least one measured step is needed", "steps ≥ 1, warmup ≥ 0"};
  out.graph = schedule::build_schedule(s, p);
  auto pred = engine::run_native(out.graph);
  if (!pred) return pred.errors();
  out.predicted = *pred;
  const auto& g = out.graph;

  // Every folded device is unfolded into its real devices: tp ranks × replicas, one thread each;
  // each data-parallel collective joins the replicas of every group that hold its layer.
  const bool moe_ep = s.model.moe() && p.ep > 1;
  // The hierarchical dispatch (ep_dispatch): per folded device, the nodes its EP groups span
  // (EP ranks tp apart, devices_per_node / tp of them on a node, as stage_costs places them);
  // 1 where the dispatch is the all-to-all.
  std::vector<int> ep_nodes(g.devices.size(), 1);
  if (moe_ep && p.ep_dispatch == plan::Plan::EpDispatch::Hierarchical)
    for (std::size_t d = 0; d < g.devices.size(); ++d) {
      ep_nodes[d] = p.ep / analytic::group_ranks_per_node(
                                s.cluster.pools[static_cast<std::size_t>(g.devices[d].pool)].devices_per_node,
                                g.devices[d].tp, p.ep);
    }
  if (s.model.moe() && p.folds_experts())
    return Diagnostic{{}, "plan", "expert_tp below tp (MoE parallel folding) is not replayed yet: the executor draws "
                      "expert-parallel ranks from the data-parallel replicas only",
                      "replay the plan with expert_tp = tp (or without expert_tp) (docs/executor.md, Limits)"};
  if (moe_ep && p.overlap_ep_comm)
    return Diagnostic{{}, "plan", "overlap_ep_comm is not replayed: the executor runs the expert all-to-alls blocking, "
                                  "beside no other micro-batch's compute",
                      "replay the plan with overlap_ep_comm = false (docs/executor.md, Limits)"};
  auto layout = dp_layout(g);
  if (!layout) return layout.errors();
  const std::vector<int>& first_real = layout->first_real;
  const int needed = layout->real_devices;
  const bool multi_process = o.world != nullptr && o.world->size() > 1;
  auto devices_of = backend_devices(s, g, first_real, needed, o, backend);
  if (!devices_of) return devices_of.errors();
  const std::vector<int>& backend_index = devices_of->index;
  const bool mapped = devices_of->mapped;
  const int highest = needed > 0 ? *std::max_element(backend_index.begin(), backend_index.end()) : -1;
  if (!multi_process && highest >= backend.device_count())
    return Diagnostic{{}, "", "the plan needs " + std::to_string(needed) + " devices but the " + backend.name() +
                                  " backend has " + std::to_string(backend.device_count()),
                      mapped ? "give every pool its devices (pool device lists), or run with more devices (--devices)"
                             : "run with more devices (--devices), one process per device (mpirun), or scale the plan down (--fit)",
                      ErrorKind::Environment};
  if (multi_process && o.local_device >= backend.device_count())
    return Diagnostic{{}, "", "process " + std::to_string(o.world->rank()) + " should drive local device " +
                                  std::to_string(o.local_device) + " but the " + backend.name() + " backend has " +
                                  std::to_string(backend.device_count()) + " on its node",
                      "start at most as many processes per node as the node has devices", ErrorKind::Environment};
  int max_count = 1;
  for (const auto& d : g.devices) max_count = std::max(max_count, d.count);

  // The work of each compute task is the op lists it carries (TaskGraph::ops_of: the lists the
  // cost model priced it by). Here, how each device runs them.
  std::vector<OpContext> ctx(g.devices.size());
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    // The shape the cost model prices this stage's work at (stage_costs), not one of its own.
    const plan::Stage& stage = p.groups[static_cast<std::size_t>(g.devices[d].group)]
                                   .stages[static_cast<std::size_t>(g.devices[d].stage)];
    const workload::MicroBatchShape sh = analytic::micro_batch_shape(s, p, stage);
    auto& c = ctx[d];
    c.format = format_for(s.training.precision);
    c.norm_format = s.training.autocast ? Format::Fp32 : c.format;  // the residual stream stays fp32
    c.attention = {p.micro_batch * s.model.heads / sh.tp, s.training.seq_len, s.model.head_dim(),
                   s.training.causal && s.training.flash_attention};
    c.hidden = s.model.hidden;
    c.vocab_rank = std::max(1, s.model.vocab / sh.tp);
  }
  if (s.training.precision == hw::Dtype::Fp8)
    out.notes.push_back("fp8 GEMMs run in bf16 (no backend here has 8-bit GEMMs)");
  if (backend.name() == "cpu" && s.training.precision != hw::Dtype::Fp32)
    out.notes.push_back(std::string("the cpu backend stores ") + std::string(format_name(ctx[0].format)) +
                        " operands and computes in fp32");

  // The cost model's time per op class of every task (what the engine's durations are made of).
  out.predicted_parts.resize(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    const auto& info = g.devices[t.device];
    const auto& dev = s.cluster.pools[static_cast<std::size_t>(info.pool)].device;
    std::array<double, kClasses> sum{};
    // share: the part of each op this task runs (1, or its recompute share in a recompute task).
    auto add = [&](const std::vector<workload::Op>& ops, cost::Pass pass, double times, bool recompute) {
      for (const auto& op : ops) {
        const double share = recompute ? cost::recompute_share(op, p.recompute) : 1.0;
        if (share > 0)
          sum[static_cast<std::size_t>(op_class(op))] += cost::op_time(dev, s.training.precision, op, pass).v * times * share;
      }
    };
    if (t.kind == TaskKind::Forward || t.kind == TaskKind::Backward || t.kind == TaskKind::Recompute) {
      const auto pass = t.kind == TaskKind::Backward ? cost::Pass::Backward : cost::Pass::Forward;
      for (const schedule::OpUse& use : g.ops_of(i))
        add(g.op_lists[use.list], pass, use.times, t.kind == TaskKind::Recompute);
    } else if (t.kind == TaskKind::Optimizer) {
      sum[kOptimizerClass] = static_cast<double>(out.predicted.end[i] - out.predicted.start[i]) * 1e-9;
    } else if (t.kind == TaskKind::EpAllToAll) {
      sum[kAllToAllClass] = static_cast<double>(out.predicted.end[i] - out.predicted.start[i]) * 1e-9;
    }
    for (int c = 0; c < kClasses; ++c)
      if (sum[static_cast<std::size_t>(c)] > 0)
        out.predicted_parts[i].emplace_back(class_name(c), static_cast<std::int64_t>(sum[static_cast<std::size_t>(c)] * 1e9 + 0.5));
  }

  // Each device runs its tasks in the predicted order (a valid topological order).
  std::vector<std::vector<std::uint32_t>> order(g.devices.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) order[g.tasks[i].device].push_back(i);
  for (auto& v : order)
    std::stable_sort(v.begin(), v.end(), [&](auto a, auto b) { return out.predicted.start[a] < out.predicted.start[b]; });
  std::vector<std::vector<std::uint32_t>> preds(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i)
    for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1]; ++k) preds[g.succ[k]].push_back(i);

  // Optimizer bytes and DP parameter counts per device: what the cost model moves.
  const auto costs = analytic::stage_costs(s, p);
  const auto sb = cost::state_bytes(s.training.precision, s.training.optimizer, s.training.autocast);
  std::vector<std::size_t> adam_params;  // Adam's fp32 pass moves 28 bytes per parameter
  for (const auto& d : g.devices) {
    // The bytes the cost model prices (stage_costs): gradient norm + Adam over the shard, and
    // zeroing the local gradient buffer.
    const double local = costs[d.group][d.stage].params;
    const int sharded_over = costs[d.group][d.stage].shard_replicas;  // all replicas, or the group's (hybrid)
    // Under expert parallelism the routed experts' state shards over the replicas/ep that hold
    // the same experts, as stage_costs prices it.
    const auto& c = costs[d.group][d.stage];
    const int ep = moe_ep ? p.ep : 1;
    const double bytes = (p.zero >= 1 ? analytic::sharded_params(c, sharded_over, ep) : local) *
                             (2 * sb.grads + 2 * sb.optimizer + sb.weights) +
                         (p.zero >= 2 ? analytic::sharded_params(c, sharded_over, ep) : local) * sb.grads;
    adam_params.push_back(as_size(bytes / 28.0));
  }
  // Expert parallelism: every EP group's routing of each MoE layer and micro-batch, drawn once
  // (seeded: each member and every step routes alike), keyed (folded device, EP group,
  // micro-batch, layer). A micro-batch's tokens (micro_batch · seq_len) on each EP rank.
  std::map<std::tuple<std::uint32_t, int, int, int>, LayerRouting> routing;
  const int local_experts = moe_ep ? s.model.experts / p.ep : 0;
  if (moe_ep) {
    const std::int64_t tokens = std::int64_t{p.micro_batch} * s.training.seq_len;
    for (const auto& t : g.tasks) {
      if (t.kind != TaskKind::Forward) continue;
      const auto& info = g.devices[t.device];
      for (int e = 0; e < info.replicas / p.ep; ++e)
        for (int l = t.first_layer; l < t.first_layer + t.layers; ++l)
          if (s.model.moe_layer(l))
            routing.emplace(std::tuple{t.device, e, t.micro_batch, l},
                          route_layer(s.model, p.ep, tokens, s.seed, l, t.micro_batch, info.group * 65536 + e,
                                      ep_nodes[t.device]));
    }
  }
  // One process per real device under mpirun; else this process runs them all, a thread each.
  ProcessGroup* world = multi_process ? o.world : nullptr;
  if (world != nullptr && world->size() != needed)
    return Diagnostic{{}, "plan", "the plan needs " + std::to_string(needed) + " devices but " +
                                      std::to_string(world->size()) + " processes were started",
                      "mpirun -np " + std::to_string(needed) + " (one process per device)"};
  if (world != nullptr && !o.on_fatal)
    return Diagnostic{{}, "", "replay under mpirun needs ReplayOptions::on_fatal", "", ErrorKind::Internal};
  const int me = world != nullptr ? world->rank() : -1;
  auto local = [&](int real) { return world == nullptr || real == me; };
  if (!o.pool_speed.empty() && o.pool_speed.size() != s.cluster.pools.size())
    return Diagnostic{{}, "speed", std::to_string(o.pool_speed.size()) + " pool speeds for " +
                                       std::to_string(s.cluster.pools.size()) + " pools", "one speed per pool of the scenario"};
  for (std::size_t k = 0; k < o.pool_speed.size(); ++k)
    if (!(o.pool_speed[k] > 0 && o.pool_speed[k] <= 1))
      return Diagnostic{{}, "speed", "pool '" + s.cluster.pools[k].name + "': a device speed must be above 0 and at most 1, not " +
                                         std::to_string(o.pool_speed[k]), ""};
  if (!backend.slows())
    for (std::size_t k = 0; k < o.pool_speed.size(); ++k)
      if (o.pool_speed[k] != 1.0)
        return Diagnostic{{}, "speed", "pool '" + s.cluster.pools[k].name + "' at speed " + std::to_string(o.pool_speed[k]) +
                                           ": the " + backend.name() + " backend cannot slow its devices",
                          "device speed factors are a cpu backend feature (docs/executor.md)"};
  std::vector<std::unique_ptr<Device>> devices(static_cast<std::size_t>(needed));
  for (std::size_t rep = 0; rep < g.devices.size(); ++rep) {
    const auto pool = static_cast<std::size_t>(g.devices[rep].pool);
    const double speed = o.pool_speed.empty() ? 1.0 : o.pool_speed[pool];
    for (int m = 0; m < g.devices[rep].count; ++m) {
      const int d = first_real[rep] + m;
      if (!local(d)) continue;
      auto dev = backend.open_slowed(world != nullptr ? o.local_device : backend_index[static_cast<std::size_t>(d)], speed);
      if (!dev) return dev.errors();
      devices[static_cast<std::size_t>(d)] = std::move(*dev);
    }
  }
  if (mapped)
    for (std::size_t k = 0; k < o.pool_devices.size(); ++k) {
      if (o.pool_devices[k].empty()) continue;
      std::string list;
      for (const int i : o.pool_devices[k]) list += (list.empty() ? "" : ", ") + std::to_string(i);
      out.notes.push_back("pool '" + s.cluster.pools[k].name + "' runs on " + backend.name() + " devices " + list);
    }
  for (std::size_t k = 0; k < o.pool_speed.size(); ++k)
    if (o.pool_speed[k] != 1.0)
      out.notes.push_back("pool '" + s.cluster.pools[k].name + "' runs on " + backend.name() + " devices at speed " +
                          std::to_string(o.pool_speed[k]).substr(0, 5) + " (each kernel, then an idle)");
  std::vector<Scratch> scratch(static_cast<std::size_t>(needed));
  for (int d = 0; d < needed; ++d) scratch[static_cast<std::size_t>(d)].dev = devices[static_cast<std::size_t>(d)].get();

  // Communicators: the tp ranks of each (device, replica); the members of each data-parallel
  // collective (dp_layout: the replicas of every group that hold the layer, rank by rank).
  // Across processes every process takes part in every split (MPI_Comm_split is collective) and
  // keeps the communicator of its own member only.
  std::vector<std::unique_ptr<ProcessGroup>> subgroups;  // outlive the communicators made over them
  std::vector<std::vector<Communicators>> tp_comms(g.devices.size());
  std::vector<Communicators> dp_comms;  // per layout group, per member
  auto make_group = [&](const std::vector<int>& reals, const char* what) -> Result<Communicators> {
    std::vector<Device*> members;
    for (int r : reals) members.push_back(devices[static_cast<std::size_t>(r)].get());
    if (world == nullptr) {
      const std::string note = std::string(what) + " collectives: " + backend.transport(members);
      if (reals.size() > 1 && std::find(out.notes.begin(), out.notes.end(), note) == out.notes.end())
        out.notes.push_back(note);
      return backend.communicators(members);
    }
    Communicators comms(reals.size());
    const auto mine = std::find(reals.begin(), reals.end(), me);
    auto sub = world->split(mine != reals.end(), static_cast<int>(mine - reals.begin()));
    if (sub) {
      const auto i = static_cast<std::size_t>(mine - reals.begin());
      auto c = backend.communicator(members[i], *sub);
      if (!c) return c.errors();
      comms[i] = std::move(*c);
      subgroups.push_back(std::move(sub));
    }
    return comms;
  };
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    const int tp = g.devices[d].tp, reps = g.devices[d].replicas;
    auto real = [&](int replica, int rank) { return first_real[d] + replica * tp + rank; };
    for (int r = 0; r < reps; ++r) {
      std::vector<int> reals;
      for (int t = 0; t < tp; ++t) reals.push_back(real(r, t));
      auto c = make_group(reals, "tensor-parallel");
      if (!c) return c.errors();
      tp_comms[d].push_back(std::move(*c));
    }
  }
  // The EP groups of each folded device (ep > 1): tp rank k of replicas e·ep … e·ep + ep − 1,
  // as Megatron-Core draws EP ranks from the DP ranks; ep_comms[device][e · tp + k][member].
  std::vector<std::vector<Communicators>> ep_comms(g.devices.size());
  if (moe_ep)
    for (std::size_t d = 0; d < g.devices.size(); ++d) {
      const int tp = g.devices[d].tp;
      for (int e = 0; e < g.devices[d].replicas / p.ep; ++e)
        for (int k = 0; k < tp; ++k) {
          std::vector<int> reals;
          for (int q = 0; q < p.ep; ++q) reals.push_back(first_real[d] + (e * p.ep + q) * tp + k);
          auto c = make_group(reals, "expert-parallel");
          if (!c) return c.errors();
          ep_comms[d].push_back(std::move(*c));
        }
    }
  // The hierarchical dispatch over N > 1 nodes: each EP group's ranks of one local index across
  // the nodes (its rail: the network step) and its ranks on one node (the fabric step), per real
  // device; no node communicator where a node holds one EP rank.
  std::vector<Communicator*> rail_of(static_cast<std::size_t>(needed), nullptr), node_of(static_cast<std::size_t>(needed), nullptr);
  std::vector<Communicators> hier_comms;
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    const int nodes = ep_nodes[d];
    if (nodes <= 1) continue;
    const int tp = g.devices[d].tp, k = p.ep / nodes;
    auto add = [&](const std::vector<int>& reals, const char* what, std::vector<Communicator*>& of) -> Diagnostics {
      auto c = make_group(reals, what);
      if (!c) return c.errors();
      for (std::size_t m = 0; m < reals.size(); ++m) of[static_cast<std::size_t>(reals[m])] = (*c)[m].get();
      hier_comms.push_back(std::move(*c));
      return {};
    };
    for (int e = 0; e < g.devices[d].replicas / p.ep; ++e)
      for (int r = 0; r < tp; ++r) {
        auto real = [&](int q) { return first_real[d] + (e * p.ep + q) * tp + r; };
        for (int i = 0; i < k; ++i) {
          std::vector<int> rail;
          for (int b = 0; b < nodes; ++b) rail.push_back(real(b * k + i));
          if (auto errs = add(rail, "expert-parallel (across nodes)", rail_of); !errs.empty()) return errs;
        }
        if (k > 1)
          for (int b = 0; b < nodes; ++b) {
            std::vector<int> node;
            for (int i = 0; i < k; ++i) node.push_back(real(b * k + i));
            if (auto errs = add(node, "expert-parallel (within a node)", node_of); !errs.empty()) return errs;
          }
      }
  }
  for (const auto& reals : layout->groups) {
    auto c = make_group(reals, "data-parallel");
    if (!c) return c.errors();
    dp_comms.push_back(std::move(*c));
  }
  // The data-parallel communicators of each real device: per layout group, its own member.
  std::vector<std::map<int, Communicator*>> dp_of(static_cast<std::size_t>(needed));
  for (std::size_t gi = 0; gi < layout->groups.size(); ++gi)
    for (std::size_t m = 0; m < layout->groups[gi].size(); ++m)
      if (auto* c = dp_comms[gi][m].get(); c != nullptr)
        dp_of[static_cast<std::size_t>(layout->groups[gi][m])][static_cast<int>(gi)] = c;
  // Under expert parallelism, the members of each data-parallel group that hold the same experts
  // (the same EP rank: replica mod ep, as the EP groups above are drawn): the routed experts'
  // part of its collectives runs among them (edp_of: per real device, per layout group; absent
  // when the device is alone with its experts, so that they need no sync).
  std::vector<std::map<int, Communicator*>> edp_of(static_cast<std::size_t>(needed));
  std::vector<Communicators> edp_comms;
  if (moe_ep) {
    std::vector<int> replica_of(static_cast<std::size_t>(needed), 0);
    for (std::size_t d = 0; d < g.devices.size(); ++d)
      for (int m = 0; m < g.devices[d].count; ++m)
        replica_of[static_cast<std::size_t>(first_real[d] + m)] = m / g.devices[d].tp;
    // Only the groups of collectives within the groups (hybrid sharding's all-reduce across
    // them moves the whole shard on its own groups).
    std::set<int> within;
    for (const auto& per_rank : layout->member_of)
      for (const auto& joins : per_rank) within.insert(joins.begin(), joins.end());
    std::map<std::vector<int>, std::size_t> made;
    for (const int gi : within) {
      std::vector<std::vector<int>> parts(static_cast<std::size_t>(p.ep));
      for (int real : layout->groups[static_cast<std::size_t>(gi)])
        parts[static_cast<std::size_t>(replica_of[static_cast<std::size_t>(real)] % p.ep)].push_back(real);
      for (const auto& part : parts) {
        if (part.size() < 2) continue;
        auto at = made.find(part);
        if (at == made.end()) {
          auto c = make_group(part, "expert data-parallel");
          if (!c) return c.errors();
          edp_comms.push_back(std::move(*c));
          at = made.emplace(part, edp_comms.size() - 1).first;
        }
        for (std::size_t m = 0; m < part.size(); ++m)
          if (auto* c = edp_comms[at->second][m].get(); c != nullptr)
            edp_of[static_cast<std::size_t>(part[m])][gi] = c;
      }
    }
  }
  // Across processes, dependencies between devices are messages: a token (host memory) when a
  // task finishes, and a send task's payload (device memory) to the stage that reads it.
  std::unique_ptr<Communicator> tokens, payloads;
  if (world != nullptr) {
    tokens = world->communicator(nullptr);
    payloads = world->communicator(devices[static_cast<std::size_t>(me)].get());
    out.notes.push_back("one process per device: " + std::to_string(world->size()) + " processes");
  }
  // The remote members each finished task's member feeds (real device indexes, once each).
  auto remote_successors = [&](std::uint32_t id, int member) {
    std::vector<int> to;
    const auto& pinfo = g.devices[g.tasks[id].device];
    const int self = first_real[g.tasks[id].device] + member;
    for (std::uint32_t k = g.succ_begin[id]; k < g.succ_begin[id + 1]; ++k) {
      const auto sdev = g.tasks[g.succ[k]].device;
      const auto& sinfo = g.devices[sdev];
      for (int m = 0; m < sinfo.count; ++m) {
        const auto f = feeders(g.tasks[id], pinfo.tp, sinfo.tp, m / sinfo.tp, m % sinfo.tp);
        const int real = first_real[sdev] + m;
        if (real != self && std::find(f.begin(), f.end(), member) != f.end() &&
            std::find(to.begin(), to.end(), real) == to.end())
          to.push_back(real);
      }
    }
    return to;
  };
  const std::size_t act_elems = static_cast<std::size_t>(p.micro_batch) * static_cast<std::size_t>(s.training.seq_len) *
                                static_cast<std::size_t>(s.model.hidden);
  // What goes over the wire is sized as the cost model prices it: activations and weights in the
  // training format (2 bytes in mixed precision, so half as many fp32 values), fp32 gradients.
  const bool wide = s.training.precision == hw::Dtype::Fp32;
  const std::size_t wire_act = wide ? act_elems : act_elems / 2;
  // The receivers of pipeline message `id` sent by `member`, with each one's share in floats.
  auto message_targets = [&](std::uint32_t id, int member) {
    std::vector<std::pair<int, std::size_t>> targets;
    const auto& pinfo = g.devices[g.tasks[id].device];
    for (int to : remote_successors(id, member))
      for (std::uint32_t k = g.succ_begin[id]; k < g.succ_begin[id + 1]; ++k) {
        const auto sdev = g.tasks[g.succ[k]].device;
        const int m = to - first_real[sdev];
        if (m < 0 || m >= g.devices[sdev].count) continue;
        targets.emplace_back(to, message_floats(g, id, pinfo.tp, g.devices[sdev].tp, member % pinfo.tp,
                                                m % g.devices[sdev].tp));
        break;
      }
    return targets;
  };

  // Each device's inbox: where pipeline senders of this process copy activations and gradients
  // (scratch slot 3, made once before the threads start; concurrent senders overwrite one another's
  // bytes, which only the timing cares about).
  std::vector<void*> inbox(static_cast<std::size_t>(needed), nullptr);
  for (int d = 0; d < needed; ++d)
    if (local(d) && (inbox[static_cast<std::size_t>(d)] = devices[static_cast<std::size_t>(d)]->workspace(3, 4 * wire_act)) == nullptr)
      return Diagnostic{{}, "", devices[static_cast<std::size_t>(d)]->name() + ": no memory for the pipeline inbox (" +
                                    std::to_string(4 * wire_act) + " bytes)", "", ErrorKind::Environment};

  std::vector<engine::Trace> steps;
  std::vector<std::vector<io::TaskParts>> step_parts;
  // Under mpirun every process times its tasks from rank 0's step start (clock_sync.hpp), so the
  // ends and starts of dependent tasks on different processes compare.
  const std::int64_t clock_offset = world != nullptr ? clock_offset_to_rank0(*world) : 0;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    // done[task · max_count + member]: member = replica · tp + rank of the task's device.
    std::vector<std::atomic<bool>> done(g.size() * static_cast<std::size_t>(max_count));
    // Timings of member 0 of every folded device (the members run the same tasks in lock step
    // through their collectives).
    std::vector<std::int64_t> start(g.size()), end(g.size());
    std::vector<io::TaskParts> parts(g.size());
    std::vector<std::pair<std::string, std::string>> error(static_cast<std::size_t>(needed));  // why, hint
    std::atomic<bool> failed{false};
    // The device that failed first: the cause (the others fail because it left their groups).
    std::atomic<int> first_failed{-1};
    std::atomic<std::int64_t> last_end{0};  // over every member, not only the timed ones
    const std::int64_t t0 = world != nullptr ? common_step_origin(*world, clock_offset) : host_clock_ns();
    std::vector<std::thread> threads;
    for (std::size_t rep = 0; rep < g.devices.size(); ++rep)
      for (int member = 0; member < g.devices[rep].count; ++member)
        if (local(first_real[rep] + member)) threads.emplace_back([&, rep, member] {
          const auto& info = g.devices[rep];
          const int tp = info.tp;
          const int replica = member / tp, rank = member % tp;
          const auto real = static_cast<std::size_t>(first_real[rep] + member);
          Device& dev = *devices[real];
          Scratch& sc = scratch[real];
          const OpContext& oc = ctx[rep];
          auto flag = [&](std::uint32_t task, int m) -> std::atomic<bool>& {
            return done[task * static_cast<std::size_t>(max_count) + static_cast<std::size_t>(m)];
          };
          Communicator& tpc = *tp_comms[rep][static_cast<std::size_t>(replica)][static_cast<std::size_t>(rank)];
          Communicator* epc = moe_ep ? ep_comms[rep][static_cast<std::size_t>(replica / p.ep * tp + rank)]
                                               [static_cast<std::size_t>(replica % p.ep)]
                                                   .get()
                                     : nullptr;
          const auto& dpcs = dp_of[real];  // every data-parallel collective this member joins
          // Activations held between tasks, per (chunk, micro-batch): a task allocates its block
          // at its start; at its end the block joins what that micro-batch holds, less what it
          // frees.
          std::map<std::pair<int, int>, std::pair<void*, std::size_t>> held;
          TpOwed tp_owed;  // this device's TP calls' fractions, carried from task to task
          void* base_ptr = nullptr;
          std::set<std::pair<std::uint32_t, int>> received;  // (task, process) already heard of
          auto fail = [&](const std::string& why, const std::string& hint = "") {
            if (world != nullptr)
              // MPI cannot drop a member from its collectives: the front end says what failed and
              // ends the run (rank 0 has handed the steps measured so far to on_step).
              o.on_fatal(Diagnostic{{}, "", "step " + std::to_string(step) + ": " + (why.empty() ? "failed" : why), hint,
                                    ErrorKind::Environment});
            if (!why.empty()) {
              error[real] = {why, hint};
              int none = -1;
              first_failed.compare_exchange_strong(none, static_cast<int>(real));
            }
            failed = true;
            tpc.leave();
            if (epc != nullptr) epc->leave();
            for (auto& [gi, c] : dpcs) c->leave();
            for (auto& [key, block] : held)
              if (block.first != nullptr) dev.release(block.first, block.second);
            held.clear();
            if (base_ptr != nullptr) dev.release(base_ptr, static_cast<std::size_t>(info.baseline_bytes));
            for (std::uint32_t rest : order[rep]) {  // let the other devices finish their waits
              flag(rest, member) = true;
              flag(rest, member).notify_all();
            }
          };
          auto base = dev.allocate(static_cast<std::size_t>(info.baseline_bytes));
          if (!base) { fail(base.errors()[0].message + " for its resident state", base.errors()[0].hint); return; }
          base_ptr = *base;
          for (std::uint32_t id : order[rep]) {
            // Every predecessor rank that feeds this one: same replica, ranks ≡ rank (mod tp).
            for (std::uint32_t pr : preds[id]) {
              const auto pdev = g.tasks[pr].device;
              for (int pm : feeders(g.tasks[pr], g.devices[pdev].tp, tp, replica, rank)) {
                const int from = first_real[pdev] + pm;
                if (world == nullptr || from == me) {
                  flag(pr, pm).wait(false);
                  continue;
                }
                if (!received.insert({pr, from}).second) continue;
                // A send task's message is its payload, received into the buffer the next stage
                // reads; any other task's is a token.
                const auto kind = g.tasks[pr].kind;
                Result<std::int64_t> r = std::int64_t{0};
                if (kind == TaskKind::SendActivation || kind == TaskKind::SendGradient) {
                  const std::size_t floats = message_floats(g, pr, g.devices[pdev].tp, tp, pm % g.devices[pdev].tp, rank);
                  sc.fit(4 * floats, 1, 4 * floats);
                  if (sc.failed) { fail(dev.name() + ": no memory to receive an activation"); return; }
                  r = payloads->recv(sc.fc(), floats, from, static_cast<int>(2 * pr + 1));
                } else {
                  float token = 0;
                  r = tokens->recv(&token, 1, from, static_cast<int>(2 * pr));
                }
                if (!r) { fail(dev.name() + ": " + r.errors()[0].message); return; }
              }
            }
            if (failed) { fail(""); return; }
            const auto& t = g.tasks[id];
            const std::string where = " in task '" + schedule::task_name(t) + "'";
            void* own = nullptr;
            if (t.alloc_bytes > 0) {
              auto a = dev.allocate(static_cast<std::size_t>(t.alloc_bytes));
              if (!a) { fail(a.errors()[0].message + where, a.errors()[0].hint); return; }
              own = *a;
            }
            // Marks: the task's start, then one after every timed op (its class noted).
            std::vector<int> mark_class;
            dev.record();
            auto timed = [&](int cls) {
              dev.record();
              mark_class.push_back(cls);
            };
            std::int64_t began = -1;  // a collective's real start: when its last member arrived
            std::string comm_error;
            auto note = [&](const Result<std::int64_t>& r, bool first) {
              if (!r) comm_error = dev.name() + ": " + r.errors()[0].message;
              else if (first && began < 0) began = *r;
            };
            const bool bwd = t.kind == TaskKind::Backward;
            // recompute: each op's recompute share of its forward (a GEMM re-run in part as a
            // GEMM of that share of its columns).
            auto run_ops = [&](const std::vector<workload::Op>& ops, bool backward, bool recompute) {
              for (const auto& op : ops) {
                const double share = recompute ? cost::recompute_share(op, p.recompute) : 1.0;
                if (share <= 0) continue;
                if (share < 1) {
                  workload::Op part = op;
                  part.n = std::max(1.0, std::round(op.n * share));
                  part.elems *= share;
                  part.fwd_bytes = op.fwd_bytes * share;
                  part.fwd_flops = op.fwd_flops * share;
                  run_op(dev, sc, part, backward, oc);
                } else {
                  run_op(dev, sc, op, backward, oc);
                }
                timed(op_class(op));
              }
            };
            // A layer's ops; with expert parallelism, as this EP rank's routing of it runs them.
            std::vector<workload::Op> routed;
            auto routing_of = [&](const schedule::Task& task, int l) -> const LayerRouting& {
              return routing.at({static_cast<std::uint32_t>(rep), replica / p.ep, task.micro_batch, task.first_layer + l});
            };
            // The task's op lists (TaskGraph::ops_of): each of its layers runs the list of its kind
            // (a MoE model's dense layers the dense list, where the stage has both), then the
            // embedding's and the head's.
            const std::vector<workload::Op>* layer_list = nullptr;
            const std::vector<workload::Op>* dense_list = nullptr;
            std::vector<const std::vector<workload::Op>*> edges;  // embedding, head
            for (const schedule::OpUse& use : g.ops_of(id)) {
              const auto* list = &g.op_lists[use.list];
              if (use.role == schedule::OpRole::Layer) layer_list = list;
              else if (use.role == schedule::OpRole::DenseLayer) dense_list = list;
              else edges.push_back(list);
            }
            auto layer_of = [&](const schedule::Task& task, int l) -> const std::vector<workload::Op>& {
              const bool moe_layer = s.model.moe() && s.model.moe_layer(task.first_layer + l);
              if (!moe_layer) return dense_list != nullptr ? *dense_list : *layer_list;
              if (!moe_ep) return *layer_list;
              routed = routed_ops(*layer_list, routing_of(task, l), replica % p.ep, local_experts);
              return routed;
            };
            switch (t.kind) {
              case TaskKind::Forward:
              case TaskKind::Backward:
                for (int l = 0; l < t.layers; ++l) run_ops(layer_of(t, l), bwd, false);
                for (const auto* list : edges) run_ops(*list, bwd, false);
                break;
              case TaskKind::Recompute:
                for (int l = 0; l < t.layers; ++l) run_ops(layer_of(t, l), false, true);
                break;
              case TaskKind::TpCollective: {
                // The task's calls (schedule::CommCall), as often as it makes them, the fractions
                // carried over to this device's next TP task (tp_runs): the pipeline message it
                // received as 1/tp shards gathered first (pipeline_scatter_gather), its layers'
                // all-gathers and reduce-scatters (sequence parallel) or all-reduces, its share
                // of the embedding's and the head's.
                bool first_call = true;
                for (const TpRun& run : tp_runs(g, id, tp, tp_owed)) {
                  const std::size_t n = run.floats, shard = n / static_cast<std::size_t>(tp);
                  // Results go to c only (its second part holds the reduce-scatter's shard): a and
                  // b are the compute's 16-bit inputs, and fp32 sums there would read as NaN or Inf.
                  sc.fit(n * 4, n * 4, (n + shard) * 4);
                  if (sc.failed) break;
                  for (int k = 0; k < run.times && comm_error.empty(); ++k) {
                    if (run.kind == cost::Collective::AllGather) note(tpc.all_gather(sc.fa(), sc.fc(), shard), first_call);
                    else if (run.kind == cost::Collective::ReduceScatter)
                      note(tpc.reduce_scatter(sc.fc(), sc.fc() + n, shard), first_call);
                    else note(tpc.all_reduce(sc.fc(), n), first_call);
                    first_call = false;
                  }
                }
                break;
              }
              case TaskKind::GradReduce:
              case TaskKind::ParamGather: {
                // The collectives of this layer among every replica that holds it, in its group
                // and (several groups) in the others: one per chunk this rank holds (one unless
                // the groups' tp degrees differ), a shard per member under ZeRO. Hybrid
                // sharding's all-reduce across groups: one per chunk of this member's piece,
                // with the chunk's holder in every other group (dp_layout's pieces_of).
                const bool across = t.across_groups;
                const auto& joins = across ? layout->pieces_of[id][static_cast<std::size_t>(member)]
                                           : layout->member_of[id][static_cast<std::size_t>(rank)];
                // Each of the task's calls (schedule::CommCall) on one chunk's buffer
                // (dp_call_floats): the routed experts' part (CommCall::experts, expert
                // parallelism) on the member's expert data-parallel communicator (edp_of), the
                // rest on the layer's.
                const long long chunks = layout->chunks[id];
                auto collective = [&](Communicator& c, const schedule::CommCall& call, bool first) {
                  const auto r = static_cast<std::size_t>(c.size());
                  const std::size_t n = dp_call_floats(g, id, call, chunks, c.size());
                  const std::size_t per = n / r;
                  sc.fit(n * 4, n * 4, n * 4);
                  if (sc.failed || !comm_error.empty()) return;
                  if (call.kind == cost::Collective::AllGather) note(c.all_gather(sc.fa(), sc.fc(), per), first);
                  else if (call.kind == cost::Collective::AllReduce) note(c.all_reduce(sc.fc(), n), first);
                  else note(c.reduce_scatter(sc.fa(), sc.fc(), per), first);  // results in c only
                };
                for (const int gi : joins) {
                  bool first = true;
                  for (const auto& call : g.calls_of(id)) {
                    if (!call.experts) {
                      collective(*dpcs.at(gi), call, first);
                    } else if (const auto e = edp_of[real].find(gi); e != edp_of[real].end()) {
                      collective(*e->second, call, first);
                    } else {
                      continue;  // alone with its experts: nothing to sync
                    }
                    first = false;
                    if (sc.failed || !comm_error.empty()) break;
                  }
                  if (sc.failed || !comm_error.empty()) break;
                }
                break;
              }
              case TaskKind::SendActivation:
              case TaskKind::SendGradient: {
                // This rank's slice of the micro-batch's activation (or gradient) to each rank of
                // the other stage that reads it: the whole of it, or, when sequence parallelism
                // or the framework's scatter-gather splits it (Task::split), the part of this
                // rank's 1/tp slice that each reader's slice covers (resharded where the stages'
                // tp degrees differ; the receivers of a scatter-gather then gather it in their TP
                // collective task: Task::regather).
                const auto targets = message_targets(id, member);
                std::size_t most = 1;
                for (const auto& [to, floats] : targets) most = std::max(most, floats);
                sc.fit(4 * most, 1, 4 * most);
                if (sc.failed) break;
                for (const auto& [to, floats] : targets) {
                  if (world == nullptr) dev.copy(sc.pa, inbox[static_cast<std::size_t>(to)], 4 * floats);  // into each reader's inbox
                  else note(payloads->send(sc.fa(), floats, to, static_cast<int>(2 * id + 1)), true);  // the transfer itself
                }
                break;
              }
              case TaskKind::Optimizer: {
                // Adam over the device's parameters, in slices of at most 4 M.
                const std::size_t count = adam_params[rep];
                const std::size_t slice = std::min<std::size_t>(count, std::size_t{1} << 22);
                // The state lives in c, which no compute reads as a 16-bit input (fp32 values there
                // would read as NaN or Inf in bf16 and fp16 and slow nothing but the GEMMs' power).
                sc.fit(1, 1, 16 * slice);
                if (sc.failed) break;
                for (std::size_t n = 0; n < count; n += slice) dev.adam(std::min(slice, count - n), sc.fc());
                timed(kOptimizerClass);
                break;
              }
              case TaskKind::EpAllToAll: {
                // Per MoE layer of the unit: dispatch and combine (after a forward), their
                // gradients (after a backward) and, under full recompute, the forward's pair
                // again. Each an all-to-all of this tp rank's share (1/tp) of the rows its
                // tokens send each EP rank, h wide in the training format, every message padded
                // to the busiest pair's (the cost model charges every rank the busiest's load).
                // Its predecessor is the unit's compute, or the TP collective after it.
                bool after_backward = false;
                for (std::uint32_t pr : preds[id]) {
                  after_backward = after_backward || g.tasks[pr].kind == TaskKind::Backward;
                  if (g.tasks[pr].kind == TaskKind::TpCollective && g.tasks[pr].chunk == t.chunk &&
                      g.tasks[pr].micro_batch == t.micro_batch)
                    for (std::uint32_t pp : preds[pr]) after_backward = after_backward || g.tasks[pp].kind == TaskKind::Backward;
                }
                const int rounds = after_backward && p.recompute == cost::Recompute::Full ? 4 : 2;
                bool first_a2a = true;  // its start is the task's real start (began)
                // The hierarchical dispatch over several nodes: each round a network step on
                // the rank's rail (each token once per node its experts are on) and a fabric
                // step within its node (the copies for the node's other ranks), one after the
                // other (DeepEP runs them side by side: the measured time is their sum, the
                // prediction their larger).
                // The values (4-byte words) of `rows` rows: h wide in the training format, or
                // under fp8_dispatch for a dispatch-way round, h bytes and a 4-byte scale per 128.
                const auto values = [&](std::int64_t rows, bool fp8) {
                  const auto r = static_cast<std::size_t>((rows + tp - 1) / tp);
                  const auto h = static_cast<std::size_t>(s.model.hidden);
                  return std::max<std::size_t>(1, fp8 ? r * ((h + 3) / 4 + (h + 127) / 128) : r * h / (wide ? 1 : 2));
                };
                auto exchange = [&](Communicator& c, std::size_t per) {
                  const auto n = static_cast<std::size_t>(c.size());
                  sc.fit(per * n * 4, 1, per * n * 4);
                  if (sc.failed) return;
                  note(c.all_to_all(sc.fa(), sc.fc(), per), first_a2a);
                  first_a2a = false;
                };
                for (int l = 0; l < t.layers && comm_error.empty() && !sc.failed; ++l) {
                  if (!s.model.moe_layer(t.first_layer + l)) continue;  // a dense layer: no all-to-all
                  const LayerRouting& rt = routing_of(t, l);
                  for (int k = 0; k < rounds && comm_error.empty() && !sc.failed; ++k) {
                    // Rounds go dispatch-way, combine-way, …: a forward's dispatch, a backward's
                    // combine gradient (docs/cost-models.md#fp8-dispatch).
                    const bool fp8 = p.fp8_dispatch && k % 2 == 0;
                    if (Communicator* rail = rail_of[real]; rail != nullptr) {
                      exchange(*rail, values(rt.max_rail_rows, fp8));
                      if (Communicator* node = node_of[real]; node != nullptr && comm_error.empty() && !sc.failed)
                        exchange(*node, values(rt.max_fanout_rows, fp8));
                    } else {
                      exchange(*epc, values(rt.max_pair_rows, fp8));
                    }
                  }
                }
                timed(kAllToAllClass);
                break;
              }
            }
            dev.record();
            const auto marks = dev.resolve();  // waits for the device: the task is done
            if (const auto broken = dev.failure(); !broken.empty()) {
              if (own != nullptr) dev.release(own, static_cast<std::size_t>(t.alloc_bytes));
              fail(dev.name() + ": " + broken + where, "the device failed: its results and times are void");
              return;
            }
            if (sc.failed) {
              if (own != nullptr) dev.release(own, static_cast<std::size_t>(t.alloc_bytes));
              fail(dev.name() + ": no memory for scratch buffers" + where);
              return;
            }
            if (!comm_error.empty()) {
              if (own != nullptr) dev.release(own, static_cast<std::size_t>(t.alloc_bytes));
              fail(comm_error + where);
              return;
            }
            if (t.alloc_bytes > 0 || t.free_bytes > 0) {
              auto& [ptr, n] = held[{t.chunk, t.micro_batch}];
              const auto keep = static_cast<std::int64_t>(n) + t.alloc_bytes - t.free_bytes;
              if (own != nullptr) dev.release(own, static_cast<std::size_t>(t.alloc_bytes));
              if (ptr != nullptr) dev.release(ptr, n);
              ptr = nullptr;
              n = 0;
              if (keep > 0) {
                auto a = dev.allocate(static_cast<std::size_t>(keep));
                if (!a) { fail(a.errors()[0].message + where, a.errors()[0].hint); return; }
                ptr = *a;
                n = static_cast<std::size_t>(keep);
              }
            }
            if (member == 0) {
              // (≥ 0: a process may read rank 0's origin a little after its clock passed it.)
              start[id] = std::max<std::int64_t>(0, marks.front() - t0);
              if (began >= 0) start[id] = std::max(start[id], began - t0);
              end[id] = std::max(start[id], marks.back() - t0);
              std::array<std::int64_t, kClasses> sum{};
              for (std::size_t k = 0; k < mark_class.size(); ++k)
                sum[static_cast<std::size_t>(mark_class[k])] += marks[k + 1] - marks[k];
              for (int c = 0; c < kClasses; ++c)
                if (sum[static_cast<std::size_t>(c)] > 0) parts[id].emplace_back(class_name(c), sum[static_cast<std::size_t>(c)]);
            }
            for (std::int64_t e = marks.back() - t0, cur = last_end.load(); e > cur && !last_end.compare_exchange_weak(cur, e);) {
            }
            flag(id, member) = true;
            flag(id, member).notify_all();
            if (world != nullptr && t.kind != TaskKind::SendActivation && t.kind != TaskKind::SendGradient)
              for (int to : remote_successors(id, member)) {
                const float token = 1;
                if (auto r = tokens->send(&token, 1, to, static_cast<int>(2 * id)); !r) {
                  fail(dev.name() + ": " + r.errors()[0].message + where);
                  return;
                }
              }
          }
          for (auto& [key, block] : held)
            if (block.first != nullptr) dev.release(block.first, block.second);
          dev.release(base_ptr, static_cast<std::size_t>(info.baseline_bytes));
        });
    for (auto& th : threads) th.join();
    if (failed) {
      std::pair<std::string, std::string> why{"failed", ""};
      if (const int first = first_failed.load(); first >= 0) why = error[static_cast<std::size_t>(first)];
      Diagnostic d{{}, "", "step " + std::to_string(step) + ": " + why.first, why.second, ErrorKind::Environment};
      if (steps.empty()) return d;
      out.failure = d;  // keep what was measured
      break;
    }
    if (step < o.warmup) continue;
    std::vector<std::int64_t> peak(g.devices.size(), 0);
    std::int64_t step_end = last_end.load();
    for (std::size_t rep = 0; rep < g.devices.size(); ++rep)
      if (const auto& d = devices[static_cast<std::size_t>(first_real[rep])]; d != nullptr)
        peak[rep] = static_cast<std::int64_t>(d->peak_bytes());
    if (world != nullptr) {
      // Every process sends rank 0 what its member-0 devices measured: per device (rep, peak,
      // tasks), per task (id, start, end, time per op class).
      std::vector<std::int64_t> mine{step_end};
      for (std::size_t rep = 0; rep < g.devices.size(); ++rep) {
        if (first_real[rep] != me) continue;
        mine.insert(mine.end(), {static_cast<std::int64_t>(rep), peak[rep], static_cast<std::int64_t>(order[rep].size())});
        for (std::uint32_t id : order[rep]) {
          mine.insert(mine.end(), {static_cast<std::int64_t>(id), start[id], end[id]});
          std::array<std::int64_t, kClasses> by{};
          for (const auto& [cls, ns] : parts[id])
            for (int c = 0; c < kClasses; ++c)
              if (class_name(c) == cls) by[static_cast<std::size_t>(c)] = ns;
          mine.insert(mine.end(), by.begin(), by.end());
        }
      }
      const auto all = world->gather(mine, 0);
      if (me != 0) continue;
      for (const auto& v : all) {
        std::size_t k = 0;
        step_end = std::max(step_end, v[k++]);
        while (k < v.size()) {
          const auto rep = static_cast<std::size_t>(v[k]);
          peak[rep] = v[k + 1];
          const auto n = static_cast<std::size_t>(v[k + 2]);
          k += 3;
          for (std::size_t i = 0; i < n; ++i, k += 3 + kClasses) {
            const auto id = static_cast<std::size_t>(v[k]);
            start[id] = v[k + 1];
            end[id] = v[k + 2];
            parts[id].clear();
            for (int c = 0; c < kClasses; ++c)
              if (const auto ns = v[k + 3 + static_cast<std::size_t>(c)]; ns > 0) parts[id].emplace_back(class_name(c), ns);
          }
        }
      }
    }
    engine::Trace tr;
    tr.start = start;
    tr.end = end;
    tr.makespan = std::max(*std::max_element(end.begin(), end.end()), step_end);
    tr.peak_bytes = peak;
    out.step_ns.push_back(tr.makespan);
    steps.push_back(std::move(tr));
    step_parts.push_back(std::move(parts));
    // The median step so far.
    std::vector<std::size_t> idx(steps.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return steps[a].makespan < steps[b].makespan; });
    out.measured = steps[idx[idx.size() / 2]];
    out.measured_parts = step_parts[idx[idx.size() / 2]];
    if (o.on_step) o.on_step(out);
  }
  return out;  // under mpirun, the results live on rank 0
}

std::vector<std::array<int, 3>> gemm_shapes(const Scenario& s, const plan::Plan& p) {
  std::set<std::array<int, 3>> out;
  for (const analytic::StageOps& st : analytic::op_breakdown(s, p))
    for (const analytic::OpPart& part : st.parts)
      for (const analytic::OpCost& oc : part.ops) {
        if (oc.op.kind != OpKind::Gemm) continue;
        const int m = as_int(oc.op.m), n = as_int(oc.op.n), k = as_int(oc.op.k);
        out.insert({m, n, k});  // forward (run_op's GEMMs)
        out.insert({m, k, n});  // dA = dC·Bᵀ
        out.insert({k, n, m});  // dB = Aᵀ·dC
      }
  return {out.begin(), out.end()};
}

}  // namespace hetsim::exec
