#include "models/cost/collectives.hpp"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

namespace hetsim::cost {
namespace {

// 4 ranks, 1 GiB, 100 GB/s, alpha 5 us:
//   latency 2·3·5us = 30us; bandwidth 2·(3/4)·2^30 B / 1e11 B/s = 16.106 ms
TEST(RingAllreduce, FourRanksMatchesClosedForm) {
  auto c = ring_allreduce(Bytes{double(1ull << 30)}, 4, BytesPerSec{1e11}, Duration{5e-6});
  EXPECT_NEAR(c.total().v, 30e-6 + 0.01610612736, 1e-12);
  EXPECT_NEAR(c.get("latency").v, 30e-6, 1e-15);
}

CommGroup node_group(int ranks) {
  CommGroup g;
  g.ranks = ranks;
  g.ranks_per_node = ranks;
  g.intra = {BytesPerSec{300e9}, Duration{3e-6}, Duration{0}};
  return g;
}

TEST(Collectives, IntraNodeAllGatherIsOneRingRound) {
  // 8 ranks, 800 MB gathered: 7·3us + (7/8)·800e6/300e9 = 21us + 2.3333 ms
  auto c = collective_time(Collective::AllGather, Bytes{800e6}, node_group(8), Algorithm::Ring);
  EXPECT_NEAR(c.time.total().v, 21e-6 + 7.0 / 8 * 800e6 / 300e9, 1e-12);
  auto rs = collective_time(Collective::ReduceScatter, Bytes{800e6}, node_group(8), Algorithm::Ring);
  EXPECT_NEAR(rs.time.total().v, c.time.total().v, 1e-15);
}

TEST(Collectives, OneRankCostsNothing) {
  for (auto c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                 Collective::AllToAll, Collective::Broadcast})
    EXPECT_EQ(collective_time(c, Bytes{1e9}, node_group(1)).time.total().v, 0.0);
}

CommGroup two_level(int nodes, int per_node) {
  CommGroup g = node_group(per_node);
  g.ranks = nodes * per_node;
  g.inter = {BytesPerSec{50e9}, Duration{10e-6}, Duration{0}};
  return g;
}

TEST(Collectives, MultiNodeRingIsBoundByTheNodesNics) {
  // 4 nodes × 8 ranks: ring bus bandwidth min(300, 8·50) = 300 GB/s; 32 ranks, 1 GB. Of the
  // 2·31 = 62 steps, 2·4 = 8 cross the network (10 us), 54 stay on the fabric (3 us), as NCCL's
  // tuning model counts them: 8·10us + 54·3us + 2·(31/32)·1e9/300e9
  auto c = collective_time(Collective::AllReduce, Bytes{1e9}, two_level(4, 8), Algorithm::Ring);
  EXPECT_NEAR(c.time.total().v, 8 * 10e-6 + 54 * 3e-6 + 2 * 31.0 / 32 * 1e9 / 300e9, 1e-12);
  // One rank per node: the ring runs at one NIC's 50 GB/s.
  auto one = collective_time(Collective::AllReduce, Bytes{1e9}, two_level(4, 1), Algorithm::Ring);
  EXPECT_NEAR(one.time.get("bandwidth").v, 2 * 3.0 / 4 * 1e9 / 50e9, 1e-12);
}

// A fabric that carries measured points (hw::LinkSpec::groups): an all-reduce over 4 of a node's
// ranks and an all-gather over 2 take their call + f·S/busbw; every other collective, group size
// or algorithm, and any group that spans nodes, the ring formula as before.
TEST(Collectives, AMeasuredGroupPointReplacesTheRingForItsCollectiveAndSizeOnly) {
  const std::vector<hw::GroupPoint> points = {
      {4, hw::GroupPoint::Kind::AllReduce, Duration{34.5e-6}, BytesPerSec{348.5e9}, ""},
      {2, hw::GroupPoint::Kind::AllGather, Duration{20e-6}, BytesPerSec{200e9}, ""}};
  auto with = [&](CommGroup g) {
    g.intra.groups = &points;
    return g;
  };
  const Bytes s{128e6};
  auto ar4 = collective_time(Collective::AllReduce, s, with(node_group(4)));
  EXPECT_NEAR(ar4.time.total().v, 34.5e-6 + 2 * 3.0 / 4 * 128e6 / 348.5e9, 1e-12);
  EXPECT_NEAR(ar4.time.get("latency").v, 34.5e-6, 1e-15) << "the point's call holds the fixed cost";
  EXPECT_EQ(ar4.algorithm, Algorithm::Ring);
  EXPECT_NEAR(collective_time(Collective::AllReduce, s, with(node_group(4)), Algorithm::Ring).time.total().v,
              ar4.time.total().v, 1e-15);
  auto ag2 = collective_time(Collective::AllGather, s, with(node_group(2)));
  EXPECT_NEAR(ag2.time.total().v, 20e-6 + 1.0 / 2 * 128e6 / 200e9, 1e-12);
  // An algorithm that does not apply inside one node falls back to the (measured) ring.
  for (const auto a : {Algorithm::Hierarchical, Algorithm::Tree})
    EXPECT_NEAR(collective_time(Collective::AllGather, s, with(node_group(2)), a).time.total().v, ag2.time.total().v, 1e-15);
  EXPECT_NEAR(collective_time(Collective::AllReduce, s, with(node_group(4)), Algorithm::Hierarchical).time.total().v,
              ar4.time.total().v, 1e-15);
  // No point: the formula, exactly as without any.
  const std::vector<std::tuple<Collective, int, Algorithm>> unmeasured = {
      {Collective::AllReduce, 8, Algorithm::Auto},     {Collective::AllReduce, 2, Algorithm::Auto},
      {Collective::ReduceScatter, 4, Algorithm::Auto}, {Collective::AllGather, 4, Algorithm::Auto},
      {Collective::AllReduce, 4, Algorithm::Tree},     {Collective::AllToAll, 4, Algorithm::Auto}};
  for (const auto& [c, n, a] : unmeasured)
    EXPECT_NEAR(collective_time(c, s, with(node_group(n)), a).time.total().v, collective_time(c, s, node_group(n), a).time.total().v,
                1e-15)
        << collective_name(c) << " over " << n << " ranks, " << algorithm_name(a);
  // Four ranks on two nodes: not a group inside one node.
  CommGroup spread = with(two_level(2, 2));
  EXPECT_NEAR(collective_time(Collective::AllReduce, s, spread).time.total().v,
              collective_time(Collective::AllReduce, s, two_level(2, 2)).time.total().v, 1e-15);
}

TEST(Collectives, EveryCallPaysItsCallLatencyOnce) {
  // A 1-byte all-gather inside a node of 8: 7 steps · 3 us + the fabric's 8.4 us call latency.
  CommGroup g = node_group(8);
  g.intra.call = Duration{8.4e-6};
  auto c = collective_time(Collective::AllGather, Bytes{1}, g, Algorithm::Ring);
  EXPECT_NEAR(c.time.get("latency").v, 7 * 3e-6 + 8.4e-6, 1e-12);
  // Across nodes the slower of the two links' call latencies.
  CommGroup m = two_level(2, 8);
  m.intra.call = Duration{8.4e-6};
  m.inter.call = Duration{20e-6};
  auto r = collective_time(Collective::ReduceScatter, Bytes{1}, m, Algorithm::Ring);
  // 15 steps: 1 (nodes − 1) over the network, 14 on the fabric.
  EXPECT_NEAR(r.time.get("latency").v, 10e-6 + 14 * 3e-6 + 20e-6, 1e-12);
}

TEST(Collectives, HierarchicalIsIntraThenInterOnAShard) {
  // RS + AG inside 8: 2·(7/8)·1e9/300e9 (+14·3us); AR of 1e9/8 across 4 nodes at 50 GB/s:
  //   2·(3/4)·125e6/50e9 (+6·10us)
  auto c = collective_time(Collective::AllReduce, Bytes{1e9}, two_level(4, 8), Algorithm::Hierarchical);
  EXPECT_EQ(c.algorithm, Algorithm::Hierarchical);
  const double want = 2 * 7.0 / 8 * 1e9 / 300e9 + 14 * 3e-6 + 2 * 0.75 * 125e6 / 50e9 + 6 * 10e-6;
  EXPECT_NEAR(c.time.total().v, want, 1e-12);
}

TEST(Collectives, AutoPicksTheFastest) {
  const CommGroup g = two_level(16, 8);
  for (double size : {1e3, 1e6, 1e9}) {
    auto best = collective_time(Collective::AllReduce, Bytes{size}, g, Algorithm::Auto);
    for (auto a : {Algorithm::Ring, Algorithm::Tree, Algorithm::Hierarchical})
      EXPECT_LE(best.time.total().v, collective_time(Collective::AllReduce, Bytes{size}, g, a).time.total().v);
  }
  // Small messages over many ranks: the tree's log-depth latency wins.
  EXPECT_EQ(collective_time(Collective::AllReduce, Bytes{1e3}, g).algorithm, Algorithm::Tree);
}

TEST(Collectives, SendRecvUsesTheLinkBetweenThePair) {
  CommGroup same = node_group(2);
  EXPECT_NEAR(collective_time(Collective::SendRecv, Bytes{3e9}, same).time.total().v, 3e-6 + 0.01, 1e-12);
  CommGroup apart = two_level(2, 1);
  EXPECT_NEAR(collective_time(Collective::SendRecv, Bytes{5e9}, apart).time.total().v, 10e-6 + 0.1, 1e-12);
}

TEST(Collectives, AllToAllCrossNodeShareGoesThroughOwnNic) {
  // 2 nodes × 4: each rank sends 4/8 of 1 GB off-node at 50 GB/s = 10 ms (intra share 3/8 at
  // 300 GB/s is faster); 7 steps of 10 us latency.
  auto c = collective_time(Collective::AllToAll, Bytes{1e9}, two_level(2, 4));
  EXPECT_NEAR(c.time.total().v, 0.5e9 / 50e9 + 7 * 10e-6, 1e-12);
}

// NCCL's all-to-all has every peer's send and receive in flight together (grouped send/recv):
// with a per-peer cost on the NIC (peer_latency) the call pays the NIC's latency once and that
// per peer; and all-to-all traffic crosses the NIC at its own measured rate (all_to_all).
TEST(Collectives, AGroupedAllToAllPaysOneLatencyAndACostPerPeerAtItsOwnRate) {
  CommGroup g = two_level(2, 4);
  g.inter.peer_latency = Duration{2e-6};
  g.inter.all_to_all = 0.8;
  auto c = collective_time(Collective::AllToAll, Bytes{1e9}, g);
  EXPECT_NEAR(c.time.total().v, 0.5e9 / (50e9 * 0.8) + 10e-6 + 7 * 2e-6, 1e-12);
  // The rings keep the NIC's ring rate.
  CommGroup plain = two_level(2, 4);
  plain.inter.all_to_all = 0.8;
  EXPECT_NEAR(collective_time(Collective::AllGather, Bytes{1e9}, plain, Algorithm::Ring).time.total().v,
              collective_time(Collective::AllGather, Bytes{1e9}, two_level(2, 4), Algorithm::Ring).time.total().v, 1e-15);
  // A GPU-initiated hierarchical dispatch (DeepEP) pays each level's latency once, whatever the
  // peer count: 3 remote nodes of 4 ranks each, 1 MB per copy, 2 node-crossings a token.
  CommGroup wide = two_level(4, 4);
  const auto d = hierarchical_dispatch_time(Bytes{1e6}, 2.0, 0.0, wide);
  EXPECT_NEAR(d.get("latency").v, wide.intra.latency.v + wide.inter.latency.v, 1e-15);
  EXPECT_NEAR(d.get("bandwidth").v, 2e6 / 50e9, 1e-15);
}

// The hierarchical dispatch's fabric step at the kernels' own rate where that is slower than the
// fabric's (DeepEP's SM budget, counted over every copy a rank receives, its own one of k too):
// one node of 4 ranks, 1 MB a copy, 1.5 copies a token across the fabric = 2 received copies.
TEST(Collectives, HierarchicalDispatchTakesTheSlowerOfTheFabricAndTheKernelsOwnRate) {
  CommGroup node = two_level(1, 4);
  const double fabric = node.intra.bandwidth.v;
  const auto at_fabric = hierarchical_dispatch_time(Bytes{1e6}, 0.0, 1.5, node);
  EXPECT_NEAR(at_fabric.get("bandwidth").v, 1.5e6 / fabric, 1e-15);
  // A kernel rate above what the fabric gives changes nothing; below it, it sets the step.
  EXPECT_DOUBLE_EQ(hierarchical_dispatch_time(Bytes{1e6}, 0.0, 1.5, node, BytesPerSec{fabric * 2}).total().v,
                   at_fabric.total().v);
  const auto capped = hierarchical_dispatch_time(Bytes{1e6}, 0.0, 1.5, node, BytesPerSec{fabric / 2});
  EXPECT_NEAR(capped.get("bandwidth").v, 2e6 / (fabric / 2), 1e-15);
  EXPECT_NEAR(capped.get("latency").v, node.intra.latency.v, 1e-15);
  // One rank a node: no fabric step, whatever the kernels' rate.
  const auto alone = hierarchical_dispatch_time(Bytes{1e6}, 1.0, 0.0, two_level(2, 1), BytesPerSec{1});
  EXPECT_NEAR(alone.get("bandwidth").v, 1e6 / two_level(2, 1).inter.bandwidth.v, 1e-15);
}

// A full mesh (per_peer set): a rank reaches one direct link per node-mate of its group. 300 GB/s
// aggregate, 50 GB/s per peer: 2 ranks reach 50, 4 ranks 150, 8 ranks the whole 300.
TEST(Collectives, AFullMeshGroupReachesOneLinkPerNodeMate) {
  auto mesh = [](int ranks) {
    CommGroup g = node_group(ranks);
    g.intra.latency = Duration{0};
    g.intra.per_peer = BytesPerSec{50e9};
    return g;
  };
  for (auto [n, bw] : {std::pair{2, 50e9}, std::pair{4, 150e9}, std::pair{8, 300e9}}) {
    auto c = collective_time(Collective::AllGather, Bytes{1e9}, mesh(n), Algorithm::Ring);
    EXPECT_NEAR(c.time.total().v, (n - 1.0) / n * 1e9 / bw, 1e-12) << n << " ranks";
    // A switched fabric of the same aggregate gives every group size the whole 300 GB/s.
    CommGroup sw = mesh(n);
    sw.intra.per_peer = BytesPerSec{0};
    EXPECT_NEAR(collective_time(Collective::AllGather, Bytes{1e9}, sw, Algorithm::Ring).time.total().v,
                (n - 1.0) / n * 1e9 / 300e9, 1e-12);
  }
  // A send reaches one peer's link even in a group of 8; an all-to-all of 4 each rank's 3 links.
  EXPECT_NEAR(collective_time(Collective::SendRecv, Bytes{1e9}, mesh(8)).time.total().v, 1e9 / 50e9, 1e-12);
  EXPECT_NEAR(collective_time(Collective::AllToAll, Bytes{1e9}, mesh(4)).time.total().v, 3.0 / 4 * 1e9 / 150e9, 1e-12);
  // Across nodes a node's k = 2 ring channels spread their (k − 1)·B of traffic over its k(k − 1)
  // = 2 pair directions, B/2 each: at 30 GB/s per peer the ring reaches 2 · 30 = 60 GB/s, under
  // the 2 · 50 GB/s of the node's NICs.
  CommGroup two = two_level(2, 2);
  two.intra.latency = two.inter.latency = Duration{0};
  two.intra.per_peer = BytesPerSec{30e9};
  EXPECT_NEAR(collective_time(Collective::AllGather, Bytes{1e9}, two, Algorithm::Ring).time.get("bandwidth").v,
              3.0 / 4 * 1e9 / 60e9, 1e-12);
  // One rank per node: no pair of the mesh is used; the NIC bounds the ring.
  CommGroup apart = two_level(4, 1);
  apart.intra.per_peer = BytesPerSec{30e9};
  EXPECT_NEAR(collective_time(Collective::AllGather, Bytes{1e9}, apart, Algorithm::Ring).time.get("bandwidth").v,
              3.0 / 4 * 1e9 / 50e9, 1e-12);
}

}  // namespace
}  // namespace hetsim::cost
