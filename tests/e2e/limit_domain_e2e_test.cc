// The memory limit on a run's cgroup beneath an unlimited stage top, as launchers, Slurm and
// Kubernetes set it: the stage shows that limit, its headroom, time near it, the child's own
// v1 counters, and the limit-ETA anomaly before the OOM kill. Checked against the cgroup files.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::TestCgroup;
using testing::ValueOr;

constexpr uint64_t kMiB = 1 << 20;
// A stage of this process's own: other tests on the host may run a "validate" stage too.
const std::string kStageName = "validate-" + std::to_string(getpid());
const std::string kStage = "{pipeline_stage=\"" + kStageName + "\"}";

uint64_t FileValue(const std::string& path) { return std::stoull(testing::ReadFile(path)); }

std::string UsageFile(const TestCgroup& c) {
  return c.dir() + (c.v2() ? "/memory.current" : "/memory.usage_in_bytes");
}
std::string LimitFile(const TestCgroup& c) {
  return c.dir() + (c.v2() ? "/memory.max" : "/memory.limit_in_bytes");
}

std::string Event(const std::string& event) {
  return "stagewatch_memory_events_total{pipeline_stage=\"" + kStageName + "\",event=\"" + event +
         "\"}";
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string AgentConfig() {
  char config[] = "/tmp/stagewatch-limit-domain-e2e-XXXXXX";
  close(mkstemp(config));
  testing::WriteFile(config, "memory:\n  sample_interval: 100ms\n"
                             "anomalies:\n  limit_eta: {warmup: 3s, window: 4s, min_span: 2s}\n");
  return config;
}

TEST(LimitDomainE2E, AChildsLimitBeneathAnUnlimitedTopIsShownNearedCountedAndPagedBeforeTheKill) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup top("stagewatch/" + kStageName);
  TestCgroup run(top, "run-7");
  run.SetMemoryLimit(256 * kMiB);
  const std::string config = AgentConfig();
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  // Hold 240 MiB of 256 (94%) for 2 s, then fall back to 32 MiB and, after the detectors'
  // warm-up, climb 8 MiB every 250 ms into the limit.
  int go[2], held[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(held), 0);
  pid_t hog = run.Spawn("sw-run-climber", [&] {
    const size_t bytes = 240 * kMiB;
    char* p = static_cast<char*>(
        mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
    (void)!write(held[1], "x", 1);
    char c;
    (void)!read(go[0], &c, 1);
    munmap(p, bytes - 32 * kMiB);
    std::this_thread::sleep_for(std::chrono::seconds(5));
    for (;;) {
      testing::TouchAnonymous(8 * kMiB);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  close(held[1]);
  ASSERT_TRUE(testing::WaitUntil([&] { return FileValue(UsageFile(run)) > 240 * kMiB; }, 5000));
  const auto held_from = std::chrono::steady_clock::now();
  // The last pages may still be faulting in: the headroom is compared once all 240 MiB are held.
  char c;
  ASSERT_EQ(read(held[0], &c, 1), 1) << "the child died before holding its 240 MiB";
  testing::Scrape m;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = ParseExposition(agent.Get("/metrics").value_or(""));
        return ValueOr(m, "stagewatch_memory_near_limit_seconds_total" + kStage, 0) > 0;
      },
      5000))
      << agent.log();
  // Exactly the child's limit, though the stage's top is unlimited.
  EXPECT_EQ(ValueOr(m, "stagewatch_memory_limit_bytes" + kStage, 0), 256 * kMiB);
  EXPECT_EQ(ValueOr(m, "stagewatch_memory_limit_bytes" + kStage, 0),
            FileValue(LimitFile(run)));
  EXPECT_EQ(ValueOr(m, "stagewatch_memory_limit_domains" + kStage, 0), 2);
  // A sample taken after the child held it all (the agent samples every 100 ms).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  m = ParseExposition(agent.Get("/metrics").value_or(""));
  const double headroom = 256.0 * kMiB - FileValue(UsageFile(run));
  EXPECT_NEAR(ValueOr(m, "stagewatch_memory_headroom_bytes" + kStage, -1), headroom, 2 * kMiB);

  std::this_thread::sleep_for(std::chrono::seconds(2));
  m = ParseExposition(agent.Get("/metrics").value_or(""));
  const double held_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - held_from).count();
  const double near_s = ValueOr(m, "stagewatch_memory_near_limit_seconds_total" + kStage, 0);
  EXPECT_GT(near_s, held_s - 0.5);
  EXPECT_LT(near_s, held_s + 0.5);

  // Watch for the limit-ETA anomaly while the run climbs into its limit.
  std::atomic<bool> done = false;
  std::atomic<double> eta_at = 0;
  std::thread watcher([&] {
    while (!done) {
      testing::Scrape s = ParseExposition(agent.Get("/metrics").value_or(""));
      if (eta_at == 0 &&
          ValueOr(s, "stagewatch_anomalies_total{pipeline_stage=\"" + kStageName + "\",rule=\"limit_eta\"}",
                  0) >= 1) {
        eta_at = UnixNow();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  (void)!write(go[1], "x", 1);
  const int signal = testing::WaitForChild(hog);
  done = true;
  watcher.join();
  ASSERT_EQ(signal, SIGKILL);

  const double failcnt = run.v2() ? testing::KeyedValue(run.dir() + "/memory.events", "max")
                                  : FileValue(run.dir() + "/memory.failcnt");
  const std::string hits = run.v2() ? "max" : "failcnt";
  ASSERT_GT(failcnt, 0);
  ASSERT_EQ(run.OomKillCount(), 1u);
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = ParseExposition(agent.Get("/metrics").value_or(""));
        return ValueOr(m, Event("oom_kill"), 0) == 1 &&
               ValueOr(m, Event(hits), 0) == failcnt;
      },
      5000))
      << "oom_kill " << ValueOr(m, Event("oom_kill"), 0)
      << ", " << hits << " " << ValueOr(m, Event(hits), 0)
      << " vs the child's " << failcnt << "\n" << agent.log();

  const double kill_unix = ValueOr(m, "stagewatch_oom_last_kill_timestamp_seconds" + kStage, 0);
  ASSERT_GT(kill_unix, 0);
  ASSERT_GT(eta_at, 0) << "no limit-ETA anomaly before the kill\n" << agent.log();
  const double lead_ms = (kill_unix - eta_at) * 1000;
  std::printf("near limit %.2f s of %.2f s held; limit-ETA anomaly %.0f ms before the kill; "
              "%s %.0f\n", near_s, held_s, lead_ms, hits.c_str(), failcnt);
  EXPECT_GT(lead_ms, 0) << "the limit-ETA anomaly must come before the kill";
  unlink(config.c_str());
}

TEST(LimitDomainE2E, TwoLimitedRunsTheOneCloserToItsLimitGivesLimitAndHeadroom) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup top("stagewatch/" + kStageName);
  TestCgroup roomy(top, "run-1");
  TestCgroup tight(top, "run-2");
  roomy.SetMemoryLimit(512 * kMiB);
  tight.SetMemoryLimit(128 * kMiB);
  const std::string config = AgentConfig();
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  // 200 of 512 MiB (39%) has more bytes used, 96 of 128 MiB (75%) is closer to its limit.
  for (auto [cgroup, bytes] : {std::pair{&roomy, 200 * kMiB}, std::pair{&tight, 96 * kMiB}}) {
    cgroup->Spawn("sw-run-holder", [bytes] {
      testing::TouchAnonymous(bytes);
      pause();
    });
  }
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        return FileValue(UsageFile(roomy)) > 200 * kMiB && FileValue(UsageFile(tight)) > 96 * kMiB;
      },
      5000));
  testing::Scrape m;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = ParseExposition(agent.Get("/metrics").value_or(""));
        return ValueOr(m, "stagewatch_memory_limit_domains" + kStage, 0) == 3;
      },
      5000))
      << agent.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a sample after both settled
  m = ParseExposition(agent.Get("/metrics").value_or(""));
  EXPECT_EQ(ValueOr(m, "stagewatch_memory_limit_bytes" + kStage, 0), FileValue(LimitFile(tight)));
  EXPECT_EQ(ValueOr(m, "stagewatch_memory_limit_bytes" + kStage, 0), 128 * kMiB);
  const double headroom = 128.0 * kMiB - FileValue(UsageFile(tight));
  EXPECT_NEAR(ValueOr(m, "stagewatch_memory_headroom_bytes" + kStage, -1), headroom, 2 * kMiB);
  EXPECT_EQ(ValueOr(m, "stagewatch_memory_near_limit_seconds_total" + kStage, -1), 0);
  unlink(config.c_str());
}

}  // namespace
}  // namespace stagewatch
