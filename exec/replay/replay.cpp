#include "exec/replay/replay.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>

#include "exec/comm/shm_group.hpp"
#include "models/workload/layer_ops.hpp"
#include "sim/analytic/stage_cost.hpp"
#include "sim/schedule/schedule.hpp"

namespace hetsim::exec {
namespace {

using schedule::TaskKind;

// The device's three scratch buffers, big enough for the largest operands seen so far.
struct Scratch {
  Device* dev = nullptr;
  float *pa = nullptr, *pb = nullptr, *pc = nullptr;
  std::size_t na = 0, nb = 0, nc = 0;
  bool failed = false;  ///< a workspace could not be had: the task must fail, not compute
  void fit(std::size_t a, std::size_t b, std::size_t c) {
    if (a > na) { pa = dev->workspace(0, a); na = pa ? a : 0; }
    if (b > nb) { pb = dev->workspace(1, b); nb = pb ? b : 0; }
    if (c > nc) { pc = dev->workspace(2, c); nc = pc ? c : 0; }
    failed = failed || pa == nullptr || pb == nullptr || pc == nullptr;
  }
};

int as_int(double x) { return std::max(1, static_cast<int>(x + 0.5)); }

// Runs one op's pass: GEMMs as GEMMs of the op's shape (backward: the data- and weight-gradient
// GEMMs), fused attention as the per-head GEMMs it performs (the causal half of QKᵀ and PV;
// backward 2.5× forward), everything else as a streaming pass over its bytes.
void run_op(Device& dev, Scratch& sc, const workload::Op& op, bool backward, int heads_per_rank, int seq, int head_dim,
            int sequences, bool causal_fused = true) {
  using workload::OpKind;
  if (op.kind == OpKind::Gemm) {
    const int m = as_int(op.m), n = as_int(op.n), k = as_int(op.k);
    // Forward reads m×k and k×n and writes m×n; backward swaps the roles: every buffer must
    // hold the largest of the three matrices.
    const std::size_t most = std::max({std::size_t(m) * n, std::size_t(n) * k, std::size_t(m) * k});
    sc.fit(most, most, most);
    for (int i = 0; i < op.count; ++i) {
      if (!backward) {
        dev.gemm(m, n, k, sc.pa, sc.pb, sc.pc);
      } else {
        dev.gemm(m, k, n, sc.pa, sc.pb, sc.pc);  // dA = dC·Bᵀ
        dev.gemm(k, n, m, sc.pa, sc.pb, sc.pc);  // dB = Aᵀ·dC
      }
    }
    return;
  }
  if (op.kind == OpKind::Attention) {
    // A causal fused kernel skips the masked half; otherwise the full s×s (cost model alike).
    const int half = causal_fused ? std::max(1, seq / 2) : seq;
    const std::size_t most = std::size_t(seq) * std::max({seq, head_dim, half});
    sc.fit(most, most, most);
    const int repeats = backward ? 5 : 2;  // FlashAttention-2: 2 GEMMs forward, 5 backward
    for (int r = 0; r < sequences * heads_per_rank; ++r)
      for (int g = 0; g < repeats; ++g) {
        if (g % 2 == 0) dev.gemm(seq, half, head_dim, sc.pa, sc.pb, sc.pc);
        else dev.gemm(seq, head_dim, half, sc.pa, sc.pb, sc.pc);
      }
    return;
  }
  const double bytes = (backward ? op.bwd_bytes : op.fwd_bytes).v;
  const auto floats = static_cast<std::size_t>(bytes / 8);  // read one float, write one
  sc.fit(floats, 1, floats);
  dev.stream(sc.pa, sc.pc, floats);
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

  // Every folded device is unfolded into its real devices: tp ranks × replicas, one thread each.
  if (p.groups.size() > 1)
    return Diagnostic{{}, "plan", "the plan has " + std::to_string(p.groups.size()) +
                                  " replica groups: this executor runs plans with one group (identical replicas)",
                      "collectives across heterogeneous replica groups come next"};
  std::vector<int> first_real(g.devices.size());
  int needed = 0;
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    first_real[d] = needed;
    needed += g.devices[d].count;
  }
  if (needed > backend.device_count())
    return Diagnostic{{}, "", "the plan needs " + std::to_string(needed) + " devices but the " + backend.name() +
                                  " backend has " + std::to_string(backend.device_count()),
                      "run with more devices (--devices) or a smaller plan"};
  int max_count = 1;
  for (const auto& d : g.devices) max_count = std::max(max_count, d.count);

