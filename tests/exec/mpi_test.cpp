// Multi-process collectives over MPI, run by ctest under mpirun with 3 processes: every
// collective and point-to-point message of the MPI communicator, on host buffers and staged
// through a device's buffers, against sums computed here; groups split from the world.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/mpi/mpi_group.hpp"

namespace hetsim {
namespace {

exec::ProcessGroup* world = nullptr;

TEST(Mpi, CollectivesAndMessagesAreNumericallyRight) {
  ASSERT_NE(world, nullptr);
  const int n = world->size(), r = world->rank();
  ASSERT_GE(n, 2);
  auto dev = exec::make_cpu_backend(1)->open(0);
  for (exec::Device* staged : {static_cast<exec::Device*>(nullptr), dev.get()}) {
    auto c = world->communicator(staged);
    const std::size_t count = 6;
    std::vector<float> mine(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = float(r + 1) + float(i) / 10;
    // Σ_r (r + 1) = n(n + 1)/2.
    const float sum_ranks = float(n * (n + 1)) / 2;
    std::vector<float> reduced = mine, gathered(n * count), scattered(2), exchanged(n * 2), received(count);
    ASSERT_TRUE(c->all_reduce(reduced.data(), count).ok());
    ASSERT_TRUE(c->all_gather(mine.data(), gathered.data(), count).ok());
    ASSERT_TRUE(c->reduce_scatter(mine.data(), scattered.data(), 2).ok());
    ASSERT_TRUE(c->all_to_all(mine.data(), exchanged.data(), 2).ok());
    ASSERT_TRUE(c->send(mine.data(), count, (r + 1) % n, 7).ok());
    ASSERT_TRUE(c->recv(received.data(), count, (r + n - 1) % n, 7).ok());
    ASSERT_TRUE(c->barrier().empty());
    for (std::size_t i = 0; i < count; ++i) {
      EXPECT_FLOAT_EQ(reduced[i], sum_ranks + float(n) * float(i) / 10);
      for (int q = 0; q < n; ++q) EXPECT_FLOAT_EQ(gathered[q * count + i], float(q + 1) + float(i) / 10);
      EXPECT_FLOAT_EQ(received[i], float((r + n - 1) % n + 1) + float(i) / 10);
    }
    for (std::size_t i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(scattered[i], sum_ranks + float(n) * float(r * 2 + i) / 10);
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(exchanged[q * 2 + i], float(q + 1) + float(r * 2 + i) / 10);
  }
}

TEST(Mpi, SplitGroupsGatherAndBroadcast) {
  const int n = world->size(), r = world->rank();
  // The even ranks form a group, ordered by rank.
  auto even = world->split(r % 2 == 0, r);
  EXPECT_EQ(even != nullptr, r % 2 == 0);
  if (even) {
    EXPECT_EQ(even->rank(), r / 2);
    EXPECT_EQ(even->size(), (n + 1) / 2);
  }
  int value = r == 0 ? 42 : 0;
  world->broadcast(&value, sizeof value, 0);
  EXPECT_EQ(value, 42);
  std::vector<std::int64_t> mine(static_cast<std::size_t>(r + 1), r);  // r + 1 values each
  const auto all = world->gather(mine, 0);
  if (r == 0) {
    ASSERT_EQ(all.size(), static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) EXPECT_EQ(all[static_cast<std::size_t>(q)], std::vector<std::int64_t>(q + 1, q));
  } else {
    EXPECT_TRUE(all.empty());
  }
}

}  // namespace
}  // namespace hetsim

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!hetsim::exec::launched_by_mpi()) {
    std::fprintf(stderr, "run under mpirun (ctest does)\n");
    return 1;
  }
  auto w = hetsim::exec::mpi_world(argc, argv);
  if (!w) return 1;
  hetsim::world = w->get();
  const int rc = RUN_ALL_TESTS();
  // Every process must pass: the exit codes are combined by mpirun.
  return rc;
}
