#include "exec/replay/replay.hpp"

#include "exec/replay/clock_sync.hpp"
#include "exec/replay/communicators.hpp"
#include "exec/replay/dp_groups.hpp"
#include "exec/replay/ops.hpp"
#include "exec/replay/routing.hpp"
#include "exec/replay/runner.hpp"
#include "exec/replay/scale.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "models/base/assert.hpp"
#include "models/cost/compute.hpp"
#include "models/workload/layer_ops.hpp"
#include "models/workload/model_spec.hpp"
#include "sim/analytic/op_breakdown.hpp"
#include "sim/analytic/stage_cost.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/schedule/unfold.hpp"

namespace hetsim::exec {
namespace {

using schedule::TaskKind;
using workload::OpKind;

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

// Plans the executor cannot run as planned (docs/executor.md, Limits).
std::optional<Diagnostic> unreplayable(const Scenario& s, const plan::Plan& p, const schedule::TaskGraph& g) {
  if (auto no = context_parallel_refusal(p)) return no;
  // MoE parallel folding over stages of different tp: the experts' gradient sync of a folding
  // stage and the dense chunks of a stage of another tp would meet in an order that deadlocks
  // (a member holding several chunks enters the experts' group between them), and a stage that
  // does not fold makes no experts' call at all. Refused before anything runs, not left to hang.
  if (s.model.moe() && schedule::folds_experts(g)) {
    const bool tps_differ = std::any_of(g.devices.begin(), g.devices.end(),
                                        [&](const schedule::DeviceRep& d) { return d.tp != g.devices.front().tp; });
    if (tps_differ)
      return Diagnostic{{}, "parallel.expert_tp",
                        "expert_tp below tp (MoE parallel folding) is replayed only where every stage has the same tp; "
                        "this plan's stages have different tp",
                        "give every stage the same tp, or replay the plan without expert_tp (docs/executor.md, Limits)"};
  }
  return std::nullopt;
}

// The hierarchical dispatch (ep_dispatch): per folded device, the nodes its EP groups span (EP
// ranks expert_tp apart, devices_per_node / expert_tp of them on a node, as stage_costs places
// them); 1 where the dispatch is one all-to-all (the plain one, or DeepEP's inside one node).
std::vector<int> dispatch_nodes(const Scenario& s, const plan::Plan& p, const schedule::TaskGraph& g, bool moe_ep) {
  std::vector<int> ep_nodes(g.devices.size(), 1);
  if (moe_ep && p.ep_dispatch == plan::Plan::EpDispatch::Hierarchical)
    for (std::size_t d = 0; d < g.devices.size(); ++d) {
      ep_nodes[d] = p.ep / analytic::group_ranks_per_node(
                               s.cluster.pools[static_cast<std::size_t>(g.devices[d].pool)].devices_per_node,
                               g.devices[d].expert_tp_or_tp(), p.ep);
    }
  return ep_nodes;
}

// The devices this process needs: the plan's real devices on the backend's (one process), or
// its own local device (mpirun).
std::optional<Diagnostic> missing_devices(const BackendDevices& of, int needed, bool multi_process,
                                          const ReplayOptions& o, const Backend& backend) {
  const int highest = needed > 0 ? *std::max_element(of.index.begin(), of.index.end()) : -1;
  if (!multi_process && highest >= backend.device_count())
    return Diagnostic{{}, "", "the plan needs " + std::to_string(needed) + " devices but the " + backend.name() +
                                  " backend has " + std::to_string(backend.device_count()),
                      of.mapped ? "give every pool its devices (pool device lists), or run with more devices (--devices)"
                                : "run with more devices (--devices), one process per device (mpirun), or scale the plan down (--fit)",
                      ErrorKind::Environment};
  if (multi_process && o.local_device >= backend.device_count())
    return Diagnostic{{}, "", "process " + std::to_string(o.world->rank()) + " should drive local device " +
                                  std::to_string(o.local_device) + " but the " + backend.name() + " backend has " +
                                  std::to_string(backend.device_count()) + " on its node",
                      "start at most as many processes per node as the node has devices", ErrorKind::Environment};
  return std::nullopt;
}

// The work of each compute task is the op lists it carries (TaskGraph::ops_of: the lists the
// cost model priced it by). Here, how each folded device runs them.
std::vector<OpContext> op_contexts(const Scenario& s, const plan::Plan& p, const schedule::TaskGraph& g) {
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
                   s.training.causal && s.training.flash_attention, s.model.mla() ? s.model.v_head_dim : 0};
    c.hidden = s.model.hidden;
    c.vocab_rank = std::max(1, s.model.vocab / sh.tp);
  }
  return ctx;
}

