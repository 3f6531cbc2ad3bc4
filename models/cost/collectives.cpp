#include "models/cost/collectives.hpp"

#include <algorithm>
#include <cmath>

#include "models/base/assert.hpp"

namespace hetsim::cost {
namespace {

// A collective's two parts while algorithms are compared (the breakdown, with its named parts,
// is built once for the one chosen: the planner prices a great many collectives).
struct Parts {
  Duration latency{0}, bandwidth{0};
  [[nodiscard]] Duration total() const { return latency + bandwidth; }
  Parts& operator+=(const Parts& o) {
    latency += o.latency;
    bandwidth += o.bandwidth;
    return *this;
  }
};

TimeBreakdown breakdown(Parts p) {
  TimeBreakdown t;
  t.add("latency", p.latency);
  t.add("bandwidth", p.bandwidth);
  return t;
}

// The intra-node link as a rank exchanging with `peers` node-mates at once sees it: on a full
// mesh the links to those peers (LinkCost::reach), else the whole fabric.
LinkCost reaching(LinkCost l, int peers) {
  l.bandwidth = l.reach(peers);
  return l;
}

// An all-to-all's latency over `peers` peers reached through link `l`: with the peers' messages
// in flight together (LinkCost::peer_latency: NCCL's grouped send/recv), one latency and a cost
// per peer; else one latency per peer (a step each).
Duration peers_latency(const LinkCost& l, double peers) {
  if (peers <= 0) return Duration{0};
  return l.peer_latency.v > 0 ? l.latency + l.peer_latency * peers : l.latency * peers;
}

// The bottleneck of a flat ring over the group. Inside one node it is the fabric (on a full mesh
// the links to the ring's n − 1 other ranks: its channels spread its n edges' traffic over their
// n(n − 1) pairs). Across nodes NCCL runs one ring per NIC rail; each node's k ranks send their
// share of the ring traffic through k NICs, so the ring's bus bandwidth is min(fabric, k ·
// per-rank NIC bandwidth); on a full mesh the k channels' (k − 1)·B of traffic in each node
// spreads over its k(k − 1) pairs, B/k each, so the fabric bound is k · per_peer.
LinkCost ring_link(const CommGroup& g) {
  if (g.nodes() <= 1) return reaching(g.intra, g.ranks - 1);
  const double k = g.ranks_per_node;
  const BytesPerSec fabric = g.ranks_per_node > 1 ? g.intra.reach(g.ranks_per_node) : g.intra.bandwidth;
  return {BytesPerSec{std::min(fabric.v, k * g.inter.bandwidth.v)},
          max(g.intra.latency, g.inter.latency), max(g.intra.call, g.inter.call)};
}

// Ring: every rank sends (n−1)/n of the buffer `rounds` times, in rounds·(n−1) steps.
Parts ring(double rounds, Bytes size, int n, LinkCost l) {
  if (n <= 1) return {};
  const double steps = rounds * (n - 1);
  return {l.latency * steps, size * (rounds * (n - 1) / n) / l.bandwidth};
}

// A flat ring across the group's nodes, latency as NCCL's tuning model counts it
// (src/graph/tuning.cc): of its steps, 2·nodes (all-reduce) or nodes − 1 (one round) cross
// the network and pay the NIC's latency, the rest the fabric's.
Parts flat_ring(double rounds, Bytes size, const CommGroup& g) {
  const LinkCost l = ring_link(g);
  const Parts t = ring(rounds, size, g.ranks, l);
  if (g.nodes() <= 1 || g.ranks <= 1) return t;
  const double steps = rounds * (g.ranks - 1);
  const double inter = std::min(steps, rounds >= 2 ? 2.0 * g.nodes() : g.nodes() - 1.0);
  return {g.inter.latency * inter + g.intra.latency * (steps - inter), t.bandwidth};
}

// Double binary tree (Sanders et al. 2009, as in NCCL): reduce up and broadcast down, each
// pipelined over log2(n) levels; the bandwidth term does not shrink with n.
Parts tree_allreduce(Bytes size, const CommGroup& g) {
  const LinkCost l = ring_link(g);
  const double depth = std::ceil(std::log2(std::max(2, g.ranks)));
  return {l.latency * (2 * depth), size * 2.0 / l.bandwidth};
}

// Hierarchical: inside each node a reduce-scatter (and all-gather, for all-reduce) over the
// fabric; across nodes each rank handles its 1/k shard over its own NIC share.
Parts hierarchical(double rounds, Bytes size, const CommGroup& g) {
  Parts t = ring(rounds, size, g.ranks_per_node, reaching(g.intra, g.ranks_per_node - 1));
  t += ring(rounds, size / g.ranks_per_node, g.nodes(), g.inter);
  return t;
}

// The measured point for collective `c` over the whole of group `g`, where the group sits inside
// one node and its fabric carries one for that collective and size (hw::GroupPoint); else nullptr.
const hw::GroupPoint* measured_point(Collective c, const CommGroup& g) {
  if (g.intra.groups == nullptr || g.nodes() > 1 || g.ranks <= 1) return nullptr;
  hw::GroupPoint::Kind kind{};
  switch (c) {
    case Collective::AllReduce: kind = hw::GroupPoint::Kind::AllReduce; break;
    case Collective::AllGather: kind = hw::GroupPoint::Kind::AllGather; break;
    case Collective::ReduceScatter: kind = hw::GroupPoint::Kind::ReduceScatter; break;
    default: return nullptr;
  }
  for (const auto& p : *g.intra.groups)
    if (p.ranks == g.ranks && p.kind == kind) return &p;
  return nullptr;
}

}  // namespace

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all-reduce";
    case Collective::AllGather: return "all-gather";
    case Collective::ReduceScatter: return "reduce-scatter";
    case Collective::AllToAll: return "all-to-all";
    case Collective::Broadcast: return "broadcast";
    case Collective::SendRecv: return "send/recv";
  }
  return "?";
}

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Auto: return "auto";
    case Algorithm::Ring: return "ring";
    case Algorithm::Tree: return "tree";
    case Algorithm::Hierarchical: return "hierarchical";
  }
  return "?";
}

