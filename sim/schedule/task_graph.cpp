#include "sim/schedule/task_graph.hpp"

#include <algorithm>
#include <numeric>

#include "models/base/assert.hpp"

namespace hetsim::schedule {

std::string_view stream_name(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::TpComm: return "tp comm";
    case Stream::PpComm: return "pp send/recv";
    case Stream::DpComm: return "dp comm";
    case Stream::EpComm: return "ep comm";
    case Stream::DpGather: return "dp gather";
  }
  return "?";
}

std::string_view task_kind_name(TaskKind k) {
  switch (k) {
    case TaskKind::Forward: return "forward";
    case TaskKind::Backward: return "backward";
    case TaskKind::Recompute: return "recompute";
    case TaskKind::Optimizer: return "optimizer";
    case TaskKind::TpCollective: return "tp collective";
    case TaskKind::SendActivation: return "send activation";
    case TaskKind::SendGradient: return "send gradient";
    case TaskKind::GradReduce: return "gradient reduce";
    case TaskKind::ParamGather: return "parameter gather";
    case TaskKind::EpAllToAll: return "ep all-to-all";
  }
  return "?";
}

double TaskGraph::unfolded_size() const {
  double n = 0;
  for (const auto& t : tasks) n += devices[t.device].count;
  return n;
}

std::vector<std::uint32_t> TaskGraph::members_of(std::uint32_t t) const {
  if (tasks[t].collective == kNoCollective) return {t};
  return collectives[tasks[t].collective];
}

double pipeline_share(int from_tp, int to_tp, int from, int to, bool split) {
  if (!split) return to % from_tp == from ? 1.0 : 0.0;
  const long long l = std::lcm(static_cast<long long>(from_tp), static_cast<long long>(to_tp));
  const long long a0 = from * l / from_tp, a1 = (from + 1) * l / from_tp;
  const long long b0 = to * l / to_tp, b1 = (to + 1) * l / to_tp;
  const long long overlap = std::max(0LL, std::min(a1, b1) - std::max(a0, b0));
  return static_cast<double>(overlap) / static_cast<double>(l);
}

double pipeline_message_bytes(const TaskGraph& g, std::uint32_t t, int from_tp, int to_tp, int from, int to) {
  double whole = 0;
  for (const auto& c : g.calls_of(t)) whole += c.bytes * c.count;
  return whole * pipeline_share(from_tp, to_tp, from, to, g.tasks[t].split);
}

double dp_chunk_bytes(const TaskGraph& g, std::uint32_t t, const CommCall& call, long long chunks) {
  double most = 0;
  for (std::uint32_t m : g.members_of(t)) {
    double own = 0;
    for (const auto& c : g.calls_of(m))
      if (c.kind == call.kind && c.experts == call.experts) own += c.bytes * c.count;
    const DeviceRep& d = g.devices[g.tasks[m].device];
    const double units = g.tasks[m].across_groups ? static_cast<double>(dp_pieces(d)) : d.tp;
    most = std::max(most, own * units / static_cast<double>(chunks));
  }
  return most;
}

double TaskGraph::payload_bytes(std::uint32_t t) const {
  double b = 0;
  for (const auto& c : calls_of(t)) b += c.bytes * c.count;
  return b;
}

std::vector<int> pipeline_feeders(int from_tp, int to_tp, int rank, bool split) {
  std::vector<int> out;
  for (int j = 0; j < from_tp; ++j)
    if (pipeline_share(from_tp, to_tp, j, rank, split) > 0) out.push_back(j);
  return out;
}

long long TaskGraph::dp_chunks(std::uint32_t t) const {
  long long chunks = 1;
  for (std::uint32_t m : members_of(t)) chunks = std::lcm(chunks, static_cast<long long>(devices[tasks[m].device].tp));
  return chunks;
}

void finalize(TaskGraph& g, std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges) {
  const auto n = static_cast<std::uint32_t>(g.tasks.size());
  g.succ_begin.assign(n + 1, 0);
  g.pred_count.assign(n, 0);
  for (const auto& [a, b] : edges) {
    HETSIM_ASSERT(a < n && b < n && a != b, "bad task edge");
    ++g.succ_begin[a + 1];
    ++g.pred_count[b];
  }
  for (std::uint32_t i = 0; i < n; ++i) g.succ_begin[i + 1] += g.succ_begin[i];
  g.succ.assign(edges.size(), 0);
  std::vector<std::uint32_t> fill(g.succ_begin.begin(), g.succ_begin.end() - 1);
  for (const auto& [a, b] : edges) g.succ[fill[a]++] = b;
}

std::string task_name(const Task& t) {
  std::string layers = "L" + std::to_string(t.first_layer);
  if (t.layers > 1) layers += "-" + std::to_string(t.first_layer + t.layers - 1);
  const std::string mb = t.micro_batch >= 0 ? " mb" + std::to_string(t.micro_batch) : "";
  switch (t.kind) {
    case TaskKind::Forward: return "F " + layers + mb;
    case TaskKind::Backward: return "B " + layers + mb;
    case TaskKind::Recompute: return "R " + layers + mb;
    case TaskKind::Optimizer: return "optimizer";
    case TaskKind::TpCollective: return "tp " + layers + mb;
    case TaskKind::SendActivation: return "send act " + layers + mb;
    case TaskKind::SendGradient: return "send grad " + layers + mb;
    case TaskKind::GradReduce: return (t.across_groups ? "grad all-reduce across groups " : "grad reduce ") + layers;
    case TaskKind::ParamGather: return "param gather " + layers;
    case TaskKind::EpAllToAll: return "ep a2a " + layers + mb;
  }
  return "?";
}

}  // namespace hetsim::schedule
