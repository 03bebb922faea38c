// The built stagewatch binary, end to end: real OOM kills in a real stage, scraped over HTTP,
// against the kernel's own counters, linted by promtool; and the environments it refuses.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string_view>
#include <thread>

#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::TestCgroup;
using testing::ValueOr;

constexpr int kKills = 3;

std::string WriteConfig(const std::string& yaml) {
  char path[] = "/tmp/stagewatch-e2e-config-XXXXXX.yaml";
  int fd = mkstemps(path, 5);
  close(fd);
  testing::WriteFile(path, yaml);
  return path;
}

// A listening socket on an ephemeral loopback port, for the port-in-use case.
class BusyPort {
 public:
  BusyPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(fd_, 1);
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~BusyPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_;
};

TEST(AgentE2E, OomKillsInStageTrainReachMetricsAndMatchTheKernel) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup cgroup("jobs/train");
  // A configured stage (not the discovery convention), matched by its path glob.
  const std::string config = WriteConfig(
      "stages:\n"
      "  - name: train\n"
      "    pipeline: nightly\n"
      "    cgroup_paths: [\"/**/" + cgroup.path().substr(cgroup.path().rfind("/sw-test-") + 1) +
      "\"]\n");
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  const std::string series = R"(stagewatch_oom_kills_total{pipeline_stage="train",pipeline="nightly",kind="kernel"})";
  auto kills = [&] {
    std::optional<std::string> body = agent.Get("/metrics");
    return body ? ValueOr(ParseExposition(*body), series, -1) : -1;
  };
  const double before = kills();
  ASSERT_EQ(before, 0) << agent.log();

  cgroup.SetMemoryLimit(16 << 20);
  std::vector<double> latencies_ms;
  for (int i = 1; i <= kKills; i++) {
    pid_t hog = cgroup.Spawn("sw-e2e-hog", testing::HogMemoryForever);
    ASSERT_EQ(testing::WaitForChild(hog), SIGKILL);
    const auto killed = std::chrono::steady_clock::now();
    ASSERT_TRUE(testing::WaitUntil([&] { return kills() == i; }, 5000)) << agent.log();
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(
                               std::chrono::steady_clock::now() - killed).count());
  }
  for (double ms : latencies_ms) {
    std::printf("kill to /metrics: %.1f ms\n", ms);  // reported in the closing note
  }

  // Settled: exactly N, and the kernel's own counters agree.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::optional<std::string> body = agent.Get("/metrics");
  ASSERT_TRUE(body);
  const testing::Scrape scrape = ParseExposition(*body);
  EXPECT_EQ(ValueOr(scrape, series, -1), kKills);
  EXPECT_EQ(cgroup.OomKillCount(), static_cast<uint64_t>(kKills));
  EXPECT_EQ(ValueOr(scrape, R"(stagewatch_oom_kills_cgroup_total{pipeline_stage="train",pipeline="nightly"})", -1), kKills);
  EXPECT_EQ(ValueOr(scrape, R"(stagewatch_oom_kills_mismatch{pipeline_stage="train",pipeline="nightly"})", -1), 0);
  EXPECT_GT(ValueOr(scrape, R"(stagewatch_oom_last_kill_timestamp_seconds{pipeline_stage="train",pipeline="nightly"})", 0), 1.7e9);
  EXPECT_EQ(ValueOr(scrape, R"(stagewatch_probe_attached{probe="oom_kill",attach_type="raw_tracepoint"})", -1), 1);
  EXPECT_EQ(ValueOr(scrape, R"(stagewatch_probe_lost_events_total{probe="oom_kill"})", -1), 0);
  EXPECT_EQ(ValueOr(scrape, R"(stagewatch_scrape_collector_success{collector="oom"})", -1), 1);

  auto [rc, lint] = testing::RunWithInput("promtool check metrics", *body);
  EXPECT_EQ(rc, 0) << lint;
  EXPECT_EQ(lint, "") << lint;

  EXPECT_EQ(agent.Stop(), 0);
  EXPECT_NE(agent.log().find("msg=\"stopped\""), std::string::npos) << agent.log();
  unlink(config.c_str());
}

TEST(AgentE2E, LandingPageLinksToMetrics) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--web.telemetry-path", "/m"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  std::optional<std::string> page = agent.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("href=\"/m\""), std::string::npos) << *page;
  EXPECT_TRUE(agent.Get("/m"));
  EXPECT_FALSE(agent.Get("/metrics"));
}