TimeBreakdown hierarchical_dispatch_time(Bytes copy, double remote_nodes, double fabric_copies, const CommGroup& g,
                                         BytesPerSec kernel_rate) {
  HETSIM_ASSERT(g.ranks >= 1 && g.ranks_per_node >= 1 && g.ranks % g.ranks_per_node == 0 && remote_nodes >= 0 &&
                    fabric_copies >= 0 && kernel_rate.v >= 0,
                "bad hierarchical dispatch");
  const int k = g.ranks_per_node, nodes = g.nodes();
  // The dispatch kernels send to every peer at once from the GPU (DeepEP's RDMA and NVLink
  // warps): one latency per level, not one per peer (DeepEP's low-latency dispatch takes 173 µs
  // at EP 64 and 194 µs at EP 256; docs/cost-models.md#hierarchical-dispatch).
  Duration bw = k > 1 ? copy * fabric_copies / (g.intra.reach(k - 1) * g.intra.all_to_all) : Duration{0};
  // The kernels' own rate (their SM budget) over every copy a rank receives, its own one of k
  // included: fabric_copies·k/(k − 1) of them.
  if (k > 1 && kernel_rate.v > 0) bw = max(bw, copy * (fabric_copies * k / (k - 1)) / kernel_rate);
  Duration lat = k > 1 ? g.intra.latency : Duration{0};
  if (nodes > 1) {
    bw = max(bw, copy * remote_nodes / (g.inter.bandwidth * g.inter.all_to_all));
    lat = lat + g.inter.latency;
  }
  return breakdown({lat, bw});
}

TimeBreakdown ring_allreduce(Bytes size, int n, BytesPerSec bw, Duration alpha) {
  return breakdown(ring(2, size, n, LinkCost{bw, alpha, Duration{0}}));
}

