// Unfolding folded devices into real ones (sim/schedule/unfold.hpp): the member numbering and the
// groups the SimGrid flows and the replay both draw their collectives' members from.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/schedule/unfold.hpp"

namespace hetsim {
namespace {

using schedule::Member;

// Two folded devices: tp 2 over 4 replicas with ep 2 (members replica · 2 + rank), and tp 1
// over 2 replicas; one data-parallel task on each.
schedule::TaskGraph two_devices() {
  schedule::TaskGraph g;
  g.devices.resize(2);
  g.devices[0].tp = 2;
  g.devices[0].replicas = 4;
  g.devices[0].count = 8;
  g.devices[0].ep = 2;
  g.devices[1].tp = 1;
  g.devices[1].replicas = 2;
  g.devices[1].count = 2;
  g.tasks.resize(2);
  g.tasks[0].device = 0;
  g.tasks[1].device = 1;
  return g;
}

std::vector<Member> on(std::uint32_t d, std::vector<int> members) {
  std::vector<Member> out;
  for (int m : members) out.push_back({d, m});
  return out;
}

TEST(Unfold, RealDevicesFollowTheGraphsDeviceOrder) {
  const auto g = two_devices();
  const auto u = schedule::unfold(g);
  EXPECT_EQ(u.first, (std::vector<int>{0, 8}));
  EXPECT_EQ(u.count, 10);
  EXPECT_EQ(u.real({1, 1}), 9);
}

TEST(Unfold, TensorAndExpertParallelGroups) {
  const auto g = two_devices();
  // Each replica's tp ranks.
  EXPECT_EQ(schedule::blocks_of(g, 0, 2),
            (std::vector<std::vector<Member>>{on(0, {0, 1}), on(0, {2, 3}), on(0, {4, 5}), on(0, {6, 7})}));
  // expert_tp = tp = 2, ep = 2: tp rank k of replicas 2e, 2e + 1.
  EXPECT_EQ(schedule::ep_groups(g, 0),
            (std::vector<std::vector<Member>>{on(0, {0, 2}), on(0, {1, 3}), on(0, {4, 6}), on(0, {5, 7})}));
}

TEST(Unfold, DataParallelChunksAndPieces) {
  const auto g = two_devices();
  const std::vector<std::uint32_t> tasks{0, 1};
  // Chunk 1 of 2: rank 1 of every tp-2 replica, rank 0 of every tp-1 replica.
  auto all = on(0, {1, 3, 5, 7});
  for (const auto& m : on(1, {0, 1})) all.push_back(m);
  EXPECT_EQ(schedule::dp_chunk_members(g, tasks, 1, 2), all);
  // Its routed experts' part for EP rank 1: the odd replicas.
  auto odd = on(0, {3, 7});
  odd.push_back({1, 1});
  EXPECT_EQ(schedule::dp_chunk_members(g, tasks, 1, 2, 2, 1), odd);
  // Across groups: the lcm of the devices' pieces (8 and 2) chunks; chunk 3 of 8: piece 3 of device 0's 8 (replica 3, rank 0 = member 6), piece
  // 0 of device 1's 2 (member 0).
  EXPECT_EQ(schedule::dp_piece_chunks(g, tasks), 8);
  EXPECT_EQ(schedule::dp_piece_members(g, tasks, 3, 8), (std::vector<Member>{{0, 6}, {1, 0}}));
}

// MoE parallel folding, worked by hand from docs/cost-models.md ("Expert tensor parallelism"): tp 4
// over 2 replicas (members replica · 4 + rank, 0-7), ep 2, expert_tp 1. Blocks of expert_tp · ep
// = 2 members: {0, 1} {2, 3} {4, 5} {6, 7}, each an EP group; the members at the same offset of
// every block hold the same experts: {0, 2, 4, 6} and {1, 3, 5, 7}, tp · r / (ep · et) = 4 each.
// With expert_tp 2: blocks of 4, EP groups of members 2 apart ({0, 2} {1, 3} {4, 6} {5, 7}), and
// the expert-data-parallel groups {0, 4} {1, 5} {2, 6} {3, 7}.
TEST(Unfold, FoldedExpertGroupsFollowMegatronCoresExpertRankOrder) {
  schedule::TaskGraph g;
  g.devices.resize(1);
  g.devices[0].tp = 4;
  g.devices[0].replicas = 2;
  g.devices[0].count = 8;
  g.devices[0].ep = 2;
  g.devices[0].expert_tp = 1;
  g.tasks.resize(1);
  g.tasks[0].device = 0;
  const std::vector<std::uint32_t> tasks{0};
  EXPECT_TRUE(schedule::folds_experts(g, tasks));
  EXPECT_EQ(schedule::ep_groups(g, 0),
            (std::vector<std::vector<Member>>{on(0, {0, 1}), on(0, {2, 3}), on(0, {4, 5}), on(0, {6, 7})}));
  EXPECT_EQ(schedule::expert_dp_groups(g, tasks),
            (std::vector<std::vector<Member>>{on(0, {0, 2, 4, 6}), on(0, {1, 3, 5, 7})}));
  g.devices[0].expert_tp = 2;
  EXPECT_EQ(schedule::ep_groups(g, 0),
            (std::vector<std::vector<Member>>{on(0, {0, 2}), on(0, {1, 3}), on(0, {4, 6}), on(0, {5, 7})}));
  EXPECT_EQ(schedule::expert_dp_groups(g, tasks),
            (std::vector<std::vector<Member>>{on(0, {0, 4}), on(0, {1, 5}), on(0, {2, 6}), on(0, {3, 7})}));
  g.devices[0].expert_tp = 4;  // expert_tp = tp: no folding
  EXPECT_FALSE(schedule::folds_experts(g, tasks));
}

}  // namespace
}  // namespace hetsim