// The cost model's time per op class of every task (what the engine's durations are made of).
std::vector<io::TaskParts> predicted_parts(const Scenario& s, const plan::Plan& p, const schedule::TaskGraph& g,
                                           const engine::Trace& predicted) {
  std::vector<io::TaskParts> out(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    const auto& info = g.devices[t.device];
    const auto& dev = s.cluster.pools[static_cast<std::size_t>(info.pool)].device;
    std::array<double, kClasses> sum{};
    // share: the part of each op this task runs (1, or its recompute share in a recompute task).
    auto add = [&](const std::vector<workload::Op>& ops, cost::Pass pass, double times, bool recompute) {
      for (const auto& op : ops) {
        const double share = recompute ? cost::recompute_share(op, p.recompute, p.recompute_modules) : 1.0;
        if (share > 0)
          sum[static_cast<std::size_t>(op_class(op))] += cost::op_time(dev, s.training.precision, op, pass).v * times * share;
      }
    };
    if (t.kind == TaskKind::Forward || t.kind == TaskKind::Backward || t.kind == TaskKind::Recompute) {
      const auto pass = t.kind == TaskKind::Backward ? cost::Pass::Backward : cost::Pass::Forward;
      for (const schedule::OpUse& use : g.ops_of(i))
        add(g.op_lists[use.list], pass, use.times, t.kind == TaskKind::Recompute);
    } else if (t.kind == TaskKind::Optimizer) {
      sum[kOptimizerClass] = static_cast<double>(predicted.end[i] - predicted.start[i]) * 1e-9;
    } else if (t.kind == TaskKind::EpAllToAll) {
      sum[kAllToAllClass] = static_cast<double>(predicted.end[i] - predicted.start[i]) * 1e-9;
    }
    for (int c = 0; c < kClasses; ++c)
      if (sum[static_cast<std::size_t>(c)] > 0)
        out[i].emplace_back(class_name(c), static_cast<std::int64_t>(sum[static_cast<std::size_t>(c)] * 1e9 + 0.5));
  }
  return out;
}

// Per task, the overlapped all-to-all it launches when it ends (kNoLaunch: none): its own unit's
// last task before it (the TP collective, or the compute), the latest-ending of its predecessors
// of the same device, chunk and micro-batch.
std::vector<std::uint32_t> exchange_launches(const schedule::TaskGraph& g, const engine::Trace& predicted,
                                             const std::vector<std::vector<std::uint32_t>>& preds) {
  std::vector<std::uint32_t> out(g.size(), kNoLaunch);
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    if (!t.overlapped) continue;
    std::uint32_t from = kNoLaunch;
    for (const std::uint32_t pr : preds[i]) {
      const auto& u = g.tasks[pr];
      if (u.device != t.device || u.chunk != t.chunk || u.micro_batch != t.micro_batch || u.kind == TaskKind::EpAllToAll)
        continue;
      if (from == kNoLaunch || predicted.end[pr] > predicted.end[from]) from = pr;
    }
    HETSIM_ASSERT(from != kNoLaunch && out[from] == kNoLaunch, "an overlapped all-to-all follows its own unit");
    out[from] = i;
  }
  return out;
}

