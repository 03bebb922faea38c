// A stage whose top is unlimited and whose run's cgroup has a 256 MiB limit, as Slurm or a
// launcher sets it: while the run climbs steadily into its limit, the agent's limit-ETA page
// must be in a real Alertmanager (its /api/v2/alerts) before the kernel's OOM kill. The lead
// time is measured from the alert's startsAt and from when this test first saw it there, to
// the kill's time as the agent stamped it (the kernel choosing its victim), checked by the
// child's own memory.oom_control / memory.events.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::TestCgroup;

constexpr uint64_t kMiB = 1 << 20;
const std::string kStageName = "childpage-" + std::to_string(getpid());

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The limit-ETA alert of the stage in Alertmanager's own list: its startsAt (Unix seconds), or
// 0 when it is not there.
double LimitEtaStartsAt(httplib::Client& am) {
  httplib::Result res = am.Get("/api/v2/alerts");
  if (!res || res->status != 200) return 0;
  const nlohmann::json alerts = nlohmann::json::parse(res->body, nullptr, false);
  if (!alerts.is_array()) return 0;
  for (const nlohmann::json& a : alerts) {
    const nlohmann::json& l = a["labels"];
    if (l.value("alertname", "") != "StagewatchMemoryLimitETAShort" ||
        l.value("pipeline_stage", "") != kStageName) {
      continue;
    }
    absl::Time starts;
    std::string err;
    if (absl::ParseTime(absl::RFC3339_full, a.value("startsAt", ""), &starts, &err)) {
      return absl::ToDoubleSeconds(starts - absl::UnixEpoch());
    }
  }
  return 0;
}

TEST(ChildLimitPageE2E, AChildLimitedStagesLimitEtaPageIsInAlertmanagerBeforeTheKill) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  ASSERT_EQ(access(testing::AlertmanagerProcess::kBinary, X_OK), 0)
      << testing::AlertmanagerProcess::kBinary
      << " is missing: install the Debian package prometheus-alertmanager "
      << "(scripts/install-deps.sh does)";
  char tmpl[] = "/tmp/stagewatch-child-page-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  TestCgroup top("stagewatch/" + kStageName);
  TestCgroup run(top, "run-7");
  run.SetMemoryLimit(256 * kMiB);

  testing::AlertmanagerProcess alertmanager(
      dir, "route:\n  receiver: none\nreceivers:\n  - name: none\n");
  ASSERT_TRUE(alertmanager.WaitReady()) << alertmanager.log();
  const int am_port = alertmanager.port();
  testing::WriteFile(dir + "/agent.yml",
                     "memory:\n  sample_interval: 250ms\n"
                     "alerting:\n  alertmanagers: [\"http://127.0.0.1:" + std::to_string(am_port) +
                     "\"]\n"
                     "anomalies:\n  limit_eta: {warmup: 3s, window: 4s, min_span: 2s}\n");
  AgentProcess agent({"--config.file", dir + "/agent.yml", "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  // Alertmanager's list, read every 100 ms from the climb's start.
  std::atomic<bool> stop = false;
  std::atomic<double> seen_at = 0, starts_at = 0;
  std::thread watch([&] {
    httplib::Client am("127.0.0.1", am_port);
    while (!stop && starts_at == 0) {
      if (const double s = LimitEtaStartsAt(am); s > 0) {
        seen_at = UnixNow();
        starts_at = s;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  // 32 MiB through the detectors' warm-up, then 8 MiB every 250 ms (32 MiB/s) into the limit.
  pid_t hog = run.Spawn("sw-child-climb", [] {
    testing::TouchAnonymous(32 * kMiB);
    std::this_thread::sleep_for(std::chrono::seconds(5));
    for (;;) {
      testing::TouchAnonymous(8 * kMiB);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  const int signal = testing::WaitForChild(hog);
  const double reaped = UnixNow();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the kill's page settles
  stop = true;
  watch.join();
  ASSERT_EQ(signal, SIGKILL);
  // The kernel's own count, in the child's cgroup (v1 keeps it there, not in the top).
  const std::string events = testing::ReadFile(
      run.dir() + (run.v2() ? "/memory.events" : "/memory.oom_control"));
  EXPECT_NE(events.find("oom_kill 1"), std::string::npos) << events;

  const double kill_unix = testing::ValueOr(
      testing::ParseExposition(agent.Get("/metrics").value_or("")),
      "stagewatch_oom_last_kill_timestamp_seconds{pipeline_stage=\"" + kStageName + "\"}", 0);
  ASSERT_GT(kill_unix, 0) << agent.log();
  EXPECT_LE(kill_unix, reaped + 0.5);
  ASSERT_GT(starts_at, 0) << "no limit-ETA alert in Alertmanager\n" << agent.log();
  const double starts_lead_ms = (kill_unix - starts_at) * 1000;
  const double seen_lead_ms = (kill_unix - seen_at) * 1000;
  std::printf("limit-ETA alert of a child-limited stage in Alertmanager: startsAt %.0f ms, seen "
              "in /api/v2/alerts %.0f ms before the OOM kill\n",
              starts_lead_ms, seen_lead_ms);
  EXPECT_GT(seen_lead_ms, 0) << "the page must be in Alertmanager before the kill";
  EXPECT_GT(starts_lead_ms, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stagewatch
