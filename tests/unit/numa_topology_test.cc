#include "cgroup/numa_topology.h"

#include <filesystem>
#include <fstream>

#include "cgroupfs_fixtures.h"
#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using testing::Contains;

// A sysfs tree as the kernel lays out /sys/devices/system.
class SysTree {
 public:
  void Write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path path = dir_.file(relative);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string root() const { return dir_.path(); }

 private:
  testing::TempDir dir_;
};

TEST(NumaTopologyTest, ReadsEachNodesCpus) {
  SysTree sys;
  sys.Write("cpu/online", "0-3\n");
  sys.Write("node/online", "0-2\n");
  sys.Write("node/has_memory", "0-1\n");
  sys.Write("node/possible", "0-7\n");
  sys.Write("node/node0/cpulist", "0-1\n");
  sys.Write("node/node1/cpulist", "2-3\n");
  sys.Write("node/node2/cpulist", "\n");  // neither CPUs nor memory: a hotplug slot
  absl::StatusOr<NumaTopology> t = ReadNumaTopology(sys.root());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Nodes(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t->node_cpus.at(1), (std::vector<int>{2, 3}));
  EXPECT_TRUE(t->node_cpus.at(2).empty());
  EXPECT_EQ(t->online_cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t->memory_nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(t->NodeOfCpu(0), 0);
  EXPECT_EQ(t->NodeOfCpu(3), 1);
  EXPECT_EQ(t->NodeOfCpu(9), -1);
}

TEST(NumaTopologyTest, WithoutNumaTheHostIsNodeZero) {
  SysTree sys;
  sys.Write("cpu/online", "0-5\n");  // a kernel without CONFIG_NUMA has no node/
  absl::StatusOr<NumaTopology> t = ReadNumaTopology(sys.root());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Nodes(), (std::vector<int>{0}));
  EXPECT_EQ(t->node_cpus.at(0), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(t->memory_nodes, (std::vector<int>{0}));
}

TEST(NumaTopologyTest, BadCpulistIsAnErrorNamingTheFile) {
  SysTree sys;
  sys.Write("cpu/online", "0-1\n");
  sys.Write("node/node0/cpulist", "0-x\n");
  absl::StatusOr<NumaTopology> t = ReadNumaTopology(sys.root());
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(t.status().message(), "node0/cpulist")) << t.status();
}

TEST(NumaTopologyTest, ThisHostsTopologyCoversItsOnlineCpus) {
  absl::StatusOr<NumaTopology> t = ReadNumaTopology();
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_FALSE(t->online_cpus.empty());
  for (int cpu : t->online_cpus) EXPECT_GE(t->NodeOfCpu(cpu), 0) << "CPU " << cpu;
  EXPECT_FALSE(t->memory_nodes.empty());
}

}  // namespace
}  // namespace stagewatch