// Each device runs its tasks in the predicted order (a valid topological order).
std::vector<std::vector<std::uint32_t>> task_order(const schedule::TaskGraph& g, const engine::Trace& predicted) {
  std::vector<std::vector<std::uint32_t>> order(g.devices.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) order[g.tasks[i].device].push_back(i);
  for (auto& v : order)
    std::stable_sort(v.begin(), v.end(), [&](auto a, auto b) { return predicted.start[a] < predicted.start[b]; });
  return order;
}

std::vector<std::vector<std::uint32_t>> predecessors(const schedule::TaskGraph& g) {
  std::vector<std::vector<std::uint32_t>> preds(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i)
    for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1]; ++k) preds[g.succ[k]].push_back(i);
  return preds;
}

// Optimizer parameter counts per folded device: what the cost model moves.
std::vector<std::size_t> adam_params(const Scenario& s, const plan::Plan& p, const schedule::TaskGraph& g, bool moe_ep) {
  const auto costs = analytic::stage_costs(s, p);
  const auto sb = cost::state_bytes(s.training.precision, s.training.optimizer, s.training.autocast);
  std::vector<std::size_t> out;  // Adam's fp32 pass moves 28 bytes per parameter
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
    out.push_back(as_size(bytes / 28.0));
  }
  return out;
}

// Expert parallelism: every EP group's routing of each MoE layer and micro-batch, drawn once
// (seeded: each member and every step routes alike). The EP groups of one expert_tp · ep block
// (schedule::ep_groups: one per expert_tp rank) route the same tokens; each EP rank's are its
// expert_tp group's share of the replica's micro-batch (micro_batch · seq_len · expert_tp / tp:
// with expert_tp = tp the whole of it, folded below tp its expert_tp sequence shards).
std::map<RoutingKey, LayerRouting> draw_routing(const Scenario& s, const plan::Plan& p, const schedule::TaskGraph& g,
                                                const std::vector<int>& ep_nodes) {
  std::map<RoutingKey, LayerRouting> routing;
  for (const auto& t : g.tasks) {
    if (t.kind != TaskKind::Forward) continue;
    const auto& info = g.devices[t.device];
    const int et = info.expert_tp_or_tp();
    const std::int64_t tokens = std::int64_t{p.micro_batch} * s.training.seq_len * et / info.tp;
    for (int e = 0; e < info.count / (p.ep * et); ++e)
      for (int l = t.first_layer; l < t.first_layer + t.layers; ++l)
        if (s.model.moe_layer(l))
          routing.emplace(std::tuple{t.device, e, t.micro_batch, l},
                          route_layer(s.model, p.ep, tokens, s.seed, l, t.micro_batch, info.group * 65536 + e,
                                      ep_nodes[t.device]));
  }
  return routing;
}

