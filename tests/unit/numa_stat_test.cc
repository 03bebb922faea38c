#include "cgroup/numa_stat.h"

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "cgroup_file_tree.h"
#include "cgroupfs_fixtures.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

using testing::Contains;

// A stage top's memory.numa_stat on a v1 host (Linux 6.18, one node), in pages.
constexpr char kV1[] =
    "total=3768 N0=3768\n"
    "file=94 N0=94\n"
    "anon=0 N0=0\n"
    "unevictable=3674 N0=3674\n"
    "hierarchical_total=1076403 N0=1076403\n"
    "hierarchical_file=788424 N0=788424\n"
    "hierarchical_anon=284305 N0=284305\n"
    "hierarchical_unevictable=3674 N0=3674\n";

// A stage top's on cgroup2 with two nodes, in bytes (Linux 6.1; some lines left out).
constexpr char kV2TwoNodes[] =
    "anon N0=1052672 N1=268435456\n"
    "file N0=4096 N1=8192\n"
    "kernel_stack N0=16384 N1=0\n"
    "pagetables N0=57344 N1=0\n"
    "shmem N0=0 N1=0\n"
    "file_mapped N0=0 N1=0\n"
    "anon_thp N0=0 N1=0\n"
    "inactive_anon N0=1040384 N1=268435456\n"
    "active_anon N0=12288 N1=0\n"
    "unevictable N0=0 N1=0\n"
    "slab_reclaimable N0=12568 N1=0\n";

TEST(NumaStatTest, V1TakesTheHierarchicalLinesInPages) {
  absl::StatusOr<NumaMemory> m = ParseNumaStatV1(kV1, 4096, "memory.numa_stat");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 1u);
  EXPECT_EQ(m->at(0).anon_bytes, 284305ull * 4096);  // the runs' memory, not the top's own 0
  EXPECT_EQ(m->at(0).file_bytes, 788424ull * 4096);
}

TEST(NumaStatTest, V1WithoutHierarchicalLinesTakesTheCgroupsOwn) {
  absl::StatusOr<NumaMemory> m = ParseNumaStatV1(
      "total=10 N0=4 N1=6\nfile=3 N0=1 N1=2\nanon=7 N0=3 N1=4\nunevictable=0 N0=0 N1=0\n", 65536,
      "memory.numa_stat");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->at(0).anon_bytes, 3u * 65536);
  EXPECT_EQ(m->at(1).anon_bytes, 4u * 65536);
  EXPECT_EQ(m->at(1).file_bytes, 2u * 65536);
}

TEST(NumaStatTest, V2TakesAnonAndFileInBytesPerNode) {
  absl::StatusOr<NumaMemory> m = ParseNumaStatV2(kV2TwoNodes, "memory.numa_stat");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ(m->at(0).anon_bytes, 1052672u);  // "anon", not "anon_thp" nor "inactive_anon"
  EXPECT_EQ(m->at(0).file_bytes, 4096u);
  EXPECT_EQ(m->at(1).anon_bytes, 268435456u);
  EXPECT_EQ(m->at(1).file_bytes, 8192u);
}

TEST(NumaStatTest, BadTextNamesTheFileAndTheLine) {
  struct Case {
    bool v2;
    const char* text;
    const char* says;
  } cases[] = {
      {true, "", "empty"},
      {true, "anon N0=1\nfile N0=2", "truncated"},
      {true, "anon N0=x\nfile N0=2\n",
       "line 1 \"anon N0=x\": \"N0=x\" is not \"N<node>=<number>\""},
      {true, "anon 0=1\nfile N0=2\n", "line 1"},
      {true, "anon N0=1\nfile N0=-2\n", "line 2"},
      {true, "anon N0=1\n\nfile N0=2\n", "line 2 \"\": empty line"},
      {true, "anon N0=1\n", "no \"file\" line"},
      {true, kV1, "line 1 \"total=3768 N0=3768\": expected \"name N0=bytes"},  // v1's
      {false, kV2TwoNodes, "line 1 \"anon N0=1052672 N1=268435456\": expected \"name=pages"},
      {false, "hierarchical_anon=1 N0=1\n", "no \"hierarchical_file\" line"},
      {false, "total=x N0=1\n", "line 1"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<NumaMemory> m =
        c.v2 ? ParseNumaStatV2(c.text, "/cg/memory.numa_stat")
             : ParseNumaStatV1(c.text, 4096, "/cg/memory.numa_stat");
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_TRUE(Contains(m.status().message(), "/cg/memory.numa_stat")) << m.status();
    EXPECT_TRUE(Contains(m.status().message(), c.says)) << m.status() << " wants " << c.says;
  }
}

TEST(NumaStatTest, ReadsTheCgroupsFileInEitherVersion) {
  testing::CgroupFileTree tree;
  tree.Write("memory", "/stage", {{"memory.numa_stat", kV1}});
  tree.Write("unified", "/stage", {{"memory.numa_stat", kV2TwoNodes}});
  absl::StatusOr<NumaMemory> v1 = ReadNumaStat(tree.V1(), "/stage");
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_EQ(v1->at(0).file_bytes, 788424ull * uint64_t(sysconf(_SC_PAGESIZE)));
  absl::StatusOr<NumaMemory> v2 = ReadNumaStat(tree.V2(), "/stage");
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->at(1).anon_bytes, 268435456u);
}

TEST(NumaStatTest, MissingFileIsNotFound) {
  testing::CgroupFileTree tree;
  tree.Write("unified", "/stage", {{"memory.current", "0\n"}});  // a kernel without CONFIG_NUMA
  EXPECT_TRUE(absl::IsNotFound(ReadNumaStat(tree.V2(), "/stage").status()));
}

TEST(NumaStatTest, AvailabilityFollowsTheKernelsNumaSupport) {
  testing::TempDir sys;
  testing::CgroupFileTree tree;
  tree.Write("unified", "/stage", {{"memory.current", "0\n"}});
  absl::Status none = CheckNumaStatAvailable(tree.V2(), sys.path());  // no node/ directory
  EXPECT_TRUE(absl::IsNotFound(none)) << none;
  EXPECT_TRUE(Contains(none.message(), "CONFIG_NUMA")) << none;
  EXPECT_TRUE(Contains(none.message(), "stagewatch_memory_numa_bytes")) << none;
  std::filesystem::create_directories(sys.file("node/node0"));
  EXPECT_TRUE(CheckNumaStatAvailable(tree.V2(), sys.path()).ok());
  // v1: the memory hierarchy's root file says.
  EXPECT_TRUE(absl::IsNotFound(CheckNumaStatAvailable(tree.V1(), sys.path())));
  tree.Write("memory", "/", {{"memory.numa_stat", kV1}});
  EXPECT_TRUE(CheckNumaStatAvailable(tree.V1(), sys.path()).ok());
  CgroupLayout no_memory = tree.V2();
  no_memory.v2_has_memory = false;
  EXPECT_EQ(CheckNumaStatAvailable(no_memory, sys.path()).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace stagewatch
