// BPF program run time and count, as the kernel keeps them while stats are enabled.
#include "probes/program_stats.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "gtest/gtest.h"
#include "signals/sched/sched_probe.h"
#include "test_support.h"

namespace stagewatch {
namespace {

// The kernel's count of this thread's context switches, both kinds (/proc/thread-self/status).
uint64_t OwnSwitches() {
  std::istringstream status(testing::ReadFile("/proc/thread-self/status"));
  uint64_t n = 0, v = 0;
  for (std::string key; status >> key;) {
    if (key == "voluntary_ctxt_switches:" || key == "nonvoluntary_ctxt_switches:") {
      status >> v;
      n += v;
    }
  }
  return n;
}

// Sleeps of 500 us, each of which mostly switches this thread out and back, and the kernel's
// count of the switches they made: under emulation a sleep's timer can expire before the
// thread gets to schedule(), and that sleep does not switch.
uint64_t SwitchesOfShortSleeps(int sleeps) {
  const uint64_t before = OwnSwitches();
  for (int i = 0; i < sleeps; i++) usleep(500);
  return OwnSwitches() - before;
}

TEST(ProgramStatsTest, EveryLoadedProgramReportsItsRunsAndTime) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  // Stats stay on while this fd is open, whatever the sysctl says (BPF_ENABLE_STATS).
  const int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  ASSERT_GE(stats_fd, 0) << "BPF_ENABLE_STATS: " << strerror(errno);
  absl::Cleanup close_stats = [stats_fd] { close(stats_fd); };

  auto probe = SchedProbe::Start({.features = testing::ProbeFeaturesForTests()});
  ASSERT_TRUE(probe.ok()) << probe.status();
  const uint64_t own_switches = SwitchesOfShortSleeps(200);

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
  std::printf("sched_switch: %lu runs, %.3f ms, %.0f ns a run; %lu switches counted, %lu of "
              "them this thread's (the kernel's count)\n",
              sched_switch->run_count, sched_switch->run_time_ns / 1e6,
              static_cast<double>(sched_switch->run_time_ns) / sched_switch->run_count,
              switches_counted, own_switches);
  // Every switch the probe counted was one run of the program (it also runs for idle), and it
  // counted at least this thread's own.
  EXPECT_GE(sched_switch->run_count, switches_counted);
  EXPECT_GE(switches_counted, own_switches);
  EXPECT_GT(own_switches, 20u) << "the sleeps hardly switched: nothing was tested";
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
    const uint64_t own_switches = SwitchesOfShortSleeps(100);
    EXPECT_GT(own_switches, 10u) << "the sleeps hardly switched: nothing was tested";
    EXPECT_GE(switch_runs(), before + own_switches);
  }
  // Released: only the sysctl (or another process's hold, which this one cannot see) counts.
  EXPECT_EQ(BpfStatsEnabled(), sysctl_on);
}

}  // namespace
}  // namespace stagewatch
