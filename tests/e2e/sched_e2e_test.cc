// A starved stage, seen through the built agent's /metrics: run-queue latency, who preempts
// it, its throttling, and the cgroup's own CPU accounting and pressure beside the traced time.
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::TestCgroup;
using testing::ValueOr;

void HogCpu0For(std::chrono::milliseconds d) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof(set), &set);
  const auto end = std::chrono::steady_clock::now() + d;
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

// PSI "some" total in µs from a pressure file.
uint64_t PsiSomeTotal(const std::string& path) {
  const std::string text = testing::ReadFile(path);
  const size_t at = text.find("total=");
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + 6));
}

TEST(SchedE2E, AStarvedStageShowsLatencyPreemptionAndThrottling) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup validate("stagewatch/validate", {"cpu", "cpuacct", "pressure"});
  TestCgroup train("stagewatch/train", {"cpu", "cpuacct", "pressure"});
  // validate may use 30% of a CPU: it is throttled as well as preempted.
  validate.SetCpuQuota(30000);

  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  pid_t v = validate.Spawn("sw-validate", [] { HogCpu0For(std::chrono::milliseconds(2000)); });
  pid_t t = train.Spawn("sw-train", [] { HogCpu0For(std::chrono::milliseconds(2000)); });
  ASSERT_EQ(testing::WaitForChild(v), 0);
  ASSERT_EQ(testing::WaitForChild(t), 0);

  // Reaped is not yet still: a reaped child may still be in its last switch (exit_notify wakes
  // the parent first), a few ms under emulation, and its last slice may throttle the cgroup
  // once more; the bandwidth timer runs a last period or two. The kernel's figures are read
  // once two reads a few periods apart agree.
  const std::string stat = validate.dir("cpu") + "/cpu.stat";
  const std::string pressure = validate.dir("pressure") + "/cpu.pressure";
  auto kernel_figures = [&] {
    return std::vector<double>{double(testing::KeyedValue(stat, "nr_periods")),
                               double(testing::KeyedValue(stat, "nr_throttled")),
                               validate.v2() ? testing::KeyedValue(stat, "throttled_usec") * 1e-6
                                             : testing::KeyedValue(stat, "throttled_time") * 1e-9,
                               validate.CpuUsageNs() * 1e-9, double(PsiSomeTotal(pressure)) * 1e-6};
  };
  std::vector<double> still = kernel_figures();
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::vector<double> now = kernel_figures();
        return std::exchange(still, now) == now;
      },
      10000))
      << "validate's cpu.stat and pressure kept moving with no task in it";
  const double nr_periods = still[0], nr_throttled = still[1], throttled_s = still[2],
               usage_s = still[3], psi_some_s = still[4];
  ASSERT_GT(nr_throttled, 0);

  const std::string v_label = R"({pipeline_stage="validate"})";
  testing::Scrape m;
  // Cgroups are named by a walk at most once a second, and cpu.stat reaches /metrics through
  // the sampler's snapshot (memory.sample_interval, 1 s): wait for the counts to land (a scrape
  // takes a good part of a second under emulation, in the VM stage).
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        std::optional<std::string> body = agent.Get("/metrics");
        if (!body) return false;
        m = ParseExposition(*body);
        return ValueOr(m, "stagewatch_cpu_cfs_throttled_periods_total" + v_label, 0) == nr_throttled &&
               ValueOr(m, "stagewatch_cpu_cfs_periods_total" + v_label, 0) == nr_periods &&
               ValueOr(m, "stagewatch_cpu_seconds_total" + v_label, 0) > 0.9 * usage_s &&
               std::abs(ValueOr(m, "stagewatch_cgroup_cpu_usage_seconds_total" + v_label, 0) -
                        usage_s) < 1e-6;
      },
      15000))
      << "throttled periods " << ValueOr(m, "stagewatch_cpu_cfs_throttled_periods_total" + v_label, -1)
      << " (cpu.stat " << nr_throttled << "), cpu seconds "
      << ValueOr(m, "stagewatch_cpu_seconds_total" + v_label, -1) << " (usage " << usage_s << ")\n"
      << agent.log();

  const double oncpu_s = ValueOr(m, "stagewatch_cpu_seconds_total" + v_label, 0);
  const double cgroup_usage_s = ValueOr(m, "stagewatch_cgroup_cpu_usage_seconds_total" + v_label, 0);
  const double latency_count = ValueOr(m, "stagewatch_runqueue_latency_seconds_count" + v_label, 0);
  const double latency_sum = ValueOr(m, "stagewatch_runqueue_latency_seconds_sum" + v_label, 0);
  const double preempted_by_train = ValueOr(
      m, R"(stagewatch_cpu_preemptions_total{pipeline_stage="validate",preempting_stage="train"})", 0);
  std::printf("validate: on-cpu %.3f s (cgroup %.3f s), throttled %.0f periods %.3f s, "
              "run-queue wait %.3f s over %.0f runs, preempted by train %.0f times, "
              "cpu pressure some %.3f s\n",
              oncpu_s, cgroup_usage_s, nr_throttled, throttled_s, latency_sum, latency_count,
              preempted_by_train, ValueOr(m, "stagewatch_pressure_cpu_waiting_seconds_total" + v_label, 0));

  EXPECT_NEAR(cgroup_usage_s, usage_s, 1e-6);
  EXPECT_NEAR(oncpu_s, usage_s, 0.05 * usage_s);
  EXPECT_NEAR(ValueOr(m, "stagewatch_cpu_cfs_throttled_seconds_total" + v_label, 0), throttled_s, 0.001);
  EXPECT_EQ(ValueOr(m, "stagewatch_cpu_cfs_periods_total" + v_label, 0), nr_periods);
  EXPECT_GE(nr_periods, nr_throttled);
  EXPECT_GT(latency_count, 10);
  EXPECT_GT(latency_sum, 0.1);  // it waited behind train for a good part of 2 s
  EXPECT_GT(preempted_by_train, 10);
  EXPECT_NEAR(ValueOr(m, "stagewatch_pressure_cpu_waiting_seconds_total" + v_label, 0), psi_some_s,
              0.01 * psi_some_s + 0.001);
  EXPECT_GT(psi_some_s, 0.1);

  auto [rc, lint] = testing::RunWithInput("promtool check metrics", *agent.Get("/metrics"));
  EXPECT_EQ(rc, 0) << lint;
}

}  // namespace
}  // namespace stagewatch