// The processes under mpirun (one per real device), and the pools' speeds.
std::optional<Diagnostic> bad_options(const Scenario& s, const ReplayOptions& o, ProcessGroup* world, int needed,
                                      const Backend& backend) {
  if (world != nullptr && world->size() != needed)
    return Diagnostic{{}, "plan", "the plan needs " + std::to_string(needed) + " devices but " +
                                      std::to_string(world->size()) + " processes were started",
                      "mpirun -np " + std::to_string(needed) + " (one process per device)"};
  if (world != nullptr && !o.on_fatal)
    return Diagnostic{{}, "", "replay under mpirun needs ReplayOptions::on_fatal", "", ErrorKind::Internal};
  if (!o.pool_speed.empty() && o.pool_speed.size() != s.cluster.pools.size())
    return Diagnostic{{}, "speed", std::to_string(o.pool_speed.size()) + " pool speeds for " +
                                       std::to_string(s.cluster.pools.size()) + " pools", "one speed per pool of the scenario"};
  for (std::size_t k = 0; k < o.pool_speed.size(); ++k)
    if (!(o.pool_speed[k] > 0 && o.pool_speed[k] <= 1))
      return Diagnostic{{}, "speed", "pool '" + s.cluster.pools[k].name + "': a device speed must be above 0 and at most 1, not " +
                                         std::to_string(o.pool_speed[k]), ""};
  if (!o.pool_cores.empty() && o.pool_cores.size() != s.cluster.pools.size())
    return Diagnostic{{}, "cores", std::to_string(o.pool_cores.size()) + " pool core counts for " +
                                       std::to_string(s.cluster.pools.size()) + " pools", "one per pool of the scenario"};
  if (!o.pool_memory.empty() && o.pool_memory.size() != s.cluster.pools.size())
    return Diagnostic{{}, "memory", std::to_string(o.pool_memory.size()) + " pool memories for " +
                                        std::to_string(s.cluster.pools.size()) + " pools", "one per pool of the scenario"};
  for (std::size_t k = 0; k < o.pool_cores.size(); ++k) {
    if (o.pool_cores[k] < 0)
      return Diagnostic{{}, "cores", "pool '" + s.cluster.pools[k].name + "': " + std::to_string(o.pool_cores[k]) +
                                         " cores a device", "1 or more (0: the backend's own)"};
    if (o.pool_cores[k] != 0 && !backend.sets_cores())
      return Diagnostic{{}, "cores", "pool '" + s.cluster.pools[k].name + "' of " + std::to_string(o.pool_cores[k]) +
                                         " cores a device: the " + backend.name() + " backend's devices have no core count to set",
                        "cores per device are a cpu backend feature (docs/executor.md)"};
  }
  if (!backend.slows())
    for (std::size_t k = 0; k < o.pool_speed.size(); ++k)
      if (o.pool_speed[k] != 1.0)
        return Diagnostic{{}, "speed", "pool '" + s.cluster.pools[k].name + "' at speed " + std::to_string(o.pool_speed[k]) +
                                           ": the " + backend.name() + " backend cannot slow its devices",
                          "device speed factors are a cpu backend feature (docs/executor.md)"};
  return std::nullopt;
}

// Opens this process's real devices (each at its pool's speed) and their scratch buffers, and
// notes where the pools run.
Diagnostics open_devices(ReplayRun& run, const BackendDevices& of, Backend& backend, std::vector<std::string>& notes) {
  const auto& g = run.g;
  const auto& o = run.o;
  run.devices.resize(static_cast<std::size_t>(run.layout.real_devices));
  for (std::size_t rep = 0; rep < g.devices.size(); ++rep) {
    const auto pool = static_cast<std::size_t>(g.devices[rep].pool);
    DeviceSetup setup;
    if (!o.pool_speed.empty()) setup.speed = o.pool_speed[pool];
    if (!o.pool_cores.empty()) setup.cores = o.pool_cores[pool];
    if (!o.pool_memory.empty()) setup.memory = o.pool_memory[pool];
    for (int m = 0; m < g.devices[rep].count; ++m) {
      const int d = run.layout.first_real[rep] + m;
      if (!run.local(d)) continue;
      auto dev = backend.open_as(run.world != nullptr ? o.local_device : of.index[static_cast<std::size_t>(d)], setup);
      if (!dev) {
        auto why = dev.errors();
        for (auto& e : why) e.message = "pool '" + run.s.cluster.pools[pool].name + "': " + e.message;
        return why;
      }
      run.devices[static_cast<std::size_t>(d)] = std::move(*dev);
    }
  }
  if (of.mapped)
    for (std::size_t k = 0; k < o.pool_devices.size(); ++k) {
      if (o.pool_devices[k].empty()) continue;
      std::string list;
      for (const int i : o.pool_devices[k]) list += (list.empty() ? "" : ", ") + std::to_string(i);
      notes.push_back("pool '" + run.s.cluster.pools[k].name + "' runs on " + backend.name() + " devices " + list);
    }
  for (std::size_t k = 0; k < o.pool_speed.size(); ++k)
    if (o.pool_speed[k] != 1.0)
      notes.push_back("pool '" + run.s.cluster.pools[k].name + "' runs on " + backend.name() + " devices at speed " +
                      std::to_string(o.pool_speed[k]).substr(0, 5) + " (each kernel, then an idle)");
  for (std::size_t k = 0; k < o.pool_cores.size(); ++k)
    if (o.pool_cores[k] != 0)
      notes.push_back("pool '" + run.s.cluster.pools[k].name + "' runs on " + backend.name() + " devices of " +
                      std::to_string(o.pool_cores[k]) + (o.pool_cores[k] == 1 ? " core" : " cores"));
  for (std::size_t k = 0; k < o.pool_memory.size(); ++k)
    if (o.pool_memory[k] != 0)
      notes.push_back("pool '" + run.s.cluster.pools[k].name + "' runs on " + backend.name() + " devices of " +
                      std::to_string(o.pool_memory[k] >> 20) + " MiB");
  run.scratch.resize(run.devices.size());
  for (std::size_t d = 0; d < run.devices.size(); ++d) run.scratch[d].dev = run.devices[d].get();
  return {};
}