  // The work of each compute task, from the same op lists the cost model prices.
  workload::MicroBatchShape shape;
  shape.micro_batch = p.micro_batch;
  shape.seq_len = s.training.seq_len;
  shape.tp = p.groups[0].stages[0].tp;
  shape.sequence_parallel = p.sequence_parallel && shape.tp > 1;
  shape.dtype = s.training.precision;
  shape.flash_attention = s.training.flash_attention;
  shape.causal = s.training.causal;
  std::vector<std::vector<workload::Op>> layer(g.devices.size()), emb(g.devices.size()), head(g.devices.size());
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    workload::MicroBatchShape sh = shape;
    sh.tp = g.devices[d].tp;
    sh.sequence_parallel = p.sequence_parallel && sh.tp > 1;
    layer[d] = workload::layer_ops(s.model, sh);
    emb[d] = workload::embedding_ops(s.model, sh);
    head[d] = workload::head_ops(s.model, sh);
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
  const auto sb = cost::state_bytes(s.training.precision, s.training.optimizer);
  const int replicas = p.replicas();
  std::vector<std::size_t> optimizer_floats;
  for (const auto& d : g.devices) {
    const double params = costs[d.group][d.stage].params / (p.zero >= 1 ? replicas : 1);
    optimizer_floats.push_back(static_cast<std::size_t>(params * (sb.grads + 2 * sb.optimizer + sb.weights) / 8));
  }
  auto dp_floats = [&](const schedule::Task& t) {
    const auto& c = costs[g.devices[t.device].group][g.devices[t.device].stage];
    double params = c.params_layer * t.layers;
    if (t.first_layer == 0) params += c.params_emb;
    if (t.first_layer + t.layers == s.model.layers) params += c.params_head;
    const auto n = static_cast<std::size_t>(params);
    const auto r = static_cast<std::size_t>(replicas);
    return std::max<std::size_t>(r, (n + r - 1) / r * r);  // a multiple of the replicas
  };

  // Communicators: the tp ranks of each (device, replica); the replicas of each (device, rank).
  std::vector<std::vector<std::unique_ptr<ShmGroup>>> tp_groups(g.devices.size()), dp_groups(g.devices.size());
  for (std::size_t d = 0; d < g.devices.size(); ++d) {
    for (int r = 0; r < g.devices[d].replicas; ++r) tp_groups[d].push_back(std::make_unique<ShmGroup>(g.devices[d].tp));
    for (int t = 0; t < g.devices[d].tp; ++t) dp_groups[d].push_back(std::make_unique<ShmGroup>(g.devices[d].replicas));
  }

  const int model_layers = s.model.layers;
  std::vector<std::unique_ptr<Device>> devices;
  for (int d = 0; d < needed; ++d) devices.push_back(backend.open(d));
  std::vector<Scratch> scratch(static_cast<std::size_t>(needed));
  for (int d = 0; d < needed; ++d) scratch[static_cast<std::size_t>(d)].dev = devices[static_cast<std::size_t>(d)].get();
  for (const auto& d : g.devices)
    if ((d.tp > 1 || d.replicas > 1) && !devices[0]->host_memory())
      return Diagnostic{{}, "plan", "the " + backend.name() + " backend has no collectives yet; device " + d.label +
                                    " needs tensor- or data-parallel collectives",
                        "replay a plan with tp 1 and one replica on this backend"};
  const std::size_t act_elems = static_cast<std::size_t>(p.micro_batch) * static_cast<std::size_t>(s.training.seq_len) *
                                static_cast<std::size_t>(s.model.hidden);
  // The executor computes in fp32; what goes over the wire is sized as the cost model prices it:
  // activations and weights in the training format (2 bytes in mixed precision), fp32 gradients.
  const bool wide = s.training.precision == hw::Dtype::Fp32;
  const std::size_t wire_act = wide ? act_elems : act_elems / 2;
  const bool causal_fused = s.training.causal && s.training.flash_attention;

