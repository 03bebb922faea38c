// A discovered run's limits read from its cgroup files: the parsers on the kernel's own
// formats, and the reads on fixture trees standing in for a cgroup2 host and a v1 one.
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "runs/run_cgroup_files.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using testing::TempDir;

void Put(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(RunCgroupLimitsTest, SoftLimitIsNoneAtMaxOrV1sPageCounterMax) {
  EXPECT_EQ(SoftLimitOf("268435456\n", true), uint64_t{256} << 20);
  EXPECT_EQ(SoftLimitOf("max\n", true), std::nullopt);
  EXPECT_EQ(SoftLimitOf("134217728\n", false), uint64_t{128} << 20);
  EXPECT_EQ(SoftLimitOf("9223372036854771712\n", false), std::nullopt);
  EXPECT_EQ(SoftLimitOf("garbage", false), std::nullopt);
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
  TempDir dir;
  CgroupLayout layout;
  layout.key_root = layout.v2_root = dir.file("unified");
  layout.v2_has_memory = true;
  const std::string run = layout.key_root + "/stagewatch/train/job_1";
  Put(run + "/memory.current", "1048576\n");
  Put(run + "/memory.max", "536870912\n");
  Put(run + "/memory.high", "268435456\n");
  Put(run + "/cpu.max", "50000 100000\n");
  Put(run + "/cpu.weight", "200\n");
  const RunLimits l = ReadRunLimits(layout, "/stagewatch/train/job_1");
  EXPECT_EQ(l.memory_max_bytes, uint64_t{512} << 20);
  EXPECT_EQ(l.memory_high_bytes, uint64_t{256} << 20);
  EXPECT_EQ(l.cpu_max_cores, 0.5);
  EXPECT_EQ(l.cpu_weight, 200u);
}

TEST(RunCgroupLimitsTest, SamplesRereadTheLimitsEveryFewReadings) {
  TempDir dir;
  CgroupLayout layout;
  layout.mode = CgroupMode::kV1;
  layout.key = CGROUP_KEY_V1_MEMORY;
  layout.key_root = layout.v1_memory_root = dir.file("memory");
  layout.v1_roots = {{"memory", dir.file("memory")}, {"cpu", dir.file("cpu")}};
  const std::string mem = dir.file("memory/stagewatch/train/job_2");
  const std::string cpu = dir.file("cpu/stagewatch/train/job_2");
  Put(mem + "/memory.usage_in_bytes", "1048576\n");
  Put(mem + "/memory.limit_in_bytes", "9223372036854771712\n");
  Put(mem + "/memory.soft_limit_in_bytes", "134217728\n");
  Put(cpu + "/cpu.cfs_quota_us", "30000\n");
  Put(cpu + "/cpu.cfs_period_us", "100000\n");
  Put(cpu + "/cpu.shares", "1024\n");
  OpenFileBudget budget{0};
  RunCgroupFiles files(layout, "/stagewatch/train/job_2", &budget);
  EXPECT_FALSE(files.limits());
  ASSERT_TRUE(files.Read(absl::Now()));
  ASSERT_TRUE(files.limits());
  EXPECT_EQ(files.limits()->memory_max_bytes, std::nullopt);  // unlimited
  EXPECT_EQ(files.limits()->memory_high_bytes, uint64_t{128} << 20);
  EXPECT_DOUBLE_EQ(*files.limits()->cpu_max_cores, 0.3);
  EXPECT_EQ(files.limits()->cpu_weight, std::nullopt);

  Put(mem + "/memory.limit_in_bytes", "268435456\n");
  Put(cpu + "/cpu.cfs_quota_us", "60000\n");
  // A full reading each time: the usage moved.
  uint64_t usage = 1 << 20;
  auto full_read = [&] {
    Put(mem + "/memory.usage_in_bytes", std::to_string(++usage) + "\n");
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
