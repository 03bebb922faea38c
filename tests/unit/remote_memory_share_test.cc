#include "cgroup/remote_memory_share.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(RemoteMemoryShareTest, AllLocalIsZeroAllRemoteIsOne) {
  const NumaMemory on_node1 = {{0, {0, 0}}, {1, {900 * kMiB, 100 * kMiB}}};
  EXPECT_DOUBLE_EQ(RemoteMemoryShare(on_node1, {0, 10}).value(), 0);  // runs on node 1
  EXPECT_DOUBLE_EQ(RemoteMemoryShare(on_node1, {10, 0}).value(), 1);  // runs on node 0
}

TEST(RemoteMemoryShareTest, WeightedByCpuTime) {
  // 75% of the memory on node 0; 80% of the CPU time there, 20% on node 1:
  // 0.8 * (1 - 0.75) + 0.2 * (1 - 0.25) = 0.2 + 0.15.
  const NumaMemory memory = {{0, {600 * kMiB, 150 * kMiB}}, {1, {250 * kMiB, 0}}};
  EXPECT_NEAR(RemoteMemoryShare(memory, {8, 2}).value(), 0.35, 1e-12);
}

TEST(RemoteMemoryShareTest, CpuTimeOnANodeWithoutMemoryIsRemote) {
  const NumaMemory memory = {{0, {kMiB, 0}}};  // the file lists only node 0
  EXPECT_DOUBLE_EQ(RemoteMemoryShare(memory, {1, 0, 3}).value(), 0.75);
}

TEST(RemoteMemoryShareTest, OneNodeIsZero) {
  EXPECT_DOUBLE_EQ(RemoteMemoryShare({{0, {5 * kMiB, 7 * kMiB}}}, {2.5}).value(), 0);
}

TEST(RemoteMemoryShareTest, NoMemoryOrNoCpuTimeIsNoRatio) {
  const NumaMemory memory = {{0, {kMiB, 0}}, {1, {kMiB, 0}}};
  EXPECT_FALSE(RemoteMemoryShare(memory, {}).has_value());
  EXPECT_FALSE(RemoteMemoryShare(memory, {0, 0}).has_value());
  EXPECT_FALSE(RemoteMemoryShare({{0, {0, 0}}, {1, {0, 0}}}, {1, 1}).has_value());
  EXPECT_FALSE(RemoteMemoryShare({}, {1, 1}).has_value());
  // Nonsense seconds count for nothing, rather than poison the ratio.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(RemoteMemoryShare(memory, {nan, -1}).has_value());
  EXPECT_DOUBLE_EQ(RemoteMemoryShare(memory, {nan, 4}).value(), 0.5);
}

}  // namespace
}  // namespace stagewatch
