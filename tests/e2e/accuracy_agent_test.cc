// The accuracy table's rows for the agent itself: build, probes, BPF program statistics
// against the kernel's fdinfo of the agent's own program fds, its caches and bounds against
// what the test put beyond them, and Alertmanager figures with nothing to page.
#include <dirent.h>
#include <signal.h>
#include <ftw.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "accuracy_support.h"
#include "httplib.h"

namespace stagewatch::accuracy {
namespace {

using testing::TestCgroup;
using testing::ValueOr;

// run_cnt and run_time_ns summed over the BPF program fds of process `pid`.
struct ProgramTotals {
  double runs = 0, seconds = 0;
  int programs = 0;
};
ProgramTotals AgentPrograms(pid_t pid) {
  ProgramTotals t;
  const std::string fds = absl::StrCat("/proc/", pid, "/fd");
  DIR* dir = opendir(fds.c_str());
  if (!dir) return t;
  while (dirent* e = readdir(dir)) {
    char target[256] = {};
    if (readlink((fds + "/" + e->d_name).c_str(), target, sizeof(target) - 1) <= 0) continue;
    if (std::string_view(target) != "anon_inode:bpf-prog") continue;
    std::istringstream info(testing::ReadFile(absl::StrCat("/proc/", pid, "/fdinfo/", e->d_name)));
    std::string line;
    while (std::getline(info, line)) {
      if (line.starts_with("run_cnt:")) t.runs += std::stod(line.substr(8));
      if (line.starts_with("run_time_ns:")) t.seconds += std::stod(line.substr(12)) * 1e-9;
    }
    t.programs++;
  }
  closedir(dir);
  return t;
}

// Where the agent pages: accepts every batch and counts them, with the time of the first.
class AlertReceiver {
 public:
  AlertReceiver() {
    server_.Post("/api/v2/alerts", [this](const httplib::Request&, httplib::Response&) {
      if (batches_++ == 0) first_unix_ = static_cast<double>(std::time(nullptr));
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~AlertReceiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int batches() const { return batches_; }
  double first_unix() const { return first_unix_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> batches_ = 0;
  std::atomic<double> first_unix_ = 0;
};

double SumOf(const testing::Scrape& m, const std::string& family) {
  double sum = 0;
  for (const auto& [series, value] : m) {
    if (series.starts_with(family + "{")) sum += value;
  }
  return sum;
}

int CountDirs(const std::string& root) {
  static int n;
  n = 0;
  nftw(root.c_str(), [](const char*, const struct stat*, int type, FTW*) {
    if (type == FTW_D) n++;
    return 0;
  }, 32, FTW_PHYS);
  return n;
}

// Where the test says users reach the agent: dashboards link to <it>/runs/<id>.
constexpr std::string_view kExternalUrl = "https://node7.example:9617/stagewatch";

TEST(AccuracyE2E, AgentSelfMetricsMatchTheKernel) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const std::string discovery = StageName("disc");
  const std::string stage = StageName("domains");
  TestCgroup top(stage);
  TestCgroup limited(top, "run-1");
  limited.SetMemoryLimit(64 << 20);
  TestCgroup first(discovery + "/one");
  AlertReceiver receiver;
  const std::string closed = "http://127.0.0.1:" + std::to_string(testing::FreePort());
  Agent agent("discovery:\n  directory: " + discovery + "\n  max_stages: 1\nstages:\n  - name: " +
                  stage + "\n    cgroup_paths: [\"/**/" + stage + "\"]\nmemory:\n  sample_interval: 100ms\n"
                  "  max_limit_domains: 1\nalerting:\n  alertmanagers: [\"" + receiver.url() + "\", \"" +
                  closed + "\"]\n  timeout: 1s\n",
              {"--bpf.stats", "--web.external-url=" + std::string(kExternalUrl)});
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(agent.Ready()) << agent.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a few samples

  const ProgramTotals before = AgentPrograms(agent.process().pid());
  const auto asked = std::chrono::steady_clock::now();
  testing::Scrape m = agent.Scrape();
  const double scrape_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  const ProgramTotals after = AgentPrograms(agent.process().pid());
  const double runs = SumOf(m, "stagewatch_bpf_program_runs_total");
  const double seconds = SumOf(m, "stagewatch_bpf_program_run_seconds_total");
  std::printf("BPF programs %d: runs %.0f (fdinfo %.0f..%.0f), %.6f s (fdinfo %.6f..%.6f)\n",
              after.programs, runs, before.runs, after.runs, seconds, before.seconds, after.seconds);
  ASSERT_GT(after.programs, 0);
  EXPECT_GE(runs, before.runs);
  EXPECT_LE(runs, after.runs);
  EXPECT_GE(seconds, before.seconds - 1e-9);
  EXPECT_LE(seconds, after.seconds + 1e-9);
  EXPECT_GT(runs, 0);
  EXPECT_EQ(ValueOr(m, "stagewatch_bpf_stats_enabled", -1), 1);

  // Build: the version and revision the binary prints, the libbpf it links.
  testing::AgentProcess version({"--version"});
  ASSERT_EQ(version.WaitExit(), 0);
  const std::string printed = version.log();
  auto label = [](const std::string& series, const std::string& name) {
    const size_t at = series.find(name + "=\"") + name.size() + 2;
    return series.substr(at, series.find('"', at) - at);
  };
  bool build_seen = false;
  for (const auto& [series, value] : m) {
    if (!series.starts_with("stagewatch_build_info{")) continue;
    build_seen = true;
    EXPECT_EQ(value, 1);
    EXPECT_NE(printed.find(label(series, "version")), std::string::npos) << series << " vs " << printed;
    EXPECT_NE(printed.find(label(series, "revision")), std::string::npos) << series << " vs " << printed;
    EXPECT_EQ(label(series, "libbpf_version"),
              absl::StrCat(libbpf_major_version(), ".", libbpf_minor_version()));
    EXPECT_EQ(label(series, "external_url"), kExternalUrl) << series;
  }
  EXPECT_TRUE(build_seen);

  // Probes: attached as `features --json` reports them.
  testing::AgentProcess features({"features", "--json"});
  ASSERT_EQ(features.WaitExit(60000), 0) << features.log();
  for (const auto& [series, value] : m) {
    if (!series.starts_with("stagewatch_probe_attached{")) continue;
    const size_t at = series.find("probe=\"") + 7;
    const std::string probe = series.substr(at, series.find('"', at) - at);
    const std::string entry = "\"name\":\"" + probe + "\"";
    EXPECT_NE(features.log().find(entry), std::string::npos) << probe;
    EXPECT_EQ(value, 1) << series;
  }

  // Bounds: nothing overflowed but what the test put beyond them.
  // Host-wide: other tests' cgroups that die before they are named count here too, so only
  // its presence is checked (the accuracy table says so).
  EXPECT_GE(ValueOr(m, "stagewatch_unknown_cgroup_events_total", -1), 0);
  EXPECT_EQ(SumOf(m, "stagewatch_sched_map_overflows_total"), 0);
  EXPECT_EQ(SumOf(m, "stagewatch_memory_map_overflows_total"), 0);
  EXPECT_EQ(ValueOr(m, "stagewatch_placement_map_overflows_total", -1), 0);
  EXPECT_EQ(ValueOr(m, "stagewatch_cgroup_cache_truncated", -1), 0);
  EXPECT_GE(ValueOr(m, "stagewatch_cgroup_cache_rescans_total", -1), 1);
  EXPECT_EQ(ValueOr(m, "stagewatch_stage_discovery_overflows_total", -1), 0);
  // One top and one limited child, one domain allowed: the child sits each sample out, and
  // only this stage's cgroups are watched.
  const double overflows = ValueOr(m, R"(stagewatch_memory_limit_domain_errors_total{reason="overflow"})", -1);
  const double samples = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() / 0.1;
  std::printf("limit domain overflows %.0f in at most %.0f samples\n", overflows, samples);
  EXPECT_GT(overflows, 0);
  EXPECT_LE(overflows, samples + 1);
  {
    TestCgroup second(discovery + "/two");
    second.Spawn("sw-acc-disc", [] {});
    EXPECT_TRUE(testing::WaitUntil(
        [&] { return ValueOr(agent.Scrape(), "stagewatch_stage_discovery_overflows_total", -1) > 0; }, 5000))
        << agent.log();
  }

  // Scrape durations: each within the request's own wall time.
  int collectors = 0;
  for (const auto& [series, value] : m) {
    if (!series.starts_with("stagewatch_scrape_collector_duration_seconds{")) continue;
    collectors++;
    EXPECT_GE(value, 0) << series;
    EXPECT_LE(value, scrape_s) << series;
  }
  EXPECT_GE(collectors, 4);

  // Alertmanager: nothing paged yet, so nothing sent, queued or dropped.
  EXPECT_EQ(SumOf(m, "stagewatch_alertmanager_requests_total"), 0);
  EXPECT_EQ(SumOf(m, "stagewatch_alertmanager_queue_length"), 0);
  EXPECT_EQ(SumOf(m, "stagewatch_alertmanager_last_success_timestamp_seconds"), 0);
  // An OOM kill pages both: the receiver counts what it accepted, nothing listens on the other.
  limited.SetMemoryLimit(16 << 20);
  ASSERT_EQ(testing::WaitForChild(limited.Spawn("sw-acc-hog", testing::HogMemoryForever)), SIGKILL);
  auto requests = [&](const testing::Scrape& s, const std::string& url, const std::string& result) {
    return ValueOr(s, "stagewatch_alertmanager_requests_total{alertmanager=\"" + url +
                          "\",result=\"" + result + "\"}", -1);
  };
  int received_before = 0, received_after = 0;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        received_before = receiver.batches();
        m = agent.Scrape();
        received_after = receiver.batches();
        // The agent counts a success once the response is back, a moment after the receiver
        // counted the request: wait for the counter to catch up with what was received.
        return received_before > 0 && requests(m, closed, "failure") > 0 &&
               requests(m, receiver.url(), "success") >= received_before &&
               SumOf(m, "stagewatch_alertmanager_queue_length") == 0;
      },
      10000))
      << agent.log();
  const double ok = requests(m, receiver.url(), "success");
  std::printf("pages: receiver accepted %d..%d, /metrics success %.0f, failures to the closed "
              "port %.0f\n", received_before, received_after, ok, requests(m, closed, "failure"));
  EXPECT_GE(ok, received_before);
  EXPECT_LE(ok, received_after);
  EXPECT_EQ(requests(m, receiver.url(), "failure"), 0);
  EXPECT_EQ(requests(m, closed, "success"), 0);
  EXPECT_EQ(SumOf(m, "stagewatch_alertmanager_alerts_dropped_total"), 0);
  const double last = ValueOr(m, "stagewatch_alertmanager_last_success_timestamp_seconds{alertmanager=\"" +
                                     receiver.url() + "\"}", -1);
  EXPECT_GE(last, receiver.first_unix() - 1);
  EXPECT_LE(last, std::time(nullptr) + 1);
  EXPECT_EQ(ValueOr(m, "stagewatch_alertmanager_last_success_timestamp_seconds{alertmanager=\"" +
                           closed + "\"}", -1), 0);
}

// cgroup.cache_max_entries below the host's cgroups: the rest are counted as left out.
TEST(AccuracyE2E, CgroupCacheTruncatedCountsTheCgroupsBeyondItsSize) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup probe(StageName("cache"));
  // Past the cache's size whatever the host holds (a fresh host may have only a few).
  std::vector<std::unique_ptr<TestCgroup>> beneath;
  for (int i = 0; i < 24; ++i) {
    beneath.push_back(std::make_unique<TestCgroup>(probe, absl::StrCat("fill-", i)));
  }
  const std::string root = probe.layout().key_root;
  const int before = CountDirs(root);
  Agent agent("discovery:\n  enabled: false\ncgroup:\n  cache_max_entries: 16\n");
  ASSERT_TRUE(agent.Ready()) << agent.log();
  const double truncated = ValueOr(agent.Scrape(), "stagewatch_cgroup_cache_truncated", -1);
  const int after = CountDirs(root);
  std::printf("cgroups %d..%d, cache 16, truncated %.0f\n", before, after, truncated);
  EXPECT_GE(truncated, std::min(before, after) - 16 - 2);
  // Each cgroup other tests make while the cache is full counts too.
  EXPECT_LE(truncated, std::max(before, after) - 16 + 10);
}

}  // namespace
}  // namespace stagewatch::accuracy
