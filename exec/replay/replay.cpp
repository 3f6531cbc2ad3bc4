#include "exec/replay/replay.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>

#include "models/workload/layer_ops.hpp"
#include "sim/analytic/stage_cost.hpp"
#include "sim/schedule/schedule.hpp"

namespace hetsim::exec {
namespace {

using schedule::TaskKind;

// Scratch buffers one device reuses for every kernel: big enough for the largest operands.
struct Scratch {
  std::vector<float> a, b, c;
  void fit(std::size_t na, std::size_t nb, std::size_t nc) {
    if (a.size() < na) a.assign(na, 0.5f);
    if (b.size() < nb) b.assign(nb, 0.25f);
    if (c.size() < nc) c.assign(nc, 0.0f);
  }
};

int as_int(double x) { return std::max(1, static_cast<int>(x + 0.5)); }

// Runs one op's pass: GEMMs as GEMMs of the op's shape (backward: the data- and weight-gradient
// GEMMs), fused attention as the per-head GEMMs it performs (the causal half of QKᵀ and PV;
// backward 2.5× forward), everything else as a streaming pass over its bytes.
void run_op(Device& dev, Scratch& sc, const workload::Op& op, bool backward, int heads_per_rank, int seq, int head_dim,
            int sequences) {
  using workload::OpKind;
  if (op.kind == OpKind::Gemm) {
    const int m = as_int(op.m), n = as_int(op.n), k = as_int(op.k);
    sc.fit(std::size_t(m) * std::max(n, k), std::size_t(std::max(n, m)) * k, std::size_t(std::max(m, k)) * n);
    for (int i = 0; i < op.count; ++i) {
      if (!backward) {
        dev.gemm(m, n, k, sc.a.data(), sc.b.data(), sc.c.data());
      } else {
        dev.gemm(m, k, n, sc.a.data(), sc.b.data(), sc.c.data());  // dA = dC·Bᵀ
        dev.gemm(k, n, m, sc.a.data(), sc.b.data(), sc.c.data());  // dB = Aᵀ·dC
      }
    }
    return;
  }
  if (op.kind == OpKind::Attention) {
    const int half = std::max(1, seq / 2);
    sc.fit(std::size_t(seq) * std::max(head_dim, half), std::size_t(std::max(head_dim, half)) * seq,
           std::size_t(seq) * std::max(seq, head_dim));
    const int repeats = backward ? 5 : 2;  // FlashAttention-2: 2 GEMMs forward, 5 backward
    for (int r = 0; r < sequences * heads_per_rank; ++r)
      for (int g = 0; g < repeats; ++g) {
        if (g % 2 == 0) dev.gemm(seq, half, head_dim, sc.a.data(), sc.b.data(), sc.c.data());
        else dev.gemm(seq, head_dim, half, sc.a.data(), sc.b.data(), sc.c.data());
      }
    return;
  }
  const double bytes = (backward ? op.bwd_bytes : op.fwd_bytes).v;
  const auto floats = static_cast<std::size_t>(bytes / 8);  // read one float, write one
  sc.fit(floats, 1, floats);
  dev.stream(sc.a.data(), sc.c.data(), floats);
}

}  // namespace

Result<Replay> replay(const Scenario& s, const plan::Plan& p, Backend& backend, const ReplayOptions& o) {
  Replay out;
  out.graph = schedule::build_schedule(s, p);
  auto pred = engine::run_native(out.graph);
  if (!pred) return pred.errors();
  out.predicted = *pred;
  const auto& g = out.graph;

  const int needed = static_cast<int>(g.devices.size());
  if (needed > backend.device_count())
    return Diagnostic{{}, "", "the plan needs " + std::to_string(needed) + " devices but the " + backend.name() +
                                  " backend has " + std::to_string(backend.device_count()),
                      "run with more devices (--devices) or a plan with fewer stages"};
  for (const auto& d : g.devices)
    if (d.count != 1)
      return Diagnostic{{}, "", "device " + d.label + " stands for " + std::to_string(d.count) +
                                    " devices (tp " + std::to_string(d.tp) + " × " + std::to_string(d.replicas) +
                                    " replicas): this executor runs plans whose every stage is one device",
                        "use tp = 1 and one replica per stage; tensor- and data-parallel collectives come next"};

  // The work of each compute task, from the same op lists the cost model prices.
  workload::MicroBatchShape shape;
  shape.micro_batch = p.micro_batch;
  shape.seq_len = s.training.seq_len;
  shape.tp = 1;
  shape.sequence_parallel = false;
  shape.dtype = s.training.precision;
  shape.flash_attention = s.training.flash_attention;
  shape.causal = s.training.causal;
  const auto layer = workload::layer_ops(s.model, shape);
  const auto emb = workload::embedding_ops(s.model, shape);
  const auto head = workload::head_ops(s.model, shape);

  // Each device runs its tasks in the predicted order (a valid topological order).
  std::vector<std::vector<std::uint32_t>> order(g.devices.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) order[g.tasks[i].device].push_back(i);
  for (auto& v : order)
    std::stable_sort(v.begin(), v.end(), [&](auto a, auto b) { return out.predicted.start[a] < out.predicted.start[b]; });
  // Predecessors, from the CSR successor lists.
  std::vector<std::vector<std::uint32_t>> preds(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i)
    for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1]; ++k) preds[g.succ[k]].push_back(i);

  const int model_layers = s.model.layers;
  std::vector<std::unique_ptr<Device>> devices;
  for (int d = 0; d < needed; ++d) devices.push_back(backend.open(d));

  // Optimizer bytes per device: what the cost model's optimizer sweep moves.
  const auto costs = analytic::stage_costs(s, p);
  const auto sb = cost::state_bytes(s.training.precision, s.training.optimizer);
  std::vector<std::size_t> optimizer_floats;
  for (const auto& d : g.devices) {
    const double params = costs[d.group][d.stage].params / (p.zero >= 1 ? p.replicas() : 1);
    optimizer_floats.push_back(static_cast<std::size_t>(params * (sb.grads + 2 * sb.optimizer + sb.weights) / 8));
  }
  // Scratch buffers live across steps: the warm-up step sizes them, so no measured task pays
  // for an allocation it would not make in a real run.
  std::vector<Scratch> scratch(g.devices.size());
  std::vector<engine::Trace> steps;
  std::vector<Diagnostic> failures;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    std::vector<std::atomic<bool>> done(g.size());
    std::vector<std::int64_t> start(g.size()), end(g.size());
    std::vector<std::string> error(g.devices.size());
    const std::int64_t t0 = devices[0]->now_ns();
    std::vector<std::thread> threads;
    for (int d = 0; d < needed; ++d)
      threads.emplace_back([&, d] {
        Device& dev = *devices[static_cast<std::size_t>(d)];
        Scratch& sc = scratch[static_cast<std::size_t>(d)];
        // The device's resident state (weights, gradients, optimizer, buffers), then the
        // activations each task allocates and frees as planned.
        auto fail = [&](const std::string& why) {
          error[d] = why;
          for (std::uint32_t rest : order[d]) {  // let the other devices finish their waits
            done[rest] = true;
            done[rest].notify_all();
          }
        };
        auto base = dev.allocate(static_cast<std::size_t>(g.devices[d].baseline_bytes));
        if (!base) { fail(to_string(base.errors()[0])); return; }
        // Activations held between tasks, per (chunk, micro-batch): a task allocates its block at
        // its start; at its end the block joins what that micro-batch holds, less what it frees.
        std::map<std::pair<int, int>, std::pair<void*, std::size_t>> held;
        for (std::uint32_t id : order[d]) {
          for (std::uint32_t pr : preds[id]) done[pr].wait(false);
          const auto& t = g.tasks[id];
          start[id] = dev.now_ns() - t0;
          void* own = nullptr;
          if (t.alloc_bytes > 0) {
            auto a = dev.allocate(static_cast<std::size_t>(t.alloc_bytes));
            if (!a) { fail(to_string(a.errors()[0]) + " in task '" + schedule::task_name(t) + "'"); return; }
            own = *a;
            std::memset(own, 0, std::min<std::size_t>(static_cast<std::size_t>(t.alloc_bytes), 4096));
          }
          const bool bwd = t.kind == TaskKind::Backward;
          switch (t.kind) {
            case TaskKind::Forward:
            case TaskKind::Backward:
              for (int l = 0; l < t.layers; ++l)
                for (const auto& op : layer)
                  run_op(dev, sc, op, bwd, s.model.heads, s.training.seq_len, s.model.head_dim(), p.micro_batch);
              if (t.first_layer == 0)
                for (const auto& op : emb) run_op(dev, sc, op, bwd, 0, 0, 0, 0);
              if (t.first_layer + t.layers == model_layers)
                for (const auto& op : head) run_op(dev, sc, op, bwd, 0, 0, 0, 0);
              break;
            case TaskKind::Recompute:
              for (int l = 0; l < t.layers; ++l)
                for (const auto& op : layer)
                  if (p.recompute == cost::Recompute::Full || op.selective_recompute)
                    run_op(dev, sc, op, false, s.model.heads, s.training.seq_len, s.model.head_dim(), p.micro_batch);
              break;
            case TaskKind::SendActivation:
            case TaskKind::SendGradient: {
              // Copy the micro-batch's activation (or gradient) into a buffer the receiver reads.
              const std::size_t elems = static_cast<std::size_t>(p.micro_batch) * static_cast<std::size_t>(s.training.seq_len) *
                                        static_cast<std::size_t>(s.model.hidden);
              const std::size_t floats = s.training.precision == hw::Dtype::Fp32 ? elems : elems / 2;
              sc.fit(floats, 1, floats);
              std::memcpy(sc.c.data(), sc.a.data(), floats * sizeof(float));
              break;
            }
            case TaskKind::Optimizer: {
              // Streams the optimizer's bytes in slices of at most 16 M floats.
              const std::size_t floats = optimizer_floats[static_cast<std::size_t>(d)];
              const std::size_t slice = std::min<std::size_t>(floats, 1 << 24);
              sc.fit(slice, 1, slice);
              for (std::size_t n = 0; n < floats; n += slice) dev.stream(sc.a.data(), sc.c.data(), std::min(slice, floats - n));
              break;
            }
            default:
              break;  // no collectives in the plans this executor accepts
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
          end[id] = dev.now_ns() - t0;
          done[id] = true;
          done[id].notify_all();
        }
        for (auto& [key, block] : held)
          if (block.first != nullptr) dev.release(block.first, block.second);
        dev.release(*base, static_cast<std::size_t>(g.devices[d].baseline_bytes));
      });
    for (auto& th : threads) th.join();
    for (int d = 0; d < needed; ++d)
      if (!error[d].empty()) return Diagnostic{{}, "", "step " + std::to_string(step) + ": " + error[d], ""};
    if (step < o.warmup) continue;
    engine::Trace tr;
    tr.start = start;
    tr.end = end;
    tr.makespan = *std::max_element(end.begin(), end.end());
    for (auto& dev : devices) tr.peak_bytes.push_back(static_cast<std::int64_t>(dev->peak_bytes()));
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
