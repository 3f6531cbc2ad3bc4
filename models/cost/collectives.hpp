#pragma once
// Collective communication cost: alpha-beta models of ring, tree and hierarchical algorithms
// over the links a group actually spans. Formulas and sources: docs/cost-models.md#collectives.

#include <algorithm>
#include <compare>
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/cost/breakdown.hpp"
#include "models/hw/device.hpp"

namespace hetsim::cost {

enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, SendRecv };
enum class Algorithm : std::uint8_t { Auto, Ring, Tree, Hierarchical };
[[nodiscard]] std::string_view collective_name(Collective c);
[[nodiscard]] std::string_view algorithm_name(Algorithm a);

/// One collective call of a communication task, as the cost model priced it (sim/analytic/
/// stage_cost.cpp prices the call and records it; the schedule hands it to its tasks; the SimGrid
/// flows and the executor's replay run it, deriving no size of their own; docs/simulation.md).
struct CommCall {
  Collective kind = Collective::AllReduce;
  /// The buffer, per member rank, as cost::collective_time counts it (the reduced vector of an
  /// all-reduce, the gathered output of an all-gather, the input of a reduce-scatter, the send
  /// buffer of an all-to-all). A pipeline message (SendRecv): the micro-batch's whole activation
  /// (or gradient), of which each sender rank sends each receiver rank its share.
  double bytes = 0;
  /// How many times the task makes the call: fractional where the cost model prices a mean (a
  /// stage's MoE and dense layers, moe_share; the embedding's and head's collective, half of it
  /// with the forward and half with the backward).
  double count = 1;
  /// The ranks it runs over: 0, the task's whole group (a TP collective's tp ranks, a DP
  /// collective's replicas, an EP group); else a TP collective over blocks of this many
  /// consecutive ranks (the MoE block's expert_tp group, when it is below tp).
  int ranks = 0;
  /// A data-parallel call of the routed experts' parameters, among the members of the DP group
  /// that hold the same experts (replica mod ep alike; where the stage folds its experts,
  /// expert_tp below tp, over the expert-data-parallel group, schedule::expert_dp_groups).
  bool experts = false;
  /// The share of the call's time the task's duration holds: 1 for a blocking call; below 1 for
  /// a TP collective pipelined with its GEMM or an EP all-to-all hidden behind another
  /// micro-batch (its exposed time over its whole time). The SimGrid flows put this share of the
  /// bytes on the wire (the rest runs hidden behind compute, which that engine does not model).
  double exposed = 1;
  auto operator<=>(const CommCall&) const = default;
};

/// One side of a group's links: bandwidth actually achieved per rank, one direction, and the
/// per-step latency.
struct LinkCost {
  BytesPerSec bandwidth;
  Duration latency;
  Duration call;  ///< fixed cost of one collective call over this link
  /// A full-mesh fabric's rate to one peer (hw::LinkSpec::per_peer, as effective as
  /// `bandwidth`); 0: switched. Inside a node a rank then reaches min(bandwidth, peers ·
  /// per_peer), peers = its group's other ranks there (docs/cost-models.md#full-mesh-fabrics).
  BytesPerSec per_peer{0};
  /// All-to-all traffic's rate as a share of `bandwidth` (hw::LinkSpec::all_to_all_efficiency
  /// over its efficiency); 1: as rings.
  double all_to_all = 1;
  /// hw::LinkSpec::peer_latency: an all-to-all's cost per peer when its peers' messages are in
  /// flight together (then `latency` once); 0: `latency` per peer.
  Duration peer_latency{0};
  /// hw::LinkSpec::groups of the fabric: collectives measured over groups inside one node, which
  /// replace the ring formula there; nullptr (or empty): none. Points into the link spec, which
  /// outlives the estimate that prices with it.
  const std::vector<hw::GroupPoint>* groups = nullptr;

  /// The bandwidth a rank exchanging with `peers` others of its node at once reaches.
  [[nodiscard]] BytesPerSec reach(int peers) const {
    if (per_peer.v <= 0 || peers <= 0) return bandwidth;
    return BytesPerSec{std::min(bandwidth.v, peers * per_peer.v)};
  }
};

/// A fabric link as collectives see it: bandwidth and per_peer × the link's efficiency.
[[nodiscard]] inline LinkCost fabric_link(const hw::LinkSpec& l) {
  return {l.effective(), l.latency, l.call_latency, l.per_peer * l.efficiency,
          l.all_to_all_efficiency > 0 ? l.all_to_all_efficiency / l.efficiency : 1.0, l.peer_latency,
          l.groups.empty() ? nullptr : &l.groups};
}

/// The communicating group: `ranks` ranks, `ranks_per_node` of them on each node they span.
/// For a mixed group, intra and inter are the slowest members' (the slowest link bounds a ring).
struct CommGroup {
  int ranks = 1;
  int ranks_per_node = 1;  ///< == ranks when the group sits inside one node
  LinkCost intra;          ///< intra-node fabric, per rank
  LinkCost inter;          ///< scale-out bandwidth per rank (NICs shared by the node's ranks)

  [[nodiscard]] int nodes() const { return ranks / ranks_per_node; }
};

/// The cost of one collective and the algorithm that gives it (the fastest, for Auto).
struct CollectiveCost {
  Algorithm algorithm = Algorithm::Ring;
  TimeBreakdown time;  ///< parts "latency", "bandwidth"
};

/// Time of collective `c` over `size` bytes (the whole buffer, as NCCL counts it: the reduced
/// vector for all-reduce, the gathered output for all-gather, the input for reduce-scatter, the
/// send buffer for all-to-all, the message for broadcast and send/recv).
/// Requires: g.ranks >= 1, g.ranks_per_node >= 1 and divides g.ranks; bandwidths > 0.
[[nodiscard]] CollectiveCost collective_time(Collective c, Bytes size, const CommGroup& g,
                                             Algorithm a = Algorithm::Auto);

/// Expert-parallel dispatch (or combine) by node (plan::Plan::EpDispatch::Hierarchical, DeepEP):
/// each rank sends its tokens once to each destination node, over its own NIC share to the rank
/// of the same local index there, which forwards them over the node's fabric to the ranks of
/// their experts. `copy`: the rank's tokens' bytes, one copy of each; `remote_nodes`: other nodes
/// a token goes to, on average; `fabric_copies`: copies of a token that cross the fabric, on
/// average. Time: max(copy·remote_nodes / inter bandwidth, fabric step) + inter latency (several
/// nodes) + intra latency (several ranks a node): the fan-out runs while later tokens arrive, and
/// the kernels send to every peer at once. The fabric step is copy·fabric_copies / intra
/// bandwidth, or, where the kernels' own rate `kernel_rate` (> 0: hw::Efficiency::
/// dispatch_bandwidth, counted over every copy a rank receives, its own included) is slower, the
/// time at that rate. docs/cost-models.md#hierarchical-dispatch.
/// Requires: as collective_time; remote_nodes, fabric_copies >= 0; kernel_rate >= 0.
[[nodiscard]] TimeBreakdown hierarchical_dispatch_time(Bytes copy, double remote_nodes, double fabric_copies,
                                                       const CommGroup& g, BytesPerSec kernel_rate = BytesPerSec{0});

/// Ring all-reduce over n ranks on one bottleneck bandwidth: 2(n−1)·α + 2(n−1)/n · size/bw.
[[nodiscard]] TimeBreakdown ring_allreduce(Bytes size, int n, BytesPerSec bw, Duration alpha);

}  // namespace hetsim::cost
