#include "sim/schedule/detail/builder.hpp"

#include <algorithm>

#include "sim/schedule/schedule.hpp"

namespace hetsim::schedule::detail {

namespace {

// Appends `from`'s calls to `to`, each made `times` times as often.
void append(std::vector<CommCall>& to, const std::vector<CommCall>& from, double times) {
  for (CommCall c : from) {
    c.count *= times;
    to.push_back(c);
  }
}

}  // namespace

void Builder::set_calls(Task& t, std::vector<CommCall> calls) {
  std::erase_if(calls, [](const CommCall& c) { return !(c.count > 0 && c.bytes > 0); });
  t.calls_count = static_cast<std::uint32_t>(calls.size());
  if (calls.empty()) {
    t.calls_begin = 0;
    return;
  }
  auto [it, fresh] = call_sets_.try_emplace(calls, static_cast<std::uint32_t>(g_.calls.size()));
  if (fresh) g_.calls.insert(g_.calls.end(), calls.begin(), calls.end());
  t.calls_begin = it->second;
}

std::uint32_t Builder::list_of(const std::shared_ptr<const std::vector<workload::Op>>& ops) {
  auto [it, fresh] = list_index_.try_emplace(ops.get(), static_cast<std::uint32_t>(g_.op_lists.size()));
  if (fresh) g_.op_lists.push_back(*ops);
  return it->second;
}

void Builder::set_ops(Task& t, const analytic::StageCost& c, int layers, bool emb, bool head) {
  std::vector<OpUse> uses;
  const double share = c.dense_layer_ops ? c.moe_share : 1.0;
  if (layers > 0 && c.layer_ops) uses.push_back({list_of(c.layer_ops), layers * share, OpRole::Layer});
  if (layers > 0 && c.dense_layer_ops) uses.push_back({list_of(c.dense_layer_ops), layers * (1 - share), OpRole::DenseLayer});
  if (emb && c.emb_ops) uses.push_back({list_of(c.emb_ops), 1, OpRole::Embedding});
  if (head && c.head_ops) uses.push_back({list_of(c.head_ops), 1, OpRole::Head});
  t.ops_count = static_cast<std::uint32_t>(uses.size());
  if (uses.empty()) return;
  auto [it, fresh] = use_sets_.try_emplace(uses, static_cast<std::uint32_t>(g_.op_uses.size()));
  if (fresh) g_.op_uses.insert(g_.op_uses.end(), uses.begin(), uses.end());
  t.ops_begin = it->second;
}

std::uint32_t Builder::add(Task t) {
  g_.tasks.push_back(t);
  return static_cast<std::uint32_t>(g_.tasks.size() - 1);
}

void Builder::edge(std::uint32_t a, std::uint32_t b) {
  if (a != kNone && b != kNone && a != b) edges_.emplace_back(a, b);
}

std::uint32_t Builder::push(Task t) {
  const std::uint32_t id = add(t);
  auto& dev = state_[t.device];
  edge(dev.last[static_cast<int>(t.stream)], id);
  dev.last[static_cast<int>(t.stream)] = id;
  if (t.stream == Stream::Compute) {
    edge(dev.blocking, id);
    dev.blocking = id;
  }
  return id;
}

std::uint32_t Builder::push_blocking(Task t) {
  const std::uint32_t id = push(t);
  edge(state_[t.device].blocking, id);
  state_[t.device].blocking = id;
  return id;
}

std::uint32_t Builder::push_blocking(const Task& unit, Stream stream, TaskKind kind, Duration d,
                                     std::vector<CommCall> calls, cost::Algorithm algorithm, bool regather) {
  Task t = unit;
  set_calls(t, std::move(calls));
  t.stream = stream;
  t.kind = kind;
  t.duration = to_ns(d);
  t.algorithm = algorithm;
  t.regather = regather;
  t.split = (kind == TaskKind::SendActivation || kind == TaskKind::SendGradient) &&
            (p_.sequence_parallel || s_.training.pipeline_scatter_gather);
  return push_blocking(t);
}

void Builder::push_unit_comm(const Task& unit, UnitIds& ids, Duration tp, Duration both, cost::Algorithm algorithm,
                             bool regather, std::vector<CommCall> tp_calls, std::vector<CommCall> ep_calls,
                             bool overlapped) {
  const SimTime total = to_ns(both);
  const SimTime tp_ns = std::min(total, to_ns(tp));
  if (tp_ns > 0) {
    Task t = unit;
    t.stream = Stream::TpComm;
    t.kind = TaskKind::TpCollective;
    t.duration = tp_ns;
    t.algorithm = algorithm;
    t.regather = regather;
    set_calls(t, std::move(tp_calls));
    ids.done = push_blocking(t);
  }
  if (total - tp_ns > 0) {
    Task t = unit;
    t.stream = Stream::EpComm;
    t.kind = TaskKind::EpAllToAll;
    t.duration = total - tp_ns;
    set_calls(t, std::move(ep_calls));
    if (overlapped) {
      t.overlapped = true;
      const std::uint32_t id = push(t);
      edge(ids.done, id);  // its unit's compute, or the TP collective after it
      ids.done = id;
    } else {
      ids.done = push_blocking(t);
    }
  }
}

void Builder::settle_overlapped(std::uint32_t dev, std::uint32_t& pending) {
  if (pending == kNone) return;
  edge(state_[dev].last[0], pending);
  state_[dev].blocking = pending;
  pending = kNone;
}

std::vector<CommCall> Builder::unit_calls(std::initializer_list<const std::vector<CommCall>*> per_layer, int layers) {
  std::vector<CommCall> calls;
  for (const auto* l : per_layer) append(calls, *l, layers);
  return calls;
}

std::vector<CommCall> Builder::unit_tp_calls(const analytic::StageCost& c, const Chunk& ch,
                                             std::initializer_list<const std::vector<CommCall>*> per_layer,
                                             bool regather) {
  std::vector<CommCall> calls;
  if (regather) calls.push_back(c.regather_call);  // first: the unit reads what it gathers
  append(calls, unit_calls(per_layer, ch.layers), 1);
  if (ch.has_emb) append(calls, c.emb_tp_calls, 0.5);
  if (ch.has_head) append(calls, c.head_tp_calls, 0.5);
  return calls;
}

std::uint32_t Builder::emit_compute(const Task& base, TaskKind kind, Duration per_layer, Duration emb, Duration head,
                                    bool split, bool reverse, std::int64_t alloc, std::int64_t free,
                                    std::vector<std::uint32_t>& layer_tasks, const analytic::StageCost& c,
                                    const Chunk& ch) {
  Task t = base;
  t.kind = kind;
  if (!split) {
    set_ops(t, c, base.layers, ch.has_emb, ch.has_head);
    t.duration = to_ns(per_layer * base.layers + emb + head);
    t.alloc_bytes = alloc;
    t.free_bytes = free;
    return push(t);
  }
  std::uint32_t first = kNone;
  layer_tasks.clear();
  for (int i = 0; i < base.layers; ++i) {
    const int l = reverse ? base.layers - 1 - i : i;
    Task lt = base;
    lt.kind = kind;
    lt.first_layer = base.first_layer + l;
    lt.layers = 1;
    lt.duration = to_ns(per_layer + (l == 0 ? emb : Duration{0}) + (l == base.layers - 1 ? head : Duration{0}));
    set_ops(lt, c, 1, l == 0 && ch.has_emb, l == base.layers - 1 && ch.has_head);
    lt.alloc_bytes = i == 0 ? alloc : 0;
    lt.free_bytes = i == base.layers - 1 ? free : 0;
    const std::uint32_t id = push(lt);
    if (first == kNone) first = id;
    layer_tasks.push_back(id);
  }
  return first;
}

std::uint32_t Builder::emit_layerwise_backward(const Task& base, const analytic::StageCost& c, const Chunk& ch,
                                               std::int64_t alloc, std::int64_t free,
                                               std::vector<std::uint32_t>& ran) {
  std::uint32_t first = kNone, last = kNone;
  for (int i = 0; i < ch.layers; ++i) {
    const int l = ch.layers - 1 - i;
    Task lt = base;
    lt.first_layer = base.first_layer + l;
    lt.layers = 1;
    if (to_ns(c.layer_recompute) > 0) {
      lt.kind = TaskKind::Recompute;
      lt.duration = to_ns(c.layer_recompute);
      set_ops(lt, c, 1, false, false);
      last = push(lt);
      ran.push_back(last);
      if (first == kNone) first = last;
    }
    lt.kind = TaskKind::Backward;
    lt.duration = to_ns(c.layer_bwd + (l == 0 && ch.has_emb ? c.emb_bwd : Duration{0}) +
                        (l == ch.layers - 1 && ch.has_head ? c.head_bwd : Duration{0}));
    set_ops(lt, c, 1, l == 0 && ch.has_emb, l == ch.layers - 1 && ch.has_head);
    last = push(lt);
    ran.push_back(last);
    if (first == kNone) first = last;
  }
  if (first == kNone) return kNone;  // no layers (validation refuses such stages)
  g_.tasks[first].alloc_bytes = alloc;
  g_.tasks[last].free_bytes = free;
  return first;
}

std::uint32_t Builder::dp_task(std::uint32_t dev, const analytic::StageCost& c, const Chunk& ch, int k, int l,
                               TaskKind kind, bool cross, int mb) {
  double params = c.params_layer;
  if (ch.has_emb && l == 0) params += c.params_emb;
  if (ch.has_head && l == ch.layers - 1) params += c.params_head;
  const double share = c.params > 0 ? params / c.params : 0;
  Task t;
  t.device = dev;
  t.stream = kind == TaskKind::ParamGather ? Stream::DpGather : Stream::DpComm;
  t.kind = kind;
  t.first_layer = ch.first_layer + l;
  t.layers = 1;
  t.chunk = k;
  t.duration = to_ns((cross ? c.dp_cross : kind == TaskKind::GradReduce ? c.dp_reduce : c.dp_gather) * share);
  t.algorithm = cross ? c.dp_cross_algorithm
                      : kind == TaskKind::GradReduce ? c.dp_reduce_algorithm : c.dp_gather_algorithm;
  t.across_groups = cross;
  // The layer's share of the stage's buffers.
  std::vector<CommCall> calls = cross ? c.dp_cross_calls : kind == TaskKind::GradReduce ? c.dp_reduce_calls : c.dp_gather_calls;
  for (auto& call : calls) call.bytes *= share;
  set_calls(t, std::move(calls));
  if (mb >= 0) t.micro_batch = mb;
  const std::uint32_t id = push(t);
  if (mb < 0 && (cross || !p_.hybrid_sharding())) dp_members_[{static_cast<int>(kind), t.first_layer}].push_back(id);
  return id;
}

Duration Builder::send_cost(const std::vector<analytic::StageCost>& costs, int from, int to) {
  const int lo = std::min(from, to);
  const int hi = std::max(from, to);
  if (hi == lo + 1) return costs[lo].send_next;
  return costs[hi].send_wrap;  // the interleaved wrap-around between the last stage and the first
}

void Builder::link_dp_collectives() {
  if (p_.groups.size() <= 1) return;
  for (const auto& [key, members] : dp_members_) {
    if (members.size() <= 1) continue;
    const auto id = static_cast<std::uint32_t>(g_.collectives.size());
    // One collective ends for all its members at once: it lasts as long as its slowest side.
    SimTime longest = 0;
    for (std::uint32_t t : members) longest = std::max(longest, g_.tasks[t].duration);
    for (std::uint32_t t : members) {
      g_.tasks[t].collective = id;
      g_.tasks[t].duration = longest;
    }
    g_.collectives.push_back(members);
  }
}

}  // namespace hetsim::schedule::detail
