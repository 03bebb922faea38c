// The accuracy table's OOM rows: kills by kind against the kills the test made (SIGKILLs from a
// configured user-space killer, kernel OOM kills in limited cgroups), the kernel's own oom_kill
// counts, the kill anomaly, and the mismatch gauge staying 0 through a kill in a cgroup removed
// at once (its sign is unit:CollectorFieldsTest.OomKillsByKindAndTheMismatchSign).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <ctime>
#include <thread>

#include "accuracy_support.h"

namespace stagewatch::accuracy {
namespace {

using testing::TestCgroup;
using testing::ValueOr;

constexpr const char* kKiller = "sw-acc-killer";

std::string SelfExe() {
  char buf[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

// A user-space OOM killer as the agent is configured to trust: this binary, named kKiller.
void KillAsKiller(pid_t victim) {
  const pid_t killer = fork();
  if (killer == 0) {
    prctl(PR_SET_NAME, kKiller);
    _exit(kill(victim, SIGKILL) == 0 ? 0 : 1);
  }
  ASSERT_EQ(testing::WaitForChild(killer), 0);
}

TEST(AccuracyE2E, OomKillsByKindCgroupCountsAnomalyAndMismatchSign) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const std::string stage = StageName("oom");
  TestCgroup top(stage);
  Agent agent(StageConfig(stage, std::string("oom:\n  userspace_killers: [") + kKiller +
                                     "]\n  userspace_killer_paths: [\"" + SelfExe() + "\"]\n"));
  ASSERT_TRUE(agent.Ready()) << agent.log();
  auto metric = [&](const testing::Scrape& s, const std::string& family,
                    const std::string& labels = "") {
    return ValueOr(s, Series(family, stage, labels), -1);
  };
  const std::string kernel = "kind=\"kernel\"", userspace = "kind=\"userspace\"";
  ASSERT_EQ(metric(agent.Scrape(), "stagewatch_oom_kills_total", userspace), 0) << agent.log();

  // Two SIGKILLs from the killer; one from a process that is not one. Each victim is killed
  // once it is in the stage's cgroup (it names itself after joining).
  auto victim_in_stage = [&] {
    const pid_t victim = top.Spawn("sw-acc-victim", [] { pause(); });
    EXPECT_TRUE(testing::WaitUntil(
        [&] { return testing::ReadFile("/proc/" + std::to_string(victim) + "/comm") == "sw-acc-victim\n"; },
        2000));
    return victim;
  };
  for (int i = 0; i < 2; i++) {
    const pid_t victim = victim_in_stage();
    KillAsKiller(victim);
    ASSERT_EQ(testing::WaitForChild(victim), SIGKILL);
  }
  const pid_t spared = victim_in_stage();
  kill(spared, SIGKILL);
  ASSERT_EQ(testing::WaitForChild(spared), SIGKILL);

  // One kernel OOM kill in a limited run cgroup, which stays.
  TestCgroup run1(top, "run-1");
  run1.SetMemoryLimit(16 << 20);
  const double before_kill = std::time(nullptr);
  ASSERT_EQ(testing::WaitForChild(run1.Spawn("sw-acc-hog", testing::HogMemoryForever)), SIGKILL);
  const double after_kill = std::time(nullptr) + 1;
  testing::Scrape m;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = agent.Scrape();
        return metric(m, "stagewatch_oom_kills_total", kernel) == 1 &&
               metric(m, "stagewatch_oom_kills_cgroup_total") == 1;
      },
      5000))
      << agent.log();
  EXPECT_EQ(run1.OomKillCount(), 1u);
  EXPECT_EQ(metric(m, "stagewatch_oom_kills_total", userspace), 2);
  EXPECT_EQ(metric(m, "stagewatch_oom_kills_mismatch"), 0);
  EXPECT_GE(metric(m, "stagewatch_oom_last_kill_timestamp_seconds"), before_kill);
  EXPECT_LE(metric(m, "stagewatch_oom_last_kill_timestamp_seconds"), after_kill);
  // Every kill, by either kind, is an oom_kill anomaly.
  EXPECT_EQ(metric(m, "stagewatch_anomalies_total", "rule=\"oom_kill\""), 3);
  EXPECT_EQ(metric(m, "stagewatch_anomaly_active", "rule=\"oom_kill\""), 1);

  // A second kernel kill in a cgroup removed right after: the sampler reads the victim's own
  // oom_kill when the kill is traced, so the removal loses nothing and the counts agree.
  {
    TestCgroup run2(top, "run-2");
    run2.SetMemoryLimit(16 << 20);
    ASSERT_EQ(testing::WaitForChild(run2.Spawn("sw-acc-hog", testing::HogMemoryForever)), SIGKILL);
    ASSERT_EQ(run2.OomKillCount(), 1u);
    ASSERT_TRUE(testing::WaitUntil(
        [&] { return metric(agent.Scrape(), "stagewatch_oom_kills_cgroup_total") == 2; }, 5000))
        << agent.log();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // removed, a sample past
  m = agent.Scrape();
  std::printf("kills kernel %.0f userspace %.0f, cgroupfs %.0f, mismatch %.0f\n",
              metric(m, "stagewatch_oom_kills_total", kernel),
              metric(m, "stagewatch_oom_kills_total", userspace),
              metric(m, "stagewatch_oom_kills_cgroup_total"), metric(m, "stagewatch_oom_kills_mismatch"));
  EXPECT_EQ(metric(m, "stagewatch_oom_kills_total", kernel), 2);
  EXPECT_EQ(metric(m, "stagewatch_oom_kills_cgroup_total"), 2) << "the removed cgroup's kill kept";
  EXPECT_EQ(metric(m, "stagewatch_oom_kills_mismatch"), 0);  // cgroupfs minus traced
}

}  // namespace
}  // namespace stagewatch::accuracy