// The digits of a number's text without its exponent, leading and trailing zeros: "8.192e-06"
// has 4, "0.000131072" 6.
size_t SignificantDigits(std::string_view text) {
  std::string digits;
  for (char c : text.substr(0, text.find('e'))) {
    if (c >= '0' && c <= '9') digits += c;
  }
  digits.erase(0, digits.find_first_not_of('0'));
  digits.erase(digits.find_last_not_of('0') + 1);
  return digits.size();
}

// Every bucket bound on a real scrape reads back as the exact double it stands for, with no
// more digits than that takes: le="8.192e-06", never le="8.192000000000001e-06".
TEST(AgentE2E, BucketBoundsAreTheShortestTextThatReadsBackExactly) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  const std::string metrics = agent.Get("/metrics").value_or("");
  static const std::regex kLe(R"re([{,]le="([^"]*)")re");
  int bounds = 0;
  for (std::sregex_iterator it(metrics.begin(), metrics.end(), kLe), end; it != end; ++it) {
    const std::string le = (*it)[1];
    if (le == "+Inf") continue;
    ++bounds;
    char* rest = nullptr;
    const double value = std::strtod(le.c_str(), &rest);
    ASSERT_EQ(*rest, '\0') << "le=\"" << le << "\" is not a number";
    char shortest[32];
    auto [last, ec] = std::to_chars(shortest, shortest + sizeof(shortest), value,
                                    std::chars_format::scientific);
    EXPECT_EQ(SignificantDigits(le), SignificantDigits({shortest, size_t(last - shortest)}))
        << "le=\"" << le << "\" has more digits than " << value << " needs";
  }
  EXPECT_GT(bounds, 20) << metrics;  // the run-queue and reclaim histograms of `unattributed`
  EXPECT_NE(metrics.find("le=\"8.192e-06\""), std::string::npos);
}

// The agent's own footprint, as /proc sees it.
TEST(AgentE2E, ProcessMetricsAgreeWithProc) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  // /proc read before and after the scrape: the agent spends CPU time serving it (much of it
  // under emulation), so its own figure lies between the two.
  auto proc_stat = [&] {
    const std::string stat = testing::ReadFile("/proc/" + std::to_string(agent.pid()) + "/stat");
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));
    std::vector<double> f;
    std::string field;
    while (rest >> field) f.push_back(std::atof(field.c_str()));
    return f;
  };
  const std::vector<double> before = proc_stat();
  const testing::Scrape m = ParseExposition(agent.Get("/metrics").value_or(""));
  const std::vector<double> f = proc_stat();
  ASSERT_GT(f.size(), 22u);
  ASSERT_GT(before.size(), 22u);
  const double cpu_before = (before[11] + before[12]) / sysconf(_SC_CLK_TCK);
  const double cpu = (f[11] + f[12]) / sysconf(_SC_CLK_TCK);
  const double rss = f[21] * sysconf(_SC_PAGESIZE);
  std::printf("agent just started: cpu %.2f s (%.2f s before the scrape), rss %.1f MiB\n", cpu,
              cpu_before, rss / (1 << 20));
  EXPECT_GE(ValueOr(m, "process_cpu_seconds_total", -1), cpu_before - 0.02);
  EXPECT_LE(ValueOr(m, "process_cpu_seconds_total", -1), cpu + 0.02);
  EXPECT_NEAR(ValueOr(m, "process_resident_memory_bytes", -1), rss, 0.1 * rss);
  EXPECT_NEAR(ValueOr(m, "process_start_time_seconds", -1), std::time(nullptr), 30);
  EXPECT_GT(ValueOr(m, "process_open_fds", -1), 5);  // BPF maps, programs and links, the socket
}

// --bpf.stats counts the agent's BPF run time for its lifetime, whatever the sysctl says.
TEST(AgentE2E, BpfStatsFlagCountsProgramRunTime) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--bpf.stats"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  for (int i = 0; i < 100; i++) usleep(1000);  // context switches for the sched program
  const testing::Scrape m = ParseExposition(agent.Get("/metrics").value_or(""));
  double seconds = 0, runs = 0;
  for (const auto& [key, value] : m) {
    if (key.starts_with("stagewatch_bpf_program_run_seconds_total{")) seconds += value;
    if (key.starts_with("stagewatch_bpf_program_runs_total{program=\"sched_switch")) runs += value;
  }
  std::printf("BPF run time %.6f s, sched_switch runs %.0f\n", seconds, runs);
  EXPECT_EQ(ValueOr(m, "stagewatch_bpf_stats_enabled", -1), 1);
  EXPECT_GT(runs, 100);
  EXPECT_GT(seconds, 0);
  EXPECT_EQ(agent.Stop(), 0) << agent.log();
}

