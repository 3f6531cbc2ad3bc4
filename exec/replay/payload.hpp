#pragma once
// What the replay moves for each communication task, read from the task (schedule::CommCall):
// the buffers of its collectives and pipeline messages, in fp32 values (the replay carries every
// payload as fp32 values: 16-bit data as half as many). The replay sizes its calls by these
// functions and derives no size of its own, so it moves the bytes the cost model priced and the
// SimGrid flows move (tests/exec/payload_test.cpp compares them).

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "sim/schedule/task_graph.hpp"

namespace hetsim::exec {

/// fp32 values that hold `bytes` bytes (rounded to the nearest; at least 1).
[[nodiscard]] std::size_t payload_floats(double bytes);

/// One part of a pipeline message as the replay moves it: the real device at its other end (the
/// receiver's where it sends, the sender's where it receives), its member of its folded device,
/// and the values (payload_floats of schedule::Message::bytes; 0 for a part of no bytes, which
/// only orders the receiver after the sender).
struct MessagePart {
  int real = 0;
  int member = 0;
  std::size_t floats = 0;
};

/// What member `member` of pipeline message task `send`'s device sends, part by part
/// (schedule::messages_from); `first_real` numbers the real devices (schedule::Unfolding::first).
[[nodiscard]] std::vector<MessagePart> message_sends(const schedule::TaskGraph& g, const std::vector<int>& first_real,
                                                     std::uint32_t send, int member);
/// What member `member` of the device pipeline message task `send` goes to
/// (schedule::message_receiver) receives from it, part by part (schedule::messages_to).
[[nodiscard]] std::vector<MessagePart> message_receipts(const schedule::TaskGraph& g, const std::vector<int>& first_real,
                                                        std::uint32_t send, int member);

/// The values of one chunk's collective for data-parallel task `t`'s call `call`, the layer cut
/// into `chunks` (schedule::dp_chunk_bytes), over a communicator of `ranks` members: rounded up
/// to a multiple of `ranks` (each member's shard whole).
[[nodiscard]] std::size_t dp_call_floats(const schedule::TaskGraph& g, std::uint32_t t, const schedule::CommCall& call,
                                         long long chunks, int ranks);

/// The values of data-parallel task `t`'s routed-experts call `call` where the collective folds
/// its experts, over an expert-data-parallel group of `ranks` members (schedule::expert_dp_bytes,
/// rounded up to a multiple of `ranks`).
[[nodiscard]] std::size_t expert_dp_floats(const schedule::TaskGraph& g, std::uint32_t t, const schedule::CommCall& call,
                                           int ranks);

/// One collective a TP task runs: `times` calls of `kind` over a buffer of `floats` values, over
/// groups of `ranks` ranks (the tp ranks, or a MoE block's expert_tp: CommCall::ranks).
struct TpRun {
  cost::Collective kind = cost::Collective::AllReduce;
  std::size_t floats = 0;
  int times = 0;
  int ranks = 1;
};

/// Fractional call counts a device's TP tasks carry over to its next TP task (CommCall::count:
/// half the embedding's collective with each pass, a stage's mean over MoE and dense layers), so
/// that a step runs each call as often as the cost model priced it, rounded down. One per device
/// and step, used in the device's task order.
using TpOwed = std::map<std::pair<cost::Collective, double>, double>;

/// The collectives TP task `t` runs, its calls in order, over groups of `tp` ranks or of their
/// CommCall::ranks (each buffer a multiple of its group's ranks); `owed` carries the fractions.
[[nodiscard]] std::vector<TpRun> tp_runs(const schedule::TaskGraph& g, std::uint32_t t, int tp, TpOwed& owed);

}  // namespace hetsim::exec
