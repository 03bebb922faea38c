// The accuracy table's memory rows: swap and every memory event against the cgroup's own
// files, reclaim stall time bounded by the cgroup's memory pressure, and the limit ETA against
// the climb the workload makes.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/strings/str_split.h"
#include "accuracy_support.h"

namespace stagewatch::accuracy {
namespace {

using testing::TestCgroup;
using testing::ValueOr;

constexpr uint64_t kMiB = 1 << 20;

uint64_t FileValue(const std::string& path) { return std::stoull(testing::ReadFile(path)); }

// The stage's memory events as the kernel counts them: every key of v2 memory.events, or v1's
// failcnt and oom_kill.
std::map<std::string, double> KernelEvents(const TestCgroup& c) {
  std::map<std::string, double> events;
  if (c.v2()) {
    for (absl::string_view line : absl::StrSplit(testing::ReadFile(c.dir() + "/memory.events"), '\n',
                                                 absl::SkipEmpty())) {
      std::vector<std::string> kv = absl::StrSplit(line, ' ');
      if (kv.size() == 2) events[kv[0]] = std::stod(kv[1]);
    }
  } else {
    events["failcnt"] = FileValue(c.dir() + "/memory.failcnt");
    events["oom_kill"] = testing::KeyedValue(c.dir() + "/memory.oom_control", "oom_kill");
  }
  return events;
}

// Swap in use: v2 memory.swap.current, v1 memsw minus usage (0 without swap accounting).
double KernelSwap(const TestCgroup& c) {
  if (c.v2()) return FileValue(c.dir() + "/memory.swap.current");
  if (access((c.dir() + "/memory.memsw.usage_in_bytes").c_str(), R_OK) != 0) return 0;
  return static_cast<double>(FileValue(c.dir() + "/memory.memsw.usage_in_bytes")) -
         FileValue(c.dir() + "/memory.usage_in_bytes");
}

// Writes `bytes` through the page cache, again and again, into a cgroup too small to cache it:
// the cgroup reclaims its own file pages on every pass.
void ChurnPageCache(const std::string& path, uint64_t bytes, int passes) {
  std::vector<char> chunk(kMiB, 0x5a);
  for (int p = 0; p < passes; p++) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) _exit(3);
    for (uint64_t i = 0; i < bytes; i += kMiB) {
      if (write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) _exit(4);
    }
    close(fd);
  }
}

TEST(AccuracyE2E, MemoryEventsSwapAndReclaimStallsMatchTheCgroupFiles) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const std::string stage = StageName("memory");
  TestCgroup cgroup(stage, {"pressure"});
  cgroup.SetMemoryLimit(32 * kMiB);
  if (cgroup.v2()) testing::WriteFile(cgroup.dir() + "/memory.high", std::to_string(24 * kMiB));
  Agent agent(StageConfig(stage));
  ASSERT_TRUE(agent.Ready()) << agent.log();

  // One task alone reclaims, on one CPU: the cgroup's memory pressure (PSI weighs its CPUs by
  // their busy time) is then that task's stall time, of which its reclaim is nearly all.
  const std::string file = "/var/tmp/sw-accuracy-cache-" + std::to_string(getpid());
  const pid_t churn = cgroup.Spawn("sw-acc-churn", [&] {
    testing::PinTo(1);
    ChurnPageCache(file, 96 * kMiB, 4);
  });
  ASSERT_EQ(testing::WaitForChild(churn), 0);
  unlink(file.c_str());
  const std::string count = Series("stagewatch_memory_reclaim_stall_seconds_count", stage);
  const std::string sum = Series("stagewatch_memory_reclaim_stall_seconds_sum", stage);
  const Pressure pressure = ReadPressure(cgroup.dir("pressure") + "/memory.pressure");
  // A scrape may show the collector's reading from while the churn still ran: wait for one that
  // has the stalls of the whole churn, or the deadline.
  testing::Scrape m;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = agent.Scrape();
        return ValueOr(m, count, 0) > 0 && ValueOr(m, sum, -1) >= 0.8 * pressure.some;
      },
      5000) || ValueOr(m, count, 0) > 0)
      << agent.log();
  const double stall_s = ValueOr(m, sum, -1);
  std::printf("reclaim: %.0f passes, %.6f s; memory pressure some %.6f s\n", ValueOr(m, count, 0),
              stall_s, pressure.some);
  EXPECT_GT(stall_s, 0.01);
  EXPECT_LE(stall_s, 1.02 * pressure.some + 0.001);
  EXPECT_GE(stall_s, 0.8 * pressure.some);

  // Then into the limit with anonymous memory: max, oom and oom_kill (v2), failcnt (v1).
  ASSERT_EQ(testing::WaitForChild(cgroup.Spawn("sw-acc-hog", testing::HogMemoryForever)), SIGKILL);
  std::map<std::string, double> truth;
  auto event = [&](const std::string& name) {
    return ValueOr(m, Series("stagewatch_memory_events_total", stage, "event=\"" + name + "\""), -1);
  };
  const bool settled = testing::WaitUntil(
      [&] {
        truth = KernelEvents(cgroup);
        m = agent.Scrape();
        for (const auto& [name, value] : truth) {
          if (event(name) != value) return false;
        }
        return true;
      },
      5000);
  for (const auto& [name, value] : truth) {
    std::printf("memory event %s: kernel %.0f, /metrics %.0f\n", name.c_str(), value, event(name));
    EXPECT_EQ(event(name), value) << name;
  }
  EXPECT_TRUE(settled) << agent.log();
  EXPECT_GT(truth[cgroup.v2() ? "max" : "failcnt"], 0);
  EXPECT_EQ(truth["oom_kill"], 1);
  EXPECT_EQ(ValueOr(m, Series("stagewatch_memory_swap_bytes", stage), -1), KernelSwap(cgroup));
}