// Each device's inbox: where pipeline senders of this process copy activations and gradients
// (scratch slot 3, made once before the threads start; concurrent senders overwrite one
// another's bytes, which only the timing cares about). What goes over the wire is sized as the
// cost model prices it: activations in the training format (2 bytes in mixed precision, so half
// as many fp32 values).
Diagnostics make_inboxes(ReplayRun& run) {
  const std::size_t act_elems = static_cast<std::size_t>(run.p.micro_batch) *
                                static_cast<std::size_t>(run.s.training.seq_len) *
                                static_cast<std::size_t>(run.s.model.hidden);
  const std::size_t wire_act = run.wide ? act_elems : act_elems / 2;
  run.inbox.assign(run.devices.size(), nullptr);
  for (std::size_t d = 0; d < run.devices.size(); ++d)
    if (run.local(static_cast<int>(d)) && (run.inbox[d] = run.devices[d]->workspace(3, 4 * wire_act)) == nullptr)
      return {Diagnostic{{}, "", run.devices[d]->name() + ": no memory for the pipeline inbox (" +
                                     std::to_string(4 * wire_act) + " bytes)", "", ErrorKind::Environment}};
  return {};
}

// Runs one step on every local real device, a thread each. The step's clock starts (`origin`,
// state.t0) once every thread has started and allocated its resident state, so that starting
// threads is not timed as the step's first task.
void run_step(ReplayRun& run, StepState& state, const std::function<std::int64_t()>& origin) {
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  for (std::uint32_t rep = 0; rep < run.g.devices.size(); ++rep)
    for (int member = 0; member < run.g.devices[rep].count; ++member)
      if (run.local(run.layout.first_real[rep] + member))
        threads.emplace_back([&run, &state, &ready, &go, rep, member] {
          DeviceRunner runner(run, state, rep, member);
          runner.prepare();
          ready.fetch_add(1);
          ready.notify_one();
          go.wait(false);
          runner.run_step();
        });
  const int n = static_cast<int>(threads.size());
  for (int k = ready.load(); k < n; k = ready.load()) ready.wait(k);
  state.t0 = origin();
  go.store(true);
  go.notify_all();
  for (auto& th : threads) th.join();
}

// Under mpirun: every process sends rank 0 what its member-0 devices measured: per device (rep,
// peak, tasks), per task (id, start, end, time per op class); rank 0 merges them into `state`,
// `peak` and `step_end`.
void gather_step(const ReplayRun& run, StepState& state, std::vector<std::int64_t>& peak, std::int64_t& step_end) {
  const auto& g = run.g;
  std::vector<std::int64_t> mine{step_end};
  for (std::size_t rep = 0; rep < g.devices.size(); ++rep) {
    if (run.layout.first_real[rep] != run.me) continue;
    mine.insert(mine.end(), {static_cast<std::int64_t>(rep), peak[rep], static_cast<std::int64_t>(run.order[rep].size())});
    for (std::uint32_t id : run.order[rep]) {
      mine.insert(mine.end(), {static_cast<std::int64_t>(id), state.start[id], state.end[id]});
      std::array<std::int64_t, kClasses> by{};
      for (const auto& [cls, ns] : state.parts[id])
        for (int c = 0; c < kClasses; ++c)
          if (class_name(c) == cls) by[static_cast<std::size_t>(c)] = ns;
      mine.insert(mine.end(), by.begin(), by.end());
    }
  }
  const auto all = run.world->gather(mine, 0);
  if (run.me != 0) return;
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
        state.start[id] = v[k + 1];
        state.end[id] = v[k + 2];
        state.parts[id].clear();
        for (int c = 0; c < kClasses; ++c)
          if (const auto ns = v[k + 3 + static_cast<std::size_t>(c)]; ns > 0) state.parts[id].emplace_back(class_name(c), ns);
      }
    }
  }
}

