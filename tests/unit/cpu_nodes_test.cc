// The columns the placement probe and the sched tracker count by, from a host's topology.
#include "signals/placement/cpu_nodes.h"

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

// Nodes numbered with a gap, one with no CPUs, one CPU no node lists (offline): columns
// follow the node numbers.
TEST(CpuNodesTest, MapsEachCpuToItsNodesColumn) {
  NumaTopology topology;
  topology.node_cpus = {{0, {0, 1, 4}}, {2, {2, 3}}, {3, {}}};
  const CpuNodes nodes = CpuNodesOf(topology, 6);
  EXPECT_EQ(nodes.nodes, (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_EQ(nodes.column_of_cpu, (std::vector<uint32_t>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(nodes.ColumnOf(3), 1u);
  EXPECT_EQ(nodes.ColumnOf(99), 0u);  // beyond the possible CPUs
}

TEST(CpuNodesTest, ACpuBeyondThePossibleOnesIsLeftOut) {
  NumaTopology topology;
  topology.node_cpus = {{0, {0}}, {1, {1, 7}}};
  const CpuNodes nodes = CpuNodesOf(topology, 2);
  EXPECT_EQ(nodes.nodes, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(nodes.column_of_cpu, (std::vector<uint32_t>{0, 1}));
}

}  // namespace
}  // namespace stagewatch