TEST(AccuracyE2E, LimitEtaFollowsAKnownClimbAndRaisesItsAnomaly) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const std::string stage = StageName("eta");
  TestCgroup cgroup(stage);
  constexpr uint64_t kLimit = 256 * kMiB;
  constexpr double kRate = 20.0 * kMiB;  // 4 MiB every 200 ms
  cgroup.SetMemoryLimit(kLimit);
  Agent agent(StageConfig(stage, "anomalies:\n  limit_eta: {warmup: 3s, window: 4s, min_span: 2s}\n"));
  ASSERT_TRUE(agent.Ready()) << agent.log();
  const pid_t climber = cgroup.Spawn("sw-acc-climb", [] {
    for (;;) {
      testing::TouchAnonymous(4 * kMiB);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  const std::string usage_file = cgroup.dir() + (cgroup.v2() ? "/memory.current" : "/memory.usage_in_bytes");
  const std::string eta = Series("stagewatch_memory_limit_eta_seconds", stage);
  const std::string rule = "rule=\"limit_eta\"";
  testing::Scrape m;
  double expected = 0;
  // Sampled where the climb has a trend, before the limit.
  const bool seen = testing::WaitUntil(
      [&] {
        m = agent.Scrape();
        const double usage = FileValue(usage_file);
        expected = (kLimit - usage) / kRate;
        // The detector fires past half the limit with an ETA under its threshold.
        return ValueOr(m, eta, -1) > 0 && usage > 0.55 * kLimit &&
               ValueOr(m, Series("stagewatch_anomaly_active", stage, rule), -1) == 1;
      },
      12000);
  const double got = ValueOr(m, eta, -1);
  const double active = ValueOr(m, Series("stagewatch_anomaly_active", stage, rule), -1);
  const double fired = ValueOr(m, Series("stagewatch_anomalies_total", stage, rule), -1);
  ASSERT_EQ(testing::WaitForChild(climber), SIGKILL);
  std::printf("limit ETA %.2f s, by the climb %.2f s; limit_eta active %.0f, fired %.0f\n", got,
              expected, active, fired);
  ASSERT_TRUE(seen) << agent.log();
  EXPECT_NEAR(got, expected, 0.35 * expected + 0.5);
  EXPECT_EQ(active, 1);
  EXPECT_EQ(fired, 1);
}

}  // namespace
}  // namespace stagewatch::accuracy