// The measured steps so far, and their parts; the median one goes to `out`.
struct MeasuredSteps {
  std::vector<engine::Trace> traces;
  std::vector<std::vector<io::TaskParts>> parts;
};

// Adds a finished, measured step to `steps` and makes the median so far `out`'s measurement.
// Under mpirun only rank 0 adds (false elsewhere: the results live on rank 0).
bool add_step(const ReplayRun& run, StepState& state, MeasuredSteps& steps, Replay& out) {
  const auto& g = run.g;
  std::vector<std::int64_t> peak(g.devices.size(), 0);
  std::int64_t step_end = state.last_end.load();
  for (std::size_t rep = 0; rep < g.devices.size(); ++rep)
    if (const auto& d = run.devices[static_cast<std::size_t>(run.layout.first_real[rep])]; d != nullptr)
      peak[rep] = static_cast<std::int64_t>(d->peak_bytes());
  if (run.world != nullptr) {
    gather_step(run, state, peak, step_end);
    if (run.me != 0) return false;
  }
  engine::Trace tr;
  tr.start = state.start;
  tr.end = state.end;
  tr.makespan = std::max(*std::max_element(state.end.begin(), state.end.end()), step_end);
  tr.peak_bytes = peak;
  out.step_ns.push_back(tr.makespan);
  steps.traces.push_back(std::move(tr));
  steps.parts.push_back(std::move(state.parts));
  // The median step so far.
  std::vector<std::size_t> idx(steps.traces.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return steps.traces[a].makespan < steps.traces[b].makespan; });
  out.measured = steps.traces[idx[idx.size() / 2]];
  out.measured_parts = steps.parts[idx[idx.size() / 2]];
  return true;
}

