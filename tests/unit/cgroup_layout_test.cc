#include <fstream>
#include <sstream>
#include <string>

#include "cgroup/layout.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

const std::string kFixtures = std::string(STAGEWATCH_FIXTURES_DIR) + "/cgroup";

std::string ReadFixture(const std::string& name) {
  std::ifstream in(kFixtures + "/mountinfo/" + name);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CgroupLayoutTest, PureV2WithMemoryKeysOnV2) {
  auto layout = DetectCgroupLayout(ReadFixture("v2.txt"), kFixtures + "/tree/v2");
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->mode, CgroupMode::kV2);
  EXPECT_EQ(layout->v2_root, "/sys/fs/cgroup");
  EXPECT_EQ(layout->v1_memory_root, "");
  EXPECT_TRUE(layout->v2_has_memory);
  EXPECT_EQ(layout->key, CGROUP_KEY_DEFAULT);
  EXPECT_EQ(layout->key_root, "/sys/fs/cgroup");
}

TEST(CgroupLayoutTest, PureV2WithoutMemoryControllerStillKeysOnV2) {
  auto layout = DetectCgroupLayout(ReadFixture("v2.txt"), kFixtures + "/tree/v2_nomem");
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->mode, CgroupMode::kV2);
  EXPECT_FALSE(layout->v2_has_memory);
  EXPECT_EQ(layout->key, CGROUP_KEY_DEFAULT);
  EXPECT_EQ(layout->key_root, "/sys/fs/cgroup");
}

TEST(CgroupLayoutTest, UnreadableControllersFileMeansNoMemory) {
  auto layout = DetectCgroupLayout(ReadFixture("v2.txt"), kFixtures + "/tree/does-not-exist");
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_FALSE(layout->v2_has_memory);
}

TEST(CgroupLayoutTest, LegacyV1KeysOnMemoryHierarchy) {
  auto layout = DetectCgroupLayout(ReadFixture("v1.txt"), kFixtures + "/tree/hybrid");
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->mode, CgroupMode::kV1);
  EXPECT_EQ(layout->v2_root, "");
  EXPECT_EQ(layout->v1_memory_root, "/sys/fs/cgroup/memory");
  EXPECT_FALSE(layout->v2_has_memory);
  EXPECT_EQ(layout->key, CGROUP_KEY_V1_MEMORY);
  EXPECT_EQ(layout->key_root, "/sys/fs/cgroup/memory");
}

// This development machine: v1 controllers plus cgroup2 at /sys/fs/cgroup/unified with no
// controllers enabled.
TEST(CgroupLayoutTest, HybridKeysOnV1MemoryAndKeepsV2Root) {
  auto layout = DetectCgroupLayout(ReadFixture("hybrid.txt"), kFixtures + "/tree/hybrid");
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->mode, CgroupMode::kHybrid);
  EXPECT_EQ(layout->v2_root, "/sys/fs/cgroup/unified");
  EXPECT_EQ(layout->v1_memory_root, "/sys/fs/cgroup/memory");
  EXPECT_FALSE(layout->v2_has_memory);
  EXPECT_EQ(layout->key, CGROUP_KEY_V1_MEMORY);
  EXPECT_EQ(layout->key_root, "/sys/fs/cgroup/memory");
}

TEST(CgroupLayoutTest, NoCgroupMountIsAClearError) {
  auto layout = DetectCgroupLayout(ReadFixture("none.txt"));
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(layout.status().message().find("no cgroup filesystem is mounted"),
            absl::string_view::npos);
  EXPECT_NE(layout.status().message().find("/proc/self/mountinfo"), absl::string_view::npos);
  EXPECT_FALSE(DetectCgroupLayout("").ok());
}

// A named v1 hierarchy (name=systemd) carries no controller, so cgroup2 next to it is still v2.
TEST(CgroupLayoutTest, NamedV1HierarchyDoesNotMakeHybrid) {
  const std::string text =
      "25 24 0:21 / /sys/fs/cgroup/systemd rw,relatime shared:10 - cgroup cgroup "
      "rw,xattr,name=systemd\n"
      "26 24 0:22 / /sys/fs/cgroup/unified rw,relatime shared:11 - cgroup2 cgroup2 rw\n";
  auto layout = DetectCgroupLayout(text, "/nonexistent");
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->mode, CgroupMode::kV2);
  EXPECT_EQ(layout->key, CGROUP_KEY_DEFAULT);
  EXPECT_EQ(layout->key_root, "/sys/fs/cgroup/unified");
}

TEST(CgroupLayoutTest, UnescapesMountPointsAndPrefersFirstMount) {
  const std::string text =
      "40 30 0:37 / /mnt/my\\040cgroups rw,relatime - cgroup2 cgroup2 rw\n"
      "41 30 0:37 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"
      "42 30 0:38 / /mnt/mem\\040one rw,relatime - cgroup cgroup rw,memory\n"
      "43 30 0:38 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n";
  auto layout = DetectCgroupLayout(text, "/nonexistent");
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->v2_root, "/mnt/my cgroups");
  EXPECT_EQ(layout->v1_memory_root, "/mnt/mem one");
  EXPECT_EQ(layout->mode, CgroupMode::kHybrid);
  EXPECT_EQ(layout->key_root, "/mnt/mem one");
}

TEST(CgroupLayoutTest, OptionalFieldsBeforeSeparatorAreSkipped) {
  // Several optional fields (shared:, master:) precede the " - " separator.
  const std::string text =
      "31 24 0:27 / /sys/fs/cgroup/memory rw,nosuid shared:16 master:3 propagate_from:2 - "
      "cgroup cgroup rw,memory\n";
  auto layout = DetectCgroupLayout(text);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->mode, CgroupMode::kV1);
  EXPECT_EQ(layout->v1_memory_root, "/sys/fs/cgroup/memory");
}

TEST(CgroupLayoutTest, V1WithoutMemoryAndNoV2IsAnError) {
  const std::string text =
      "28 24 0:24 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
  auto layout = DetectCgroupLayout(text);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(layout.status().message().find("memory"), absl::string_view::npos);
}

TEST(CgroupLayoutTest, ModeNames) {
  EXPECT_EQ(CgroupModeName(CgroupMode::kV1), "v1");
  EXPECT_EQ(CgroupModeName(CgroupMode::kHybrid), "hybrid");
  EXPECT_EQ(CgroupModeName(CgroupMode::kV2), "v2");
}

// Whatever the host is, detection must succeed on any Linux with cgroups and agree with itself.
TEST(CgroupLayoutTest, HostLayoutIsConsistent) {
  auto layout = DetectHostCgroupLayout();
  if (absl::IsFailedPrecondition(layout.status())) GTEST_SKIP() << layout.status();
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_FALSE(layout->key_root.empty());
  if (layout->key == CGROUP_KEY_V1_MEMORY) {
    EXPECT_EQ(layout->key_root, layout->v1_memory_root);
  } else {
    EXPECT_EQ(layout->key_root, layout->v2_root);
  }
}

}  // namespace
}  // namespace stagewatch
