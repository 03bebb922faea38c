// The CPU → NUMA node reader, on node directories laid out as the kernel's.
#include "signals/placement/cpu_nodes.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using testing::TempDir;

void WriteNode(const TempDir& dir, const std::string& entry, const std::string& cpulist) {
  std::filesystem::create_directories(dir.file(entry));
  std::ofstream(dir.file(entry + "/cpulist")) << cpulist;
}

TEST(CpuNodesTest, ParsesTheKernelsCpuLists) {
  using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;
  EXPECT_EQ(*ParseCpuList("0-3,8,10-11\n"), (Ranges{{0, 3}, {8, 8}, {10, 11}}));
  EXPECT_EQ(*ParseCpuList("\n"), Ranges{});  // a node without CPUs (memory only)
  for (const char* bad : {"3-1", "a", "1-", "-2", "0,,x", "1 2"}) {
    absl::StatusOr<Ranges> parsed = ParseCpuList(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("is not a CPU list"), std::string_view::npos)
        << parsed.status();
  }
}

// Nodes numbered with a gap, one with no CPUs, one CPU no node lists (offline), and entries
// that are not nodes: columns follow the node numbers.
TEST(CpuNodesTest, MapsEachCpuToItsNodesColumn) {
  TempDir dir;
  WriteNode(dir, "node0", "0-1,4\n");
  WriteNode(dir, "node2", "2-3\n");
  WriteNode(dir, "node3", "\n");
  std::ofstream(dir.file("possible")) << "0-3\n";
  std::filesystem::create_directories(dir.file("power"));
  absl::StatusOr<CpuNodes> nodes = ReadCpuNodes(6, dir.path());
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(nodes->nodes, (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_EQ(nodes->column_of_cpu, (std::vector<uint32_t>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(nodes->ColumnOf(3), 1u);
  EXPECT_EQ(nodes->ColumnOf(99), 0u);  // beyond the possible CPUs
}

TEST(CpuNodesTest, AHostWithoutNumaHasEveryCpuOnNodeZero) {
  TempDir dir;
  absl::StatusOr<CpuNodes> nodes = ReadCpuNodes(4, dir.file("absent"));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(nodes->nodes, std::vector<uint32_t>{0});
  EXPECT_EQ(nodes->column_of_cpu, (std::vector<uint32_t>{0, 0, 0, 0}));
}

TEST(CpuNodesTest, ABadCpuListNamesItsFile) {
  TempDir dir;
  WriteNode(dir, "node0", "0-x\n");
  absl::StatusOr<CpuNodes> nodes = ReadCpuNodes(2, dir.path());
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.status().message().find(dir.file("node0/cpulist")), std::string_view::npos)
      << nodes.status();
}

}  // namespace
}  // namespace stagewatch