  std::vector<engine::Trace> steps;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    // done[task · max_count + member]: member = replica · tp + rank of the task's device.
    std::vector<std::atomic<bool>> done(g.size() * static_cast<std::size_t>(max_count));
    // Timings of member 0 of every folded device (the members run the same tasks in lock step
    // through their collectives).
    std::vector<std::int64_t> start(g.size()), end(g.size());
    std::vector<std::string> error(static_cast<std::size_t>(needed));
    std::atomic<bool> failed{false};
    std::atomic<std::int64_t> last_end{0};  // over every member, not only the timed ones
    const std::int64_t t0 = devices[0]->now_ns();
    std::vector<std::thread> threads;
    for (std::size_t rep = 0; rep < g.devices.size(); ++rep)
      for (int member = 0; member < g.devices[rep].count; ++member)
        threads.emplace_back([&, rep, member] {
          const auto& info = g.devices[rep];
          const int tp = info.tp;
          const int replica = member / tp, rank = member % tp;
          const auto real = static_cast<std::size_t>(first_real[rep] + member);
          Device& dev = *devices[real];
          Scratch& sc = scratch[real];
          auto flag = [&](std::uint32_t task, int m) -> std::atomic<bool>& {
            return done[task * static_cast<std::size_t>(max_count) + static_cast<std::size_t>(m)];
          };
          ShmGroup& tpg = *tp_groups[rep][static_cast<std::size_t>(replica)];
          ShmGroup& dpg = *dp_groups[rep][static_cast<std::size_t>(rank)];
          // Activations held between tasks, per (chunk, micro-batch): a task allocates its block
          // at its start; at its end the block joins what that micro-batch holds, less what it
          // frees.
          std::map<std::pair<int, int>, std::pair<void*, std::size_t>> held;
          void* base_ptr = nullptr;
          auto fail = [&](const std::string& why) {
            if (!why.empty()) error[real] = why;
            failed = true;
            tpg.leave(rank);
            dpg.leave(replica);
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
          if (!base) { fail(to_string(base.errors()[0])); return; }
          base_ptr = *base;
          for (std::uint32_t id : order[rep]) {
            for (std::uint32_t pr : preds[id]) {
              // The predecessor's member that feeds this one: same replica, same rank (mod its tp).
              // Every predecessor rank that feeds this one: same replica, ranks ≡ rank (mod tp).
              const auto& pinfo = g.devices[g.tasks[pr].device];
              if (pinfo.tp <= tp) {
                flag(pr, replica * pinfo.tp + rank % pinfo.tp).wait(false);
              } else {
                for (int pr_rank = rank; pr_rank < pinfo.tp; pr_rank += tp) flag(pr, replica * pinfo.tp + pr_rank).wait(false);
              }
            }
            if (failed) { fail(""); return; }
            const auto& t = g.tasks[id];
            std::int64_t t_start = dev.now_ns() - t0;
            std::int64_t began = -1;  // a collective's real start: when its last member arrived
            void* own = nullptr;
            if (t.alloc_bytes > 0) {
              auto a = dev.allocate(static_cast<std::size_t>(t.alloc_bytes));
              if (!a) { fail(to_string(a.errors()[0]) + " in task '" + schedule::task_name(t) + "'"); return; }
              own = *a;
              }
            const bool bwd = t.kind == TaskKind::Backward;
            switch (t.kind) {
              case TaskKind::Forward:
              case TaskKind::Backward:
                for (int l = 0; l < t.layers; ++l)
                  for (const auto& op : layer[rep])
                    run_op(dev, sc, op, bwd, s.model.heads / tp, s.training.seq_len, s.model.head_dim(), p.micro_batch,
                           causal_fused);
                if (t.first_layer == 0)
                  for (const auto& op : emb[rep]) run_op(dev, sc, op, bwd, 0, 0, 0, 0);
                if (t.first_layer + t.layers == model_layers)
                  for (const auto& op : head[rep]) run_op(dev, sc, op, bwd, 0, 0, 0, 0);
                break;
              case TaskKind::Recompute:
                for (int l = 0; l < t.layers; ++l)
                  for (const auto& op : layer[rep])
                    if (p.recompute == cost::Recompute::Full || op.selective_recompute)
                      run_op(dev, sc, op, false, s.model.heads / tp, s.training.seq_len, s.model.head_dim(), p.micro_batch,
                             causal_fused);
                break;
              case TaskKind::TpCollective: {
                // Per layer: all-gather before and reduce-scatter after the attention and MLP
                // blocks (sequence parallel), or an all-reduce after each (not).
                const bool sp = p.sequence_parallel;
                const std::size_t shard = wire_act / static_cast<std::size_t>(tp);
                sc.fit(wire_act, wire_act, wire_act);
                // The collectives after a backward also cover the recomputed forward (full recompute).
                bool after_backward = false;
                for (std::uint32_t pr : preds[id]) after_backward = after_backward || g.tasks[pr].kind == TaskKind::Backward;
                int rounds = t.layers * (after_backward && p.recompute == cost::Recompute::Full ? 4 : 2);
                // The embedding's and the head's collective, half of it in each direction.
                if (t.first_layer == 0 || t.first_layer + t.layers == model_layers) rounds += 1;
                for (int k = 0; k < rounds; ++k) {
                  std::int64_t b0 = 0;
                  if (sp) {
                    b0 = tpg.all_gather(rank, sc.pa, sc.pc, shard);
                    tpg.reduce_scatter(rank, sc.pc, sc.pb, shard);
                  } else {
                    b0 = tpg.all_reduce(rank, sc.pc, wire_act);
                  }
                  if (k == 0) began = b0;
                }
                break;
              }
              case TaskKind::GradReduce:
              case TaskKind::ParamGather: {
                std::size_t n = dp_floats(t);
                if (t.kind == TaskKind::ParamGather && !wide) {  // weights travel in 16 bits
                  const auto r = static_cast<std::size_t>(replicas);
                  n = std::max(r, (n / 2 + r - 1) / r * r);
                }
                const std::size_t per = n / static_cast<std::size_t>(replicas);
                sc.fit(n, n, n);
                if (t.kind == TaskKind::ParamGather) began = dpg.all_gather(replica, sc.pa, sc.pc, per);
                else if (p.zero == 0) began = dpg.all_reduce(replica, sc.pc, n);
                else began = dpg.reduce_scatter(replica, sc.pa, sc.pb, per);
                break;
              }
              case TaskKind::SendActivation:
              case TaskKind::SendGradient: {
                // This rank's share of the micro-batch's activation (or gradient), copied into
                // the buffer the next stage reads.
                const std::size_t floats = wire_act / static_cast<std::size_t>(p.sequence_parallel ? tp : 1);
                sc.fit(floats, 1, floats);
                dev.copy(sc.pa, sc.pc, floats);
                break;
              }
              case TaskKind::Optimizer: {
                // Streams the optimizer's bytes in slices of at most 16 M floats.
                const std::size_t floats = optimizer_floats[rep];
                const std::size_t slice = std::min<std::size_t>(floats, 1 << 24);
                sc.fit(slice, 1, slice);
                for (std::size_t n = 0; n < floats; n += slice)
                  dev.stream(sc.pa, sc.pc, std::min(slice, floats - n));
                break;
              }
            }
            if (sc.failed) {
              if (own != nullptr) dev.release(own, static_cast<std::size_t>(t.alloc_bytes));
              fail(dev.name() + ": no memory for scratch buffers in task '" + schedule::task_name(t) + "'");
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
                if (!a) { fail(to_string(a.errors()[0])); return; }
                ptr = *a;
                n = static_cast<std::size_t>(keep);
              }
            }
            if (began >= 0) t_start = std::max(t_start, began - t0);
            if (member == 0) {
              start[id] = t_start;
              end[id] = dev.now_ns() - t0;
            }
            for (std::int64_t e = dev.now_ns() - t0, cur = last_end.load(); e > cur && !last_end.compare_exchange_weak(cur, e);) {
            }
            flag(id, member) = true;
            flag(id, member).notify_all();
          }
          for (auto& [key, block] : held)
            if (block.first != nullptr) dev.release(block.first, block.second);
          dev.release(base_ptr, static_cast<std::size_t>(info.baseline_bytes));
        });
    for (auto& th : threads) th.join();
    if (failed) {
      std::string why = "failed";
      for (const auto& e : error)
        if (!e.empty()) { why = e; break; }
      Diagnostic d{{}, "", "step " + std::to_string(step) + ": " + why, ""};
      if (steps.empty()) return d;
      out.failure = d;  // keep what was measured
      break;
    }
    if (step < o.warmup) continue;
    engine::Trace tr;
    tr.start = start;
    tr.end = end;
    tr.makespan = std::max(*std::max_element(end.begin(), end.end()), last_end.load());
    for (std::size_t rep = 0; rep < g.devices.size(); ++rep)
      tr.peak_bytes.push_back(static_cast<std::int64_t>(devices[static_cast<std::size_t>(first_real[rep])]->peak_bytes()));
    out.step_ns.push_back(tr.makespan);
    steps.push_back(std::move(tr));
  }
  // The median step.
  std::vector<std::size_t> idx(steps.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return steps[a].makespan < steps[b].makespan; });
  out.measured = steps[idx[idx.size() / 2]];
  return out;
}

}  // namespace hetsim::exec
