// A discovered run's limits read from its cgroup files: the parsers on the kernel's own
// formats, and the reads on fixture trees standing in for a cgroup2 host and a v1 one.
#include "cgroup/cpu_limits.h"
#include "cgroup/memory_stats.h"
#include "cgroup_file_tree.h"
#include "gtest/gtest.h"
#include "runs/run_cgroup_files.h"

namespace stagewatch {
namespace {

using testing::CgroupFileTree;

// A run's soft limit is its file's, parsed as the hard limits are (ReadMemorySoftLimit); one
// that does not parse is none.
TEST(RunCgroupLimitsTest, SoftLimitIsNoneAtMaxOrV1sPageCounterMax) {
  EXPECT_EQ(ParseMemoryLimitV2("268435456\n", "memory.high").value(), uint64_t{256} << 20);
  EXPECT_EQ(ParseMemoryLimitV2("max\n", "memory.high").value(), std::nullopt);
  EXPECT_EQ(ParseMemoryLimitV1("134217728\n", "soft limit").value(), uint64_t{128} << 20);
  EXPECT_EQ(ParseMemoryLimitV1("9223372036854771712\n", "soft limit").value(), std::nullopt);
  EXPECT_FALSE(ParseMemoryLimitV1("garbage", "soft limit").ok());
  CgroupFileTree tree;
  tree.Write("memory", "/stagewatch/s/r",
             {{"memory.usage_in_bytes", "1048576\n"}, {"memory.soft_limit_in_bytes", "garbage"}});
  EXPECT_EQ(ReadRunLimits(tree.V1(), "/stagewatch/s/r").memory_high_bytes, std::nullopt);
}

TEST(RunCgroupLimitsTest, CpuMaxIsTheQuotaOverThePeriod) {
  EXPECT_DOUBLE_EQ(*CpuMaxCoresOf("50000 100000\n", "", true), 0.5);
  EXPECT_DOUBLE_EQ(*CpuMaxCoresOf("150000 50000\n", "", true), 3.0);
  EXPECT_EQ(CpuMaxCoresOf("max 100000\n", "", true), std::nullopt);
  EXPECT_DOUBLE_EQ(*CpuMaxCoresOf("20000\n", "100000\n", false), 0.2);
  EXPECT_EQ(CpuMaxCoresOf("-1\n", "100000\n", false), std::nullopt);
  EXPECT_EQ(CpuMaxCoresOf("20000\n", "0\n", false), std::nullopt);
  EXPECT_EQ(CpuMaxCoresOf("20000", "", true), std::nullopt);  // no period
}

TEST(RunCgroupLimitsTest, WeightIsNoneAtTheDefaultAndV1SharesConvert) {
  EXPECT_EQ(CpuWeightOf("100\n", true), std::nullopt);
  EXPECT_EQ(CpuWeightOf("250\n", true), 250u);
  EXPECT_EQ(CpuWeightOf("1024\n", false), std::nullopt);
  EXPECT_EQ(CpuWeightOf("512\n", false), 50u);
  EXPECT_EQ(CpuWeightOf("2048\n", false), 200u);
  EXPECT_EQ(CpuWeightOf("2\n", false), 1u);  // v1's least, cgroup2's least
  EXPECT_EQ(CpuWeightOf("", false), std::nullopt);
}

TEST(RunCgroupLimitsTest, ReadsEveryLimitOfAV2Cgroup) {
  CgroupFileTree tree;
  const CgroupLayout layout = tree.V2();
  tree.Write("unified", "/stagewatch/train/job_1",
             {{"memory.current", "1048576\n"}, {"memory.max", "536870912\n"},
              {"memory.high", "268435456\n"}, {"cpu.max", "50000 100000\n"},
              {"cpu.weight", "200\n"}});
  const RunLimits l = ReadRunLimits(layout, "/stagewatch/train/job_1");
  EXPECT_EQ(l.memory_max_bytes, uint64_t{512} << 20);
  EXPECT_EQ(l.memory_high_bytes, uint64_t{256} << 20);
  EXPECT_EQ(l.cpu_max_cores, 0.5);
  EXPECT_EQ(l.cpu_weight, 200u);
}

TEST(RunCgroupLimitsTest, SamplesRereadTheLimitsEveryFewReadings) {
  CgroupFileTree tree;
  const CgroupLayout layout = tree.V1();
  const std::string run = "/stagewatch/train/job_2";
  tree.Write("memory", run,
             {{"memory.usage_in_bytes", "1048576\n"},
              {"memory.limit_in_bytes", "9223372036854771712\n"},
              {"memory.soft_limit_in_bytes", "134217728\n"}});
  tree.Write("cpu", run,
             {{"cpu.cfs_quota_us", "30000\n"}, {"cpu.cfs_period_us", "100000\n"},
              {"cpu.shares", "1024\n"}});
  OpenCgroupFiles budget{0};
  RunCgroupFiles files(layout, run, &budget);
  EXPECT_FALSE(files.limits());
  ASSERT_TRUE(files.Read(absl::Now()));
  ASSERT_TRUE(files.limits());
  EXPECT_EQ(files.limits()->memory_max_bytes, std::nullopt);  // unlimited
  EXPECT_EQ(files.limits()->memory_high_bytes, uint64_t{128} << 20);
  EXPECT_DOUBLE_EQ(*files.limits()->cpu_max_cores, 0.3);
  EXPECT_EQ(files.limits()->cpu_weight, std::nullopt);

  tree.Write("memory", run, {{"memory.limit_in_bytes", "268435456\n"}});
  tree.Write("cpu", run, {{"cpu.cfs_quota_us", "60000\n"}});
  // A full reading each time: the usage moved.
  uint64_t usage = 1 << 20;
  auto full_read = [&] {
    tree.Write("memory", run, {{"memory.usage_in_bytes", std::to_string(++usage) + "\n"}});
    ASSERT_TRUE(files.Read(absl::Now()));
  };
  full_read();
  // memory-max on every full reading; the others on the kLimitsEvery-th.
  EXPECT_EQ(files.limits()->memory_max_bytes, uint64_t{256} << 20);
  EXPECT_DOUBLE_EQ(*files.limits()->cpu_max_cores, 0.3);
  for (int i = 2; i < RunCgroupFiles::kLimitsEvery; ++i) full_read();
  full_read();
  EXPECT_DOUBLE_EQ(*files.limits()->cpu_max_cores, 0.6);
}

}  // namespace
}  // namespace stagewatch
