// A stage heading for its memory limit, seen through the built agent's /metrics and checked
// against the cgroup files the numbers come from.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>
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

// The cgroup files each figure comes from, in v1 or v2 (pure v2 counts memory.stat
// hierarchically under plain names, and has no failcnt: memory.events "max" counts the
// times usage hit the limit).
struct MemoryFiles {
  std::string usage, limit, peak, inactive_file, pgfault, limit_hits, limit_hits_event;
};
MemoryFiles FilesFor(const TestCgroup& cgroup) {
  if (cgroup.v2()) {
    return {"memory.current", "memory.max",    "memory.peak", "inactive_file",
            "pgfault",        "memory.events", "max"};
  }
  return {"memory.usage_in_bytes", "memory.limit_in_bytes", "memory.max_usage_in_bytes",
          "total_inactive_file",   "total_pgfault",         "memory.failcnt",
          "failcnt"};
}

double LimitHits(const std::string& dir, const MemoryFiles& f) {
  const std::string path = dir + "/" + f.limit_hits;
  return f.limit_hits == "memory.failcnt" ? std::stoull(testing::ReadFile(path))
                                          : testing::KeyedValue(path, f.limit_hits_event);
}

TEST(MemoryE2E, AStageNearItsLimitShowsUsageLimitNearLimitTimePeakEventsAndTasks) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup train("stagewatch/train", {"pressure"});
  const MemoryFiles files = FilesFor(train);
  train.SetMemoryLimit(64 * kMiB);
  char config[] = "/tmp/stagewatch-memory-e2e-XXXXXX";
  close(mkstemp(config));
  testing::WriteFile(config, "memory:\n  sample_interval: 100ms\n");
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  // Hold 60 MiB of a 64 MiB limit (above 90%) for 2 s, then run into the limit.
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t hog = train.Spawn("sw-mem-hog", [&] {
    testing::TouchAnonymous(60 * kMiB);
    char c;
    (void)!read(go[0], &c, 1);
    testing::HogMemoryForever();
  });
  const std::string dir = train.dir();
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return std::stoull(testing::ReadFile(dir + "/" + files.usage)) > 60 * kMiB; },
      5000));
  const auto held_from = std::chrono::steady_clock::now();

  const std::string t = R"({pipeline_stage="train"})";
  testing::Scrape m;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = ParseExposition(agent.Get("/metrics").value_or(""));
        // Figures come from the sampler's snapshot: wait for one taken while the 60 MiB is held.
        return ValueOr(m, "stagewatch_memory_limit_bytes" + t, 0) == 64 * kMiB &&
               ValueOr(m, "stagewatch_memory_near_limit_seconds_total" + t, 0) > 0;
      },
      5000))
      << agent.log();
  // Task states come from the trackers' collection, every few samples: one that saw the hog.
  testing::WaitForTrackerCollection();
  m = ParseExposition(agent.Get("/metrics").value_or(""));
  EXPECT_EQ(ValueOr(m, "stagewatch_memory_limit_bytes" + t, 0),
            std::stoull(testing::ReadFile(dir + "/" + files.limit)));
  const double usage = std::stoull(testing::ReadFile(dir + "/" + files.usage));
  EXPECT_NEAR(ValueOr(m, "stagewatch_memory_usage_bytes" + t, 0), usage, 0.02 * usage);
  const double inactive = testing::KeyedValue(dir + "/memory.stat", files.inactive_file);
  EXPECT_NEAR(ValueOr(m, "stagewatch_memory_working_set_bytes" + t, 0), usage - inactive,
              0.02 * usage);
  EXPECT_EQ(ValueOr(m, R"(stagewatch_tasks{pipeline_stage="train",state="sleeping"})", -1), 1);

  std::this_thread::sleep_for(std::chrono::seconds(2));
  (void)!write(go[1], "x", 1);
  ASSERT_EQ(testing::WaitForChild(hog), SIGKILL);
  const double held_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - held_from).count();

  const double failcnt = LimitHits(dir, files);
  const double peak = std::stoull(testing::ReadFile(dir + "/" + files.peak));
  const double pgfault = testing::KeyedValue(dir + "/memory.stat", files.pgfault);
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = ParseExposition(agent.Get("/metrics").value_or(""));
        // The sampler reads the kernel's peak within its 100 ms interval.
        return ValueOr(m, "stagewatch_memory_peak_bytes" + t, 0) == peak &&
               ValueOr(m, R"(stagewatch_page_faults_total{pipeline_stage="train",fault_type="minor"})", 0) >= 0.98 * pgfault &&
               ValueOr(m, R"(stagewatch_memory_events_total{pipeline_stage="train",event="oom_kill"})", 0) == 1 &&
               ValueOr(m, R"(stagewatch_memory_events_total{pipeline_stage="train",event=")" +
                       files.limit_hits_event + R"("})", 0) == failcnt;
      },
      5000))
      << agent.log();
  const double near_s = ValueOr(m, "stagewatch_memory_near_limit_seconds_total" + t, 0);
  const double faults = ValueOr(m, R"(stagewatch_page_faults_total{pipeline_stage="train",fault_type="minor"})", 0) +
                        ValueOr(m, R"(stagewatch_page_faults_total{pipeline_stage="train",fault_type="major"})", 0);
  std::printf("near limit %.2f s of %.2f s held; peak %.0f MiB; %s %.0f; faults exported %.0f "
              "memory.stat %.0f\n", near_s, held_s, ValueOr(m, "stagewatch_memory_peak_bytes" + t, 0) / kMiB,
              files.limit_hits_event.c_str(), failcnt, faults, pgfault);
  EXPECT_GT(near_s, held_s - 0.5);
  EXPECT_LT(near_s, held_s + 1.0);  // plus the run into the limit
  EXPECT_EQ(ValueOr(m, "stagewatch_memory_peak_bytes" + t, 0), peak);
  EXPECT_GT(failcnt, 0);
  EXPECT_NEAR(faults, pgfault, 0.02 * pgfault);

  const std::string pressure = testing::ReadFile(train.dir("pressure") + "/memory.pressure");
  const double some_s = std::stoull(pressure.substr(pressure.find("total=") + 6)) * 1e-6;
  EXPECT_NEAR(ValueOr(m, "stagewatch_pressure_memory_waiting_seconds_total" + t, -1), some_s,
              0.01 * some_s + 0.001);

  auto [rc, lint] = testing::RunWithInput("promtool check metrics", *agent.Get("/metrics"));
  EXPECT_EQ(rc, 0) << lint;
  unlink(config);
}

}  // namespace
}  // namespace stagewatch