TEST(AgentE2E, JsonLogsAreOneObjectPerLine) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--log.format", "json"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  EXPECT_EQ(agent.Stop(), 0);
  std::istringstream lines(agent.log());
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
    n++;
  }
  EXPECT_GE(n, 3);
}

// ---- environments the agent refuses, each with a clear message and a non-zero exit ----------

TEST(AgentE2E, NotRootIsRefusedWithAClearMessage) {
  STAGEWATCH_REQUIRE_PRIVILEGES();  // needs root to drop to nobody
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"}, [] {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(126);
  });
  EXPECT_EQ(agent.WaitExit(), 1);
  EXPECT_NE(agent.log().find("needs root"), std::string::npos) << agent.log();
}

TEST(AgentE2E, MissingBtfIsRefusedWithAClearMessage) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  // Hide /sys/kernel/btf in a private mount namespace, as on a kernel built without BTF.
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"}, [] {
    if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", "/sys/kernel/btf", "tmpfs", 0, nullptr) != 0) {
      _exit(125);
    }
  });
  EXPECT_EQ(agent.WaitExit(), 1);
  EXPECT_NE(agent.log().find("no BTF"), std::string::npos) << agent.log();
  EXPECT_NE(agent.log().find("--bpf.btf-path"), std::string::npos) << agent.log();
}

TEST(AgentE2E, BadBtfPathIsRefusedWithAClearMessage) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--bpf.btf-path", "/etc/hostname"});
  EXPECT_EQ(agent.WaitExit(), 1);
  EXPECT_NE(agent.log().find("cannot read BTF from /etc/hostname"), std::string::npos)
      << agent.log();
}

// --bpf.attach: raw_tp puts sched_switch on a raw tracepoint (tp_btf where the kernel could);
// a value it does not know is refused with the choices.
TEST(AgentE2E, AttachPolicyRawTpIsHonouredAndAnUnknownOneRefused) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess bad({"--bpf.attach", "fentry", "features"});
  EXPECT_EQ(bad.WaitExit(), 1);
  EXPECT_NE(bad.log().find("\"fentry\""), std::string::npos) << bad.log();
  EXPECT_NE(bad.log().find("use auto or raw_tp"), std::string::npos) << bad.log();

  AgentProcess raw({"--bpf.attach", "raw_tp", "features", "--json"});
  EXPECT_EQ(raw.WaitExit(60000), 0) << raw.log();
  EXPECT_NE(raw.log().find(R"({"name":"sched_switch","attach_type":"raw_tracepoint","attached":true)"),
            std::string::npos)
      << raw.log();
}

TEST(AgentE2E, PortInUseIsRefusedWithAClearMessage) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  BusyPort busy;
  AgentProcess agent({"--web.listen-address", "127.0.0.1:" + std::to_string(busy.port())});
  EXPECT_EQ(agent.WaitExit(), 1);
  EXPECT_NE(agent.log().find("Address already in use"), std::string::npos) << agent.log();
}

TEST(AgentE2E, BadConfigFileIsRefusedWithFileAndLine) {
  const std::string config = WriteConfig("web:\n  listen_address: \":9617\"\nstages:\n  - name: \"\"\n");
  AgentProcess agent({"--config.file", config});
  EXPECT_EQ(agent.WaitExit(), 1);
  EXPECT_NE(agent.log().find(config + ":4:"), std::string::npos) << agent.log();

  AgentProcess check({"check-config", config});
  EXPECT_EQ(check.WaitExit(), 1);
  EXPECT_NE(check.log().find(config + ":4:"), std::string::npos) << check.log();
  unlink(config.c_str());
}

TEST(AgentE2E, CheckConfigAcceptsTheShippedExample) {
  AgentProcess check({"check-config", STAGEWATCH_SOURCE_DIR "/agent/config/default_config.yaml"});
  EXPECT_EQ(check.WaitExit(), 0) << check.log();
}

}  // namespace
}  // namespace stagewatch
