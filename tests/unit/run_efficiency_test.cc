// CPU and memory efficiency as seff prints them, from a run's ledger figures.
#include "runs/run_efficiency.h"

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

RunRecord Ended(double wall_seconds) {
  RunRecord r;
  r.start = {.id = "r", .stage = "s", .start = absl::FromUnixSeconds(1000)};
  r.end = RunEnd{.end = absl::FromUnixSeconds(1000) + absl::Seconds(wall_seconds)};
  return r;
}

TEST(RunEfficiencyTest, CpuOverWallTimesItsQuotaAndPeakOverLimit) {
  RunRecord r = Ended(90);
  r.start.limits.cpu_max_cores = 0.5;
  r.end->facts.cpu_seconds = 36;
  r.end->facts.memory_peak_bytes = 768 << 20;
  r.end->facts.memory_limit_bytes = 1 << 30;
  const RunEfficiency e = EfficiencyOf(r, 8);
  EXPECT_DOUBLE_EQ(*e.cpu, 36.0 / (90 * 0.5));
  EXPECT_EQ(e.cpus_from, "cpu-max");
  EXPECT_DOUBLE_EQ(*e.memory, 0.75);
  EXPECT_EQ(CpuEfficiencyText(e, r), "80.0% of 1m30s × 0.5 CPUs (cpu-max)");
  EXPECT_EQ(MemoryEfficiencyText(e), "75.0% of a 1.00 GiB limit (peak 768.0 MiB)");
}

TEST(RunEfficiencyTest, APinnedRunCouldUseItsCpusetsCpusUnlessItsQuotaIsLower) {
  RunRecord r = Ended(10);
  r.start.limits.cpuset_cpus = "0-1,4";
  r.end->facts.cpu_seconds = 15;
  RunEfficiency e = EfficiencyOf(r, 8);
  EXPECT_EQ(e.cpus, 3);
  EXPECT_EQ(e.cpus_from, "cpuset-cpus");
  EXPECT_DOUBLE_EQ(*e.cpu, 0.5);
  r.start.limits.cpu_max_cores = 2;
  e = EfficiencyOf(r, 8);
  EXPECT_EQ(e.cpus, 2);
  EXPECT_EQ(e.cpus_from, "cpu-max");
  r.start.limits.cpuset_cpus = "0-15";  // more than the host has online
  r.start.limits.cpu_max_cores.reset();
  e = EfficiencyOf(r, 8);
  EXPECT_EQ(e.cpus, 8);
  EXPECT_EQ(e.cpus_from, "online CPUs");
}

TEST(RunEfficiencyTest, WithoutAQuotaTheHostsCpusAndTheStartLimit) {
  RunRecord r = Ended(10);
  r.start.limits.memory_max_bytes = 100 << 20;
  r.end->facts.cpu_seconds = 10;
  r.end->facts.memory_peak_bytes = 50 << 20;
  const RunEfficiency e = EfficiencyOf(r, 4);
  EXPECT_DOUBLE_EQ(*e.cpu, 0.25);
  EXPECT_EQ(e.cpus, 4);
  EXPECT_EQ(e.cpus_from, "online CPUs");
  EXPECT_DOUBLE_EQ(*e.memory, 0.5);
}

TEST(RunEfficiencyTest, UnknownFiguresAreNotObservedNotZero) {
  RunRecord r = Ended(10);
  RunEfficiency e = EfficiencyOf(r, 2);
  EXPECT_FALSE(e.cpu);
  EXPECT_FALSE(e.memory);
  EXPECT_EQ(CpuEfficiencyText(e, r), "not observed");
  EXPECT_EQ(MemoryEfficiencyText(e), "not observed");
  r.end->facts.memory_peak_bytes = 1 << 20;
  e = EfficiencyOf(r, 2);
  EXPECT_EQ(MemoryEfficiencyText(e), "no limit (peak 1.00 MiB)");
  RunRecord open = r;
  open.end.reset();
  EXPECT_FALSE(EfficiencyOf(open, 2).cpu);
}

}  // namespace
}  // namespace stagewatch
