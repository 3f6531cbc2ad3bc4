#include "exec/replay/payload.hpp"

#include "sim/schedule/unfold.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::exec {
namespace {

std::size_t round_up(std::size_t n, std::size_t r) { return std::max<std::size_t>(r, (n + r - 1) / r * r); }

}  // namespace

std::size_t payload_floats(double bytes) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(std::max(0.0, bytes) / 4.0)));
}

namespace {

std::size_t message_part_floats(double bytes) { return bytes > 0 ? payload_floats(bytes) : 0; }

}  // namespace

std::vector<MessagePart> message_sends(const schedule::TaskGraph& g, const std::vector<int>& first_real,
                                       std::uint32_t send, int member) {
  std::vector<MessagePart> out;
  for (const auto& m : schedule::messages_from(g, send, member))
    out.push_back({first_real[m.to.device] + m.to.member, m.to.member, message_part_floats(m.bytes)});
  return out;
}

std::vector<MessagePart> message_receipts(const schedule::TaskGraph& g, const std::vector<int>& first_real,
                                          std::uint32_t send, int member) {
  std::vector<MessagePart> out;
  for (const auto& m : schedule::messages_to(g, send, member))
    out.push_back({first_real[m.from.device] + m.from.member, m.from.member, message_part_floats(m.bytes)});
  return out;
}

std::size_t dp_call_floats(const schedule::TaskGraph& g, std::uint32_t t, const schedule::CommCall& call,
                           long long chunks, int ranks) {
  return round_up(payload_floats(schedule::dp_chunk_bytes(g, t, call, chunks)), static_cast<std::size_t>(std::max(1, ranks)));
}

std::size_t expert_dp_floats(const schedule::TaskGraph& g, std::uint32_t t, const schedule::CommCall& call, int ranks) {
  return round_up(payload_floats(schedule::expert_dp_bytes(g, t, call)), static_cast<std::size_t>(std::max(1, ranks)));
}

std::vector<TpRun> tp_runs(const schedule::TaskGraph& g, std::uint32_t t, int tp, TpOwed& owed) {
  std::vector<TpRun> runs;
  for (const auto& call : g.calls_of(t)) {
    double& left = owed[{call.kind, call.bytes}];
    left += call.count;
    // (A count summed from fractions may fall a hair short of a whole one.)
    const int times = static_cast<int>(std::floor(left + 1e-9));
    left -= times;
    const int ranks = std::max(1, call.ranks > 0 ? call.ranks : tp);
    if (times > 0) runs.push_back({call.kind, round_up(payload_floats(call.bytes), static_cast<std::size_t>(ranks)), times, ranks});
  }
  return runs;
}

}  // namespace hetsim::exec
