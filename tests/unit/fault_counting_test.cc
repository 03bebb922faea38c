// Which source counts page faults: memory.stat wherever the layout gives every cgroup the
// memory controller, BPF elsewhere or when asked.
#include "signals/memory/fault_counting.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;

CgroupLayout V1() {
  return {.mode = CgroupMode::kHybrid, .key = CGROUP_KEY_V1_MEMORY,
          .key_root = "/sys/fs/cgroup/memory", .v2_root = "/sys/fs/cgroup/unified",
          .v1_memory_root = "/sys/fs/cgroup/memory"};
}
CgroupLayout V2(bool memory) {
  return {.mode = CgroupMode::kV2, .key = CGROUP_KEY_DEFAULT, .key_root = "/sys/fs/cgroup",
          .v2_root = "/sys/fs/cgroup", .v2_has_memory = memory};
}

TEST(FaultCountingTest, AutoReadsMemoryStatWhereTheMemoryControllerIsAndRunsNoMinorProgram) {
  FaultCounting v1 = ChooseFaultCounting(PageFaultSource::kAuto, V1());
  EXPECT_TRUE(v1.memcg);
  EXPECT_FALSE(v1.bpf_minor);
  EXPECT_FALSE(v1.bpf_when_uncovered);  // every v1 cgroup has the controller
  EXPECT_THAT(v1.why, HasSubstr("v1 memory controller"));

  FaultCounting v2 = ChooseFaultCounting(PageFaultSource::kAuto, V2(true));
  EXPECT_TRUE(v2.memcg);
  EXPECT_FALSE(v2.bpf_minor);
  EXPECT_TRUE(v2.bpf_when_uncovered);  // a subtree may turn it off
}

TEST(FaultCountingTest, AutoCountsWithBpfWithoutTheMemoryController) {
  FaultCounting c = ChooseFaultCounting(PageFaultSource::kAuto, V2(false));
  EXPECT_FALSE(c.memcg);
  EXPECT_TRUE(c.bpf_minor);
  EXPECT_THAT(c.why, HasSubstr("no memory controller"));
}

TEST(FaultCountingTest, AskedForOneSourceGetsIt) {
  FaultCounting bpf = ChooseFaultCounting(PageFaultSource::kBpf, V1());
  EXPECT_FALSE(bpf.memcg);
  EXPECT_TRUE(bpf.bpf_minor);
  FaultCounting memcg = ChooseFaultCounting(PageFaultSource::kMemcg, V2(false));
  EXPECT_TRUE(memcg.memcg);
  EXPECT_FALSE(memcg.bpf_minor);
  EXPECT_FALSE(memcg.bpf_when_uncovered);
}

}  // namespace
}  // namespace stagewatch
