#include "sim/schedule/unfold.hpp"

#include "models/base/assert.hpp"

#include <algorithm>
#include <numeric>

namespace hetsim::schedule {

Unfolding unfold(const TaskGraph& g) {
  Unfolding out;
  out.first.reserve(g.devices.size());
  for (const auto& d : g.devices) {
    out.first.push_back(out.count);
    out.count += d.count;
  }
  return out;
}

std::vector<std::vector<Member>> blocks_of(const TaskGraph& g, std::uint32_t d, int n) {
  std::vector<std::vector<Member>> out;
  for (int b = 0; b + n <= g.devices[d].count; b += n) {
    auto& block = out.emplace_back();
    for (int k = 0; k < n; ++k) block.push_back({d, b + k});
  }
  return out;
}

std::vector<std::vector<Member>> ep_groups(const TaskGraph& g, std::uint32_t d) {
  const auto& dev = g.devices[d];
  const int ep = std::max(1, dev.ep), et = dev.expert_tp_or_tp();
  std::vector<std::vector<Member>> out;
  for (int b = 0; b + ep * et <= dev.count; b += ep * et)
    for (int x = 0; x < et; ++x) {
      auto& group = out.emplace_back();
      for (int j = 0; j < ep; ++j) group.push_back({d, b + j * et + x});
    }
  return out;
}

std::vector<Member> dp_chunk_members(const TaskGraph& g, std::span<const std::uint32_t> tasks, long long chunk,
                                     long long chunks, int ep, int q) {
  std::vector<Member> out;
  for (std::uint32_t m : tasks) {
    const auto d = g.tasks[m].device;
    const auto& dev = g.devices[d];
    const int holder = dp_chunk_holder(chunk, dev.tp, chunks);
    for (int r = 0; r < dev.replicas; ++r)
      if (r % ep == q) out.push_back({d, r * dev.tp + holder});
  }
  return out;
}

bool folds_experts(const TaskGraph& g, std::span<const std::uint32_t> tasks) {
  return std::any_of(tasks.begin(), tasks.end(), [&](std::uint32_t m) {
    const auto& dev = g.devices[g.tasks[m].device];
    return dev.expert_tp_or_tp() < dev.tp;
  });
}

bool folds_experts(const TaskGraph& g) {
  return std::any_of(g.devices.begin(), g.devices.end(),
                     [](const DeviceRep& d) { return d.expert_tp_or_tp() < d.tp; });
}

std::vector<std::vector<Member>> expert_dp_groups(const TaskGraph& g, std::span<const std::uint32_t> tasks) {
  std::vector<std::vector<Member>> out;
  for (std::uint32_t m : tasks) {
    const auto d = g.tasks[m].device;
    const auto& dev = g.devices[d];
    const int block = std::max(1, dev.ep) * dev.expert_tp_or_tp();
    HETSIM_ASSERT(out.empty() || static_cast<int>(out.size()) == block,
                  "expert_dp_groups: the collective's devices share expert_tp · ep");
    out.resize(static_cast<std::size_t>(block));
    for (int b = 0; b + block <= dev.count; b += block)
      for (int o = 0; o < block; ++o) out[static_cast<std::size_t>(o)].push_back({d, b + o});
  }
  return out;
}

double expert_dp_bytes(const TaskGraph& g, std::uint32_t t, const CommCall& call) {
  double most = 0;
  for (std::uint32_t m : g.members_of(t)) {
    double own = 0;
    for (const auto& c : g.calls_of(m))
      if (c.kind == call.kind && c.experts == call.experts) own += c.bytes * c.count;
    most = std::max(most, own);
  }
  return most;
}

long long dp_piece_chunks(const TaskGraph& g, std::span<const std::uint32_t> tasks) {
  long long out = 1;
  for (std::uint32_t m : tasks) out = std::lcm(out, dp_pieces(g.devices[g.tasks[m].device]));
  return out;
}

std::vector<Member> dp_piece_members(const TaskGraph& g, std::span<const std::uint32_t> tasks, long long chunk,
                                     long long chunks) {
  std::vector<Member> out;
  for (std::uint32_t m : tasks) {
    const auto d = g.tasks[m].device;
    out.push_back({d, dp_piece_holder(chunk, chunks, g.devices[d])});
  }
  return out;
}

std::uint32_t message_receiver(const TaskGraph& g, std::uint32_t t) {
  const auto own = g.tasks[t].device;
  for (std::uint32_t k = g.succ_begin[t]; k < g.succ_begin[t + 1]; ++k)
    if (const auto d = g.tasks[g.succ[k]].device; d != own) return d;
  return own;
}

namespace {

// The part sender rank `from` of replica `replica` sends receiver rank `to` of the same replica.
Message message_part(const TaskGraph& g, std::uint32_t t, std::uint32_t to_device, int replica, int from, int to) {
  const auto& s = g.devices[g.tasks[t].device];
  const auto& r = g.devices[to_device];
  return {{g.tasks[t].device, replica * s.tp + from}, {to_device, replica * r.tp + to},
          pipeline_message_bytes(g, t, s.tp, r.tp, from, to)};
}

}  // namespace

std::vector<Message> messages_from(const TaskGraph& g, std::uint32_t t, int member) {
  const auto& s = g.devices[g.tasks[t].device];
  const auto to = message_receiver(g, t);
  if (to == g.tasks[t].device) return {};
  const auto& r = g.devices[to];
  HETSIM_ASSERT(r.replicas == s.replicas, "a pipeline message between devices of different replica counts");
  const int j = member % s.tp;
  std::vector<Message> out;
  for (int k = 0; k < r.tp; ++k)
    if (pipeline_share(s.tp, r.tp, j, k, g.tasks[t].split) > 0) out.push_back(message_part(g, t, to, member / s.tp, j, k));
  return out;
}

std::vector<Message> messages_to(const TaskGraph& g, std::uint32_t t, int member) {
  const auto& s = g.devices[g.tasks[t].device];
  const auto to = message_receiver(g, t);
  if (to == g.tasks[t].device) return {};
  const auto& r = g.devices[to];
  HETSIM_ASSERT(r.replicas == s.replicas, "a pipeline message between devices of different replica counts");
  std::vector<Message> out;
  for (int j : pipeline_feeders(s.tp, r.tp, member % r.tp, g.tasks[t].split))
    out.push_back(message_part(g, t, to, member / r.tp, j, member % r.tp));
  return out;
}

std::vector<Message> pipeline_messages(const TaskGraph& g, std::uint32_t t) {
  std::vector<Message> out;
  for (int m = 0; m < g.devices[g.tasks[t].device].count; ++m) {
    auto part = messages_from(g, t, m);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

}  // namespace hetsim::schedule