// Runs the warm-up and measured steps into `out`. A device failure before any step was measured
// is the result; after, the measured steps are kept (Replay::failure).
std::optional<Diagnostic> run_steps(ReplayRun& run, Replay& out) {
  const auto& o = run.o;
  MeasuredSteps steps;
  // Under mpirun every process times its tasks from rank 0's step start (clock_sync.hpp), so the
  // ends and starts of dependent tasks on different processes compare.
  const std::int64_t clock_offset = run.world != nullptr ? clock_offset_to_rank0(*run.world) : 0;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    StepState state(run.g.size(), run.max_count, run.layout.real_devices, step);
    run_step(run, state, [&] {
      return run.world != nullptr ? common_step_origin(*run.world, clock_offset) : host_clock_ns();
    });
    if (state.failed) {
      std::pair<std::string, std::string> why{"failed", ""};
      if (const int first = state.first_failed.load(); first >= 0) why = state.error[static_cast<std::size_t>(first)];
      Diagnostic d{{}, "", "step " + std::to_string(step) + ": " + why.first, why.second, ErrorKind::Environment};
      if (steps.traces.empty()) return d;
      out.failure = d;  // keep what was measured
      break;
    }
    if (step < o.warmup) continue;
    if (add_step(run, state, steps, out) && o.on_step) o.on_step(out);
  }
  return std::nullopt;
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
  const std::vector<int> ep_nodes = dispatch_nodes(s, p, g, moe_ep);
  if (auto d = unreplayable(s, p, g)) return *d;
  auto layout = dp_layout(g);
  if (!layout) return layout.errors();
  const int needed = layout->real_devices;
  const bool multi_process = o.world != nullptr && o.world->size() > 1;
  auto devices_of = backend_devices(s, g, layout->first_real, needed, o, backend);
  if (!devices_of) return devices_of.errors();
  if (auto d = missing_devices(*devices_of, needed, multi_process, o, backend)) return *d;

  ReplayRun run(s, p, g, *layout, o);
  for (const auto& d : g.devices) run.max_count = std::max(run.max_count, d.count);
  run.ctx = op_contexts(s, p, g);
  if (s.training.precision == hw::Dtype::Fp8)
    out.notes.push_back("fp8 GEMMs run in bf16 (no backend here has 8-bit GEMMs)");
  if (backend.name() == "cpu" && s.training.precision != hw::Dtype::Fp32)
    out.notes.push_back(std::string("the cpu backend stores ") + std::string(format_name(run.ctx[0].format)) +
                        " operands and computes in fp32");
  out.predicted_parts = predicted_parts(s, p, g, out.predicted);
  run.order = task_order(g, out.predicted);
  run.preds = predecessors(g);
  run.launches = exchange_launches(g, out.predicted, run.preds);
  run.adam_params = adam_params(s, p, g, moe_ep);
  run.moe_ep = moe_ep;
  run.local_experts = moe_ep ? s.model.experts / p.ep : 0;
  if (moe_ep) run.routing = draw_routing(s, p, g, ep_nodes);
  run.wide = s.training.precision == hw::Dtype::Fp32;
  // One process per real device under mpirun; else this process runs them all, a thread each.
  run.world = multi_process ? o.world : nullptr;
  run.me = run.world != nullptr ? run.world->rank() : -1;
  if (auto d = bad_options(s, o, run.world, needed, backend)) return *d;
  const bool overlapped = std::any_of(g.tasks.begin(), g.tasks.end(), [](const schedule::Task& t) { return t.overlapped; });
  if (overlapped && run.world != nullptr && !run.world->concurrent())
    // The overlapped exchange runs on a second thread of the process, on its EP group's own
    // communicator, beside the device thread's MPI calls on the others (tokens, payloads, the
    // other collectives): MPI_THREAD_MULTIPLE, which mpi_world asks for but does not insist on.
    return Diagnostic{{}, "parallel.overlap_ep_comm",
                      "overlap_ep_comm is not replayed under mpirun with this MPI library: its all-to-alls run on "
                      "a second thread of each process beside the device thread's MPI calls, which needs "
                      "MPI_THREAD_MULTIPLE, and the library gave less",
                      "an MPI library built with thread support (Open MPI: `ompi_info | grep -i thread`), one "
                      "process (without mpirun), or overlap_ep_comm = false (docs/executor.md, Limits)"};
  if (auto errs = open_devices(run, *devices_of, backend, out.notes); !errs.empty()) return errs;
  if (overlapped)
    for (const auto& d : run.devices)
      if (d != nullptr && !d->host_memory())
        return Diagnostic{{}, "parallel.overlap_ep_comm",
                          "overlap_ep_comm is replayed on devices of host memory only (the cpu backend): its "
                          "all-to-alls run on a second host thread over host buffers, and the " +
                              backend.name() + " backend's devices are not host memory",
                          "replay the plan on the cpu backend, or with overlap_ep_comm = false (docs/executor.md, Limits)"};
  auto comms = make_communicators({run.devices, backend, run.world, run.me, out.notes}, g, p, *layout, moe_ep, ep_nodes);
  if (!comms) return comms.errors();
  run.comms = std::move(*comms);
  // Across processes, dependencies between devices are messages.
  if (run.world != nullptr) {
    run.tokens = run.world->communicator(nullptr);
    run.payloads = run.world->communicator(run.devices[static_cast<std::size_t>(run.me)].get());
    out.notes.push_back("one process per device: " + std::to_string(run.world->size()) + " processes");
  }
  if (auto errs = make_inboxes(run); !errs.empty()) return errs;
  if (auto d = run_steps(run, out)) return *d;
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
