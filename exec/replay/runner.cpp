#include "exec/replay/runner.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <system_error>

#include "models/base/assert.hpp"
#include "models/cost/compute.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/schedule/unfold.hpp"

namespace hetsim::exec {
namespace {

using schedule::TaskKind;

// The members of a predecessor task's device (tensor-parallel degree `ptp`) that feed member
// (replica, rank) of a device with degree `tp`, in the same replica: the ranks ≡ rank (mod the
// smaller degree). (A pipeline message's receiver reads the parts message_receipts names.)
std::vector<int> feeders(int ptp, int tp, int replica, int rank) {
  std::vector<int> out;
  if (ptp <= tp) {
    out.push_back(replica * ptp + rank % ptp);
  } else {
    for (int r = rank; r < ptp; r += tp) out.push_back(replica * ptp + r);
  }
  return out;
}

bool is_message(TaskKind k) { return k == TaskKind::SendActivation || k == TaskKind::SendGradient; }

// The remote members finished task `id`'s member feeds (real device indexes, once each); `id`
// is no pipeline message (its parts go where message_sends says).
std::vector<int> remote_successors(const schedule::TaskGraph& g, const std::vector<int>& first_real, std::uint32_t id,
                                   int member) {
  std::vector<int> to;
  const auto& pinfo = g.devices[g.tasks[id].device];
  const int self = first_real[g.tasks[id].device] + member;
  for (std::uint32_t k = g.succ_begin[id]; k < g.succ_begin[id + 1]; ++k) {
    const auto sdev = g.tasks[g.succ[k]].device;
    const auto& sinfo = g.devices[sdev];
    for (int m = 0; m < sinfo.count; ++m) {
      const auto f = feeders(pinfo.tp, sinfo.tp, m / sinfo.tp, m % sinfo.tp);
      const int real = first_real[sdev] + m;
      if (real != self && std::find(f.begin(), f.end(), member) != f.end() &&
          std::find(to.begin(), to.end(), real) == to.end())
        to.push_back(real);
    }
  }
  return to;
}

}  // namespace

StepState::StepState(std::size_t tasks, int count, int real_devices, int index)
    : step(index),
      max_count(count),
      done(tasks * static_cast<std::size_t>(count)),
      start(tasks),
      end(tasks),
      parts(tasks),
      error(static_cast<std::size_t>(real_devices)) {}

std::atomic<bool>& StepState::flag(std::uint32_t task, int member) {
  return done[task * static_cast<std::size_t>(max_count) + static_cast<std::size_t>(member)];
}

DeviceRunner::DeviceRunner(ReplayRun& run, StepState& step, std::uint32_t rep, int member)
    : run_(run),
      step_(step),
      g_(run.g),
      rep_(rep),
      member_(member),
      info_(run.g.devices[rep]),
      tp_(info_.tp),
      replica_(member / tp_),
      rank_(member % tp_),
      real_(static_cast<std::size_t>(run.layout.first_real[rep] + member)),
      dev_(*run.devices[real_]),
      sc_(run.scratch[real_]),
      oc_(run.ctx[rep]),
      tpc_(*run.comms.tp[rep][static_cast<std::size_t>(replica_)][static_cast<std::size_t>(rank_)]),
      etpc_(run.comms.etp_of[real_]),
      epc_(run.comms.ep_of[real_]),
      et_(info_.expert_tp_or_tp()),
      ep_block_(member / (et_ * std::max(1, run.p.ep))),
      ep_rank_(member % (et_ * std::max(1, run.p.ep)) / et_),
      dpcs_(run.comms.dp_of[real_]) {}

void DeviceRunner::prepare() {
  auto base = dev_.allocate(static_cast<std::size_t>(info_.baseline_bytes));
  if (!base) {
    fail(base.errors()[0].message + " for its resident state", base.errors()[0].hint);
    return;
  }
  base_ptr_ = *base;
  prepared_ = true;
}

void DeviceRunner::run_step() {
  if (!prepared_) return;  // prepare() failed
  for (std::uint32_t id : run_.order[rep_]) {
    if (!await_predecessors(id)) return;
    if (step_.failed) {
      fail("");
      return;
    }
    if (!run_task(id)) return;
    if (const std::uint32_t e = run_.launches[id]; e != kNoLaunch && !launch_exchange(e)) return;
  }
  for (auto& [key, block] : held_)
    if (block.first != nullptr) dev_.release(block.first, block.second);
  dev_.release(base_ptr_, static_cast<std::size_t>(info_.baseline_bytes));
}

bool DeviceRunner::await_predecessors(std::uint32_t id) {
  for (std::uint32_t pr : run_.preds[id]) {
    const auto pdev = g_.tasks[pr].device;
    if (is_message(g_.tasks[pr].kind) && pdev != rep_) {
      // A pipeline message to this device: every sender rank whose part this member reads.
      for (const MessagePart& part : message_receipts(g_, run_.layout.first_real, pr, member_))
        if (!await_member(pr, part.member, part.real, &part.floats)) return false;
      continue;
    }
    // Every other predecessor rank that feeds this one: same replica, ranks ≡ rank (mod tp).
    for (int pm : feeders(g_.devices[pdev].tp, tp_, replica_, rank_))
      if (!await_member(pr, pm, run_.layout.first_real[pdev] + pm, nullptr)) return false;
  }
  return true;
}

// Waits for member `pm` (real device `from`) of predecessor task `pr`: in this process, for its
// flag; under mpirun from another process, for its message: a pipeline message's part of
// `floats` values (received into the buffer the next stage reads), or else a token.
bool DeviceRunner::await_member(std::uint32_t pr, int pm, int from, const std::size_t* floats) {
  if (run_.world == nullptr || from == run_.me) {
    step_.flag(pr, pm).wait(false);
    return true;
  }
  if (!received_.insert({pr, from}).second) return true;
  Result<std::int64_t> r = std::int64_t{0};
  if (floats != nullptr) {
    sc_.fit(4 * *floats, 1, 4 * *floats);
    if (sc_.failed) {
      fail(dev_.name() + ": no memory to receive an activation");
      return false;
    }
    r = run_.payloads->recv(sc_.fc(), *floats, from, static_cast<int>(2 * pr + 1));
  } else {
    float token = 0;
    r = run_.tokens->recv(&token, 1, from, static_cast<int>(2 * pr));
  }
  if (!r) {
    fail(dev_.name() + ": " + r.errors()[0].message);
    return false;
  }
  return true;
}

bool DeviceRunner::run_task(std::uint32_t id) {
  const auto& t = g_.tasks[id];
  void* own = nullptr;
  if (t.alloc_bytes > 0) {
    auto a = dev_.allocate(static_cast<std::size_t>(t.alloc_bytes));
    if (!a) {
      fail(a.errors()[0].message + where(id), a.errors()[0].hint);
      return false;
    }
    own = *a;
  }
  // Marks: the task's start, then one after every timed op (its class noted).
  mark_class_.clear();
  began_ = -1;
  comm_error_.clear();
  dev_.record();
  switch (t.kind) {
    case TaskKind::Forward:
    case TaskKind::Backward:
    case TaskKind::Recompute: run_compute(id); break;
    case TaskKind::TpCollective: run_tp_collective(id); break;
    case TaskKind::GradReduce:
    case TaskKind::ParamGather: run_dp_collective(id); break;
    case TaskKind::SendActivation:
    case TaskKind::SendGradient: send_message(id); break;
    case TaskKind::Optimizer: run_optimizer(); break;
    case TaskKind::EpAllToAll: run_all_to_all(id); break;
  }
  return finish(id, own);
}

void DeviceRunner::timed(int cls) {
  dev_.record();
  mark_class_.push_back(cls);
}

void DeviceRunner::note(const Result<std::int64_t>& r, bool first) {
  if (!r) comm_error_ = dev_.name() + ": " + r.errors()[0].message;
  else if (first && began_ < 0) began_ = *r;
}

// recompute: each op's recompute share of its forward (a GEMM re-run in part as a GEMM of that
// share of its columns).
void DeviceRunner::run_ops(const std::vector<workload::Op>& ops, bool backward, bool recompute) {
  for (const auto& op : ops) {
    const double share = recompute ? cost::recompute_share(op, run_.p.recompute, run_.p.recompute_modules) : 1.0;
    if (share <= 0) continue;
    if (share < 1) {
      workload::Op part = op;
      part.n = std::max(1.0, std::round(op.n * share));
      part.elems *= share;
      part.fwd_bytes = op.fwd_bytes * share;
      part.fwd_flops = op.fwd_flops * share;
      run_op(dev_, sc_, part, backward, oc_);
    } else {
      run_op(dev_, sc_, op, backward, oc_);
    }
    timed(op_class(op));
  }
}

const LayerRouting& DeviceRunner::routing_of(const schedule::Task& t, int l) const {
  return run_.routing.at({rep_, ep_block_, t.micro_batch, t.first_layer + l});
}

// Layer l of the task: the list of its kind (a MoE model's dense layers the dense list, where
// the stage has both); with expert parallelism, as this EP rank's routing of it runs it.
const std::vector<workload::Op>& DeviceRunner::layer_ops(const schedule::Task& t, int l, const TaskOps& lists) {
  const bool moe_layer = run_.s.model.moe() && run_.s.model.moe_layer(t.first_layer + l);
  if (!moe_layer) return lists.dense != nullptr ? *lists.dense : *lists.layer;
  if (!run_.moe_ep) return *lists.layer;
  routed_ = routed_ops(*lists.layer, routing_of(t, l), ep_rank_, run_.local_experts);
  return routed_;
}

// Forward, backward, recompute: the task's op lists (TaskGraph::ops_of), each of its layers, then
// the embedding's and the head's (not re-run by a recompute).
void DeviceRunner::run_compute(std::uint32_t id) {
  const auto& t = g_.tasks[id];
  TaskOps lists;
  for (const schedule::OpUse& use : g_.ops_of(id)) {
    const auto* list = &g_.op_lists[use.list];
    if (use.role == schedule::OpRole::Layer) lists.layer = list;
    else if (use.role == schedule::OpRole::DenseLayer) lists.dense = list;
    else lists.edges.push_back(list);
  }
  if (t.kind == TaskKind::Recompute) {
    for (int l = 0; l < t.layers; ++l) run_ops(layer_ops(t, l, lists), false, true);
    return;
  }
  const bool bwd = t.kind == TaskKind::Backward;
  for (int l = 0; l < t.layers; ++l) run_ops(layer_ops(t, l, lists), bwd, false);
  for (const auto* list : lists.edges) run_ops(*list, bwd, false);
}

// The task's calls (schedule::CommCall), as often as it makes them, the fractions carried over to
// this device's next TP task (tp_runs): the pipeline message it received as 1/tp shards gathered
// first (pipeline_scatter_gather), its layers' all-gathers and reduce-scatters (sequence
// parallel) or all-reduces, its share of the embedding's and the head's.
// A MoE block's calls over its expert_tp ranks (CommCall::ranks, below tp) run on the member's
// expert_tp group; over one rank they move nothing.
void DeviceRunner::run_tp_collective(std::uint32_t id) {
  bool first_call = true;
  for (const TpRun& r : tp_runs(g_, id, tp_, tp_owed_)) {
    if (r.ranks <= 1) continue;
    Communicator& c = r.ranks == tp_ ? tpc_ : *etpc_;
    const std::size_t n = r.floats, shard = n / static_cast<std::size_t>(r.ranks);
    // Results go to c only (its second part holds the reduce-scatter's shard): a and b are the
    // compute's 16-bit inputs, and fp32 sums there would read as NaN or Inf.
    sc_.fit(n * 4, n * 4, (n + shard) * 4);
    if (sc_.failed) return;
    for (int k = 0; k < r.times && comm_error_.empty(); ++k) {
      if (r.kind == cost::Collective::AllGather) note(c.all_gather(sc_.fa(), sc_.fc(), shard), first_call);
      else if (r.kind == cost::Collective::ReduceScatter)
        note(c.reduce_scatter(sc_.fc(), sc_.fc() + n, shard), first_call);
      else note(c.all_reduce(sc_.fc(), n), first_call);
      first_call = false;
    }
  }
}

// Gradient reduce, parameter gather: the collectives of this layer among every replica that
// holds it, in its group and (several groups) in the others: one per chunk this rank holds (one
// unless the groups' tp degrees differ), a shard per member under ZeRO. Hybrid sharding's
// all-reduce across groups: one per chunk of this member's piece, with the chunk's holder in
// every other group (dp_layout's pieces_of).
void DeviceRunner::run_dp_collective(std::uint32_t id) {
  const auto& layout = run_.layout;
  const auto& joins = g_.tasks[id].across_groups ? layout.pieces_of[id][static_cast<std::size_t>(member_)]
                                                 : layout.member_of[id][static_cast<std::size_t>(rank_)];
  // Each of the task's calls on one chunk's buffer (dp_call_floats): the routed experts' part
  // (CommCall::experts, expert parallelism) on the member's expert data-parallel communicator
  // (edp_of), the rest on the layer's.
  // Folded experts (schedule::folds_experts): their part once, over the member's
  // expert-data-parallel group (keyed by its first group), its whole expert gradients.
  const long long chunks = layout.chunks[id];
  const bool folded = !joins.empty() && schedule::folds_experts(g_, g_.members_of(id));
  auto collective = [&](Communicator& c, const schedule::CommCall& call, bool first) {
    const auto r = static_cast<std::size_t>(c.size());
    const std::size_t n = call.experts && folded ? expert_dp_floats(g_, id, call, c.size())
                                                 : dp_call_floats(g_, id, call, chunks, c.size());
    const std::size_t per = n / r;
    sc_.fit(n * 4, n * 4, n * 4);
    if (sc_.failed || !comm_error_.empty()) return;
    if (call.kind == cost::Collective::AllGather) note(c.all_gather(sc_.fa(), sc_.fc(), per), first);
    else if (call.kind == cost::Collective::AllReduce) note(c.all_reduce(sc_.fc(), n), first);
    else note(c.reduce_scatter(sc_.fa(), sc_.fc(), per), first);  // results in c only
  };
  const auto& edp_of = run_.comms.edp_of[real_];
  for (const int gi : joins) {
    bool first = true;
    for (const auto& call : g_.calls_of(id)) {
      if (!call.experts) {
        collective(*dpcs_.at(gi), call, first);
      } else if (const auto e = edp_of.find(gi); e != edp_of.end() && (!folded || gi == joins.front())) {
        collective(*e->second, call, first);
      } else {
        continue;  // alone with its experts: nothing to sync
      }
      first = false;
      if (sc_.failed || !comm_error_.empty()) return;
    }
  }
}

// This rank's slice of the micro-batch's activation (or gradient) to each rank of the other stage
// that reads it: the whole of it, or, when sequence parallelism or the framework's scatter-gather
// splits it (Task::split), the part of this rank's 1/tp slice that each reader's slice covers
// (resharded where the stages' tp degrees differ; the receivers of a scatter-gather then gather
// it in their TP collective task: Task::regather).
void DeviceRunner::send_message(std::uint32_t id) {
  const auto parts = message_sends(g_, run_.layout.first_real, id, member_);
  std::size_t most = 1;
  for (const MessagePart& part : parts) most = std::max(most, part.floats);
  sc_.fit(4 * most, 1, 4 * most);
  if (sc_.failed) return;
  for (const MessagePart& part : parts) {
    const auto to = static_cast<std::size_t>(part.real);
    if (run_.world == nullptr) dev_.copy(sc_.pa, run_.inbox[to], 4 * part.floats);  // into each reader's inbox
    else note(run_.payloads->send(sc_.fa(), part.floats, part.real, static_cast<int>(2 * id + 1)), true);  // the transfer itself
  }
}

// Adam over the device's parameters, in slices of at most 4 M.
void DeviceRunner::run_optimizer() {
  const std::size_t count = run_.adam_params[rep_];
  const std::size_t slice = std::min<std::size_t>(count, std::size_t{1} << 22);
  // The state lives in c, which no compute reads as a 16-bit input (fp32 values there would read
  // as NaN or Inf in bf16 and fp16 and slow nothing but the GEMMs' power).
  sc_.fit(1, 1, 16 * slice);
  if (sc_.failed) return;
  for (std::size_t n = 0; n < count; n += slice) dev_.adam(std::min(slice, count - n), sc_.fc());
  timed(kOptimizerClass);
}

// The exchanges of EP task `id`, in order. Per MoE layer of the unit: dispatch and combine
// (after a forward), their gradients (after a backward) and, under full recompute, the forward's
// pair again. Each an all-to-all of this expert_tp rank's share (1/expert_tp; with expert_tp = tp
// its tp rank's) of the rows its EP rank's tokens send each EP rank (folded, its expert_tp
// group's sequence shards: draw_routing), h wide in the training format, every message padded
// to the busiest pair's (the cost model charges every rank the busiest's load). The task's own
// unit is its predecessors of the same chunk and micro-batch: the compute, or the TP collective
// after it. The hierarchical dispatch over several nodes: each round a network step on the
// rank's rail (each token once per node its experts are on) and a fabric step within its node
// (a token once for each other rank of the node its experts are on), one after the other (DeepEP
// runs them side by side: the measured time is their sum, the prediction their larger); inside
// one node, a token once per rank its experts are on.
std::vector<DeviceRunner::Exchange> DeviceRunner::exchanges_of(std::uint32_t id) const {
  const auto& t = g_.tasks[id];
  const auto& preds = run_.preds;
  bool after_backward = false;
  for (std::uint32_t pr : preds[id]) {
    // Its own unit's tasks (an overlapped one also follows the next unit's compute).
    if (g_.tasks[pr].chunk != t.chunk || g_.tasks[pr].micro_batch != t.micro_batch) continue;
    after_backward = after_backward || g_.tasks[pr].kind == TaskKind::Backward;
    if (g_.tasks[pr].kind == TaskKind::TpCollective)
      for (std::uint32_t pp : preds[pr]) after_backward = after_backward || g_.tasks[pp].kind == TaskKind::Backward;
  }
  const int rounds = after_backward && run_.p.recomputes(workload::RecomputeModule::Moe) ? 4 : 2;
  // The values (4-byte words) of `rows` rows: h wide in the training format, or under
  // fp8_dispatch for a dispatch-way round, h bytes and a 4-byte scale per 128.
  const auto values = [&](std::int64_t rows, bool fp8) {
    const auto r = static_cast<std::size_t>((rows + et_ - 1) / et_);
    const auto h = static_cast<std::size_t>(run_.s.model.hidden);
    return std::max<std::size_t>(1, fp8 ? r * ((h + 3) / 4 + (h + 127) / 128) : r * h / (run_.wide ? 1 : 2));
  };
  std::vector<Exchange> out;
  Communicator* rail = run_.comms.rail_of[real_];
  Communicator* node = run_.comms.node_of[real_];
  for (int l = 0; l < t.layers; ++l) {
    if (!run_.s.model.moe_layer(t.first_layer + l)) continue;  // a dense layer: no all-to-all
    const LayerRouting& rt = routing_of(t, l);
    for (int k = 0; k < rounds; ++k) {
      // Rounds go dispatch-way, combine-way, …: a forward's dispatch, a backward's combine
      // gradient (docs/cost-models.md#fp8-dispatch).
      const bool fp8 = run_.p.fp8_dispatch && k % 2 == 0;
      if (rail != nullptr) {
        out.push_back({rail, values(rt.max_rail_rows, fp8)});
        if (node != nullptr) out.push_back({node, values(rt.max_fanout_rows, fp8)});
      } else {
        // Inside one node the hierarchical (DeepEP) dispatch sends a token once per rank.
        const bool by_rank = run_.p.ep_dispatch == plan::Plan::EpDispatch::Hierarchical;
        out.push_back({epc_, values(by_rank ? rt.max_rank_rows : rt.max_pair_rows, fp8)});
      }
    }
  }
  return out;
}

// The task's exchanges, one after the other; an overlapped one (Task::overlapped) was started
// when its unit ended (launch_exchange) and ran beside the compute since: the task is the wait
// for it, the exposed part.
void DeviceRunner::run_all_to_all(std::uint32_t id) {
  if (g_.tasks[id].overlapped) {
    wait_exchange();
    timed(kAllToAllClass);
    return;
  }
  bool first = true;  // its start is the task's real start (began)
  for (const Exchange& x : exchanges_of(id)) {
    const auto n = static_cast<std::size_t>(x.comm->size());
    sc_.fit(x.per * n * 4, 1, x.per * n * 4);
    if (sc_.failed) break;
    note(x.comm->all_to_all(sc_.fa(), sc_.fc(), x.per), first);
    first = false;
    if (!comm_error_.empty()) break;
  }
  timed(kAllToAllClass);
}

// Starts overlapped task `id`'s exchanges on the device's communication thread, on buffers of
// its own (the compute goes on in the scratch buffers meanwhile). The devices are host memory
// (replay() refuses overlap_ep_comm elsewhere), so plain host buffers serve. One at a time: the
// task is waited for before the next unit's communication, which launches the next.
bool DeviceRunner::launch_exchange(std::uint32_t id) {
  HETSIM_ASSERT(!exchanger_.joinable(), "one overlapped exchange at a time per device");
  auto jobs = exchanges_of(id);
  std::size_t most = 1;
  for (const Exchange& x : jobs) most = std::max(most, x.per * static_cast<std::size_t>(x.comm->size()));
  if (xin_.size() < most) {
    xin_.resize(most);
    xout_.resize(most);
  }
  xerror_.clear();
  try {
    exchanger_ = std::thread([this, jobs = std::move(jobs)] {
      for (const Exchange& x : jobs)
        if (auto r = x.comm->all_to_all(xin_.data(), xout_.data(), x.per); !r) {
          xerror_ = dev_.name() + ": " + r.errors()[0].message;
          return;
        }
    });
  } catch (const std::system_error& e) {
    fail(dev_.name() + ": cannot start the thread of an overlapped all-to-all (" + e.what() + ")" + where(id));
    return false;
  }
  return true;
}

void DeviceRunner::wait_exchange() {
  if (!exchanger_.joinable()) return;
  exchanger_.join();
  if (!xerror_.empty() && comm_error_.empty()) comm_error_ = xerror_;
}

// " in task '…'", for a failure's message (built only then: a replay runs many small tasks).
std::string DeviceRunner::where(std::uint32_t id) const { return " in task '" + schedule::task_name(g_.tasks[id]) + "'"; }

// Ends task `id` (its own block `own`): waits for the device, fails on a device, memory or
// communicator error, keeps the task's activations, tells its successors and records its times.
bool DeviceRunner::finish(std::uint32_t id, void* own) {
  const auto& t = g_.tasks[id];
  dev_.record();
  const auto marks = dev_.resolve();  // waits for the device: the task is done
  std::string why, hint;
  if (const auto broken = dev_.failure(); !broken.empty()) {
    why = dev_.name() + ": " + broken + where(id);
    hint = "the device failed: its results and times are void";
  } else if (sc_.failed) {
    why = dev_.name() + ": no memory for scratch buffers" + where(id);
  } else if (!comm_error_.empty()) {
    why = comm_error_ + where(id);
  }
  if (!why.empty()) {
    if (own != nullptr) dev_.release(own, static_cast<std::size_t>(t.alloc_bytes));
    fail(why, hint);
    return false;
  }
  if (!hold(id, own)) return false;
  for (std::int64_t e = marks.back() - step_.t0, cur = step_.last_end.load();
       e > cur && !step_.last_end.compare_exchange_weak(cur, e);) {
  }
  // The successors first, then the bookkeeping (read only once every thread has joined).
  const bool notified = notify(id);
  if (member_ == 0) record_times(id, marks);
  return notified;
}

// The task's block joins what its (chunk, micro-batch) holds, less what it frees.
bool DeviceRunner::hold(std::uint32_t id, void* own) {
  const auto& t = g_.tasks[id];
  if (t.alloc_bytes <= 0 && t.free_bytes <= 0) return true;
  auto& [ptr, n] = held_[{t.chunk, t.micro_batch}];
  const auto keep = static_cast<std::int64_t>(n) + t.alloc_bytes - t.free_bytes;
  if (own != nullptr) dev_.release(own, static_cast<std::size_t>(t.alloc_bytes));
  if (ptr != nullptr) dev_.release(ptr, n);
  ptr = nullptr;
  n = 0;
  if (keep > 0) {
    auto a = dev_.allocate(static_cast<std::size_t>(keep));
    if (!a) {
      fail(a.errors()[0].message + where(id), a.errors()[0].hint);
      return false;
    }
    ptr = *a;
    n = static_cast<std::size_t>(keep);
  }
  return true;
}

void DeviceRunner::record_times(std::uint32_t id, const std::vector<std::int64_t>& marks) {
  // (≥ 0: a process may read rank 0's origin a little after its clock passed it.)
  auto& start = step_.start[id];
  start = std::max<std::int64_t>(0, marks.front() - step_.t0);
  if (began_ >= 0) start = std::max(start, began_ - step_.t0);
  step_.end[id] = std::max(start, marks.back() - step_.t0);
  std::array<std::int64_t, kClasses> sum{};
  for (std::size_t k = 0; k < mark_class_.size(); ++k)
    sum[static_cast<std::size_t>(mark_class_[k])] += marks[k + 1] - marks[k];
  for (int c = 0; c < kClasses; ++c)
    if (sum[static_cast<std::size_t>(c)] > 0) step_.parts[id].emplace_back(class_name(c), sum[static_cast<std::size_t>(c)]);
}

// Marks the task done for this process's waiters and, under mpirun, sends its token to every
// remote member it feeds (a message's payload is its token).
bool DeviceRunner::notify(std::uint32_t id) {
  step_.flag(id, member_) = true;
  step_.flag(id, member_).notify_all();
  if (run_.world == nullptr || is_message(g_.tasks[id].kind)) return true;
  for (int to : remote_successors(g_, run_.layout.first_real, id, member_)) {
    const float token = 1;
    if (auto r = run_.tokens->send(&token, 1, to, static_cast<int>(2 * id)); !r) {
      fail(dev_.name() + ": " + r.errors()[0].message + where(id));
      return false;
    }
  }
  return true;
}

void DeviceRunner::fail(const std::string& why, const std::string& hint) {
  if (run_.world != nullptr)
    // MPI cannot drop a member from its collectives: the front end says what failed and ends the
    // run (rank 0 has handed the steps measured so far to on_step).
    run_.o.on_fatal(Diagnostic{{}, "", "step " + std::to_string(step_.step) + ": " + (why.empty() ? "failed" : why),
                               hint, ErrorKind::Environment});
  if (!why.empty()) {
    step_.error[real_] = {why, hint};
    int none = -1;
    step_.first_failed.compare_exchange_strong(none, static_cast<int>(real_));
  }
  step_.failed = true;
  tpc_.leave();
  if (etpc_ != nullptr) etpc_->leave();
  for (auto& [gi, c] : dpcs_) c->leave();
  // The groups that the dense ones do not cover: the folded experts' data-parallel groups and
  // the hierarchical dispatch's rail and node groups (a peer waiting there would wait for good).
  for (auto& [gi, c] : run_.comms.edp_of[real_]) c->leave();
  for (auto& [key, block] : held_)
    if (block.first != nullptr) dev_.release(block.first, block.second);
  held_.clear();
  if (base_ptr_ != nullptr) dev_.release(base_ptr_, static_cast<std::size_t>(info_.baseline_bytes));
  for (std::uint32_t rest : run_.order[rep_]) {  // let the other devices finish their waits
    step_.flag(rest, member_) = true;
    step_.flag(rest, member_).notify_all();
  }
  // An overlapped exchange in flight uses the expert groups: it ends (its peers finish it or
  // leave) before this member leaves them, which must not happen inside its own call.
  wait_exchange();
  if (epc_ != nullptr) epc_->leave();
  if (Communicator* rail = run_.comms.rail_of[real_]; rail != nullptr) rail->leave();
  if (Communicator* node = run_.comms.node_of[real_]; node != nullptr) node->leave();
}

DeviceRunner::~DeviceRunner() {
  if (exchanger_.joinable()) exchanger_.join();
}

}  // namespace hetsim::exec
