// BPF program run time and count, as the kernel keeps them while stats are enabled.
#include "probes/program_stats.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include "absl/cleanup/cleanup.h"
#include "gtest/gtest.h"
#include "probes/sched_probe.h"
#include "test_support.h"

namespace stagewatch {
namespace {

TEST(ProgramStatsTest, EveryLoadedProgramReportsItsRunsAndTime) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  // Stats stay on while this fd is open, whatever the sysctl says (BPF_ENABLE_STATS).
  const int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  ASSERT_GE(stats_fd, 0) << "BPF_ENABLE_STATS: " << strerror(errno);
  absl::Cleanup close_stats = [stats_fd] { close(stats_fd); };

  auto probe = SchedProbe::Start({.features = testing::ProbeFeaturesForTests()});
  ASSERT_TRUE(probe.ok()) << probe.status();
  for (int i = 0; i < 200; i++) usleep(500);  // each sleep switches out once, then back from idle

  uint64_t switches_counted = 0;
  for (const auto& [id, s] : (*probe)->ReadCgroups()) {
    switches_counted += s.voluntary_switches + s.nonvoluntary_switches;
  }
  const std::vector<ProgramStats> stats = (*probe)->program_stats();
  const ProgramStats* sched_switch = nullptr;
  for (const ProgramStats& p : stats) {
    EXPECT_NE(p.program, "sched_wakeup_raw") << "a program that was not loaded is listed";
    if (p.program == "sched_switch_raw" || p.program == "sched_switch_btf") sched_switch = &p;
  }
  ASSERT_NE(sched_switch, nullptr);
  std::printf("sched_switch: %lu runs, %.3f ms, %.0f ns a run; %lu switches counted\n",
              sched_switch->run_count, sched_switch->run_time_ns / 1e6,
              static_cast<double>(sched_switch->run_time_ns) / sched_switch->run_count,
              switches_counted);
  // Every switch the probe counted was one run of the program (it also runs for idle).
  EXPECT_GE(sched_switch->run_count, switches_counted);
  EXPECT_GT(switches_counted, 150u);
  EXPECT_GT(sched_switch->run_time_ns, 0u);
}

// The hold behind --bpf.stats: the kernel counts while it lives, and this process says so.
TEST(ProgramStatsTest, AHoldCountsRunTimeForAsLongAsItLives) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const bool sysctl_on = testing::ReadFile("/proc/sys/kernel/bpf_stats_enabled")[0] == '1';
  auto probe = SchedProbe::Start({.features = ProbeKernelFeatures()});
  ASSERT_TRUE(probe.ok()) << probe.status();
  auto switch_runs = [&] {
    uint64_t n = 0;
    for (const ProgramStats& p : (*probe)->program_stats()) {
      if (p.program.starts_with("sched_switch")) n += p.run_count;
    }
    return n;
  };
  {
    absl::StatusOr<std::unique_ptr<BpfStatsHold>> hold = BpfStatsHold::Acquire();
    ASSERT_TRUE(hold.ok()) << hold.status();
    EXPECT_TRUE(BpfStatsEnabled());
    const uint64_t before = switch_runs();
    for (int i = 0; i < 100; i++) usleep(500);
    EXPECT_GT(switch_runs(), before + 100);
  }
  // Released: only the sysctl (or another process's hold, which this one cannot see) counts.
  EXPECT_EQ(BpfStatsEnabled(), sysctl_on);
}

}  // namespace
}  // namespace stagewatch