CollectiveCost collective_time(Collective c, Bytes size, const CommGroup& g, Algorithm a) {
  HETSIM_ASSERT(g.ranks >= 1 && g.ranks_per_node >= 1 && g.ranks % g.ranks_per_node == 0,
                "bad communication group");
  HETSIM_ASSERT(g.intra.bandwidth.v > 0 && (g.nodes() <= 1 || g.inter.bandwidth.v > 0),
                "a communication group needs positive bandwidths");
  const int n = g.ranks;
  const bool multi_node = g.nodes() > 1;
  CollectiveCost out;
  Parts time;

  auto pick = [&](std::initializer_list<std::pair<Algorithm, Parts>> options) {
    bool first = true;
    for (const auto& [alg, t] : options) {
      if (a != Algorithm::Auto && alg != a) continue;
      if (first || t.total() < time.total()) {
        out.algorithm = alg;
        time = t;
        first = false;
      }
    }
    if (first) {  // the requested algorithm does not apply here: fall back to the ring
      out.algorithm = Algorithm::Ring;
      time = options.begin()->second;
    }
  };

  // A collective measured over this group size inside one node: its own fixed cost and bus
  // bandwidth, whatever algorithm NCCL's tuner took (the ring and tree formulas otherwise).
  // An explicit tree all-reduce keeps its formula; an algorithm that does not apply here (a tree
  // all-gather, a hierarchical collective inside one node) falls back to the ring, the measured one.
  if (const auto* point = measured_point(c, g); point != nullptr && !(a == Algorithm::Tree && c == Collective::AllReduce)) {
    const double f = (c == Collective::AllReduce ? 2.0 : 1.0) * (n - 1) / n;
    out.algorithm = Algorithm::Ring;
    out.time = breakdown({point->call, size * f / point->busbw});
    return out;
  }
  switch (c) {
    case Collective::AllReduce: {
      if (n <= 1) break;
      const Parts r = flat_ring(2, size, g);
      if (multi_node && g.ranks_per_node > 1)
        pick({{Algorithm::Ring, r}, {Algorithm::Tree, tree_allreduce(size, g)},
              {Algorithm::Hierarchical, hierarchical(2, size, g)}});
      else
        pick({{Algorithm::Ring, r}, {Algorithm::Tree, tree_allreduce(size, g)}});
      break;
    }
    case Collective::AllGather:
    case Collective::ReduceScatter: {
      if (n <= 1) break;
      const Parts r = flat_ring(1, size, g);
      if (multi_node && g.ranks_per_node > 1)
        pick({{Algorithm::Ring, r}, {Algorithm::Hierarchical, hierarchical(1, size, g)}});
      else
        pick({{Algorithm::Ring, r}});
      break;
    }
    case Collective::AllToAll: {
      // Pairwise exchange: n−1 steps; each rank sends size/n to every other rank. The
      // (k−1)/n share for node-mates crosses the fabric, the (n−k)/n share crosses the rank's
      // own NIC share (it cannot borrow other ranks' NICs).
      if (n <= 1) break;
      // Latency: peers_latency (one step per peer, or NCCL's grouped send/recv: one latency
      // and a cost per peer); all-to-all traffic at the link's all-to-all rate.
      const double k = g.ranks_per_node;
      Duration bw = size * ((k - 1) / n) / (g.intra.reach(g.ranks_per_node - 1) * g.intra.all_to_all);
      Duration lat = peers_latency(g.intra, k - 1);
      if (multi_node) {
        bw = max(bw, size * ((n - k) / n) / (g.inter.bandwidth * g.inter.all_to_all));
        lat = peers_latency(g.inter, n - 1);
      }
      out.algorithm = Algorithm::Ring;
      time = {lat, bw};
      break;
    }
    case Collective::Broadcast: {
      // Pipelined ring: the message streams through n−1 hops.
      if (n <= 1) break;
      const LinkCost l = ring_link(g);
      time = {l.latency * (n - 1), size / l.bandwidth};
      break;
    }
    case Collective::SendRecv: {
      const LinkCost l = multi_node ? g.inter : reaching(g.intra, 1);  // one peer
      time = {l.latency, size / l.bandwidth};
      break;
    }
  }
  // Every call pays its fixed cost once (kernel launch and protocol set-up; NCCL's base
  // latency), on the slowest link the group spans.
  if (n > 1 || c == Collective::SendRecv) time.latency += multi_node ? max(g.intra.call, g.inter.call) : g.intra.call;
  out.time = breakdown(time);
  return out;
}

}  // namespace hetsim::cost
