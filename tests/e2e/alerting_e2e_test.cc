// Pages end to end, with real servers: the agent pages Alertmanager directly, a real
// Prometheus scrapes the agent and evaluates the shipped rules, and Alertmanager routes both
// to a webhook sink run by this test. A stage climbs in memory and is OOM-killed: the climb
// or limit-ETA page must arrive before the kill, and both OOM pages after it.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <regex>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::TestCgroup;
using Clock = std::chrono::steady_clock;

constexpr const char* kPrometheus = "/usr/bin/prometheus";

struct Received {
  std::map<std::string, std::string> labels;
  std::string status;
  Clock::time_point at;
  double unix_seconds;  // to compare with the kernel's kill time the agent exports
};

// The webhook receiver Alertmanager notifies.
class WebhookSink {
 public:
  WebhookSink() {
    server_.Post("/", [this](const httplib::Request& req, httplib::Response&) { Record(req.body); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~WebhookSink() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

  // The first alert received with all of `labels` and `status`, if any.
  std::optional<Received> Find(const std::map<std::string, std::string>& labels,
                               const std::string& status = "firing") {
    absl::MutexLock lock(&mu_);
    for (const Received& r : received_) {
      bool match = r.status == status;
      for (const auto& [k, v] : labels) {
        auto it = r.labels.find(k);
        match &= it != r.labels.end() && it->second == v;
      }
      if (match) return r;
    }
    return std::nullopt;
  }

 private:
  // Each alert in the notification: {"status":"...","labels":{...},...}.
  void Record(const std::string& body) {
    static const std::regex kAlert(R"re(\{"status":"(\w+)","labels":\{([^}]*)\})re");
    static const std::regex kPair(R"re("([^"]+)":"([^"]*)")re");
    const auto now = Clock::now();
    const double unix_now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    absl::MutexLock lock(&mu_);
    for (std::sregex_iterator it(body.begin(), body.end(), kAlert), end; it != end; ++it) {
      Received r{.status = (*it)[1], .at = now, .unix_seconds = unix_now};
      const std::string labels = (*it)[2];
      for (std::sregex_iterator p(labels.begin(), labels.end(), kPair); p != end; ++p) {
        r.labels[(*p)[1]] = (*p)[2];
      }
      received_.push_back(std::move(r));
    }
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<Received> received_;
};

std::string TempDir() {
  char tmpl[] = "/tmp/stagewatch-alerting-XXXXXX";
  return mkdtemp(tmpl);
}

TEST(AlertingE2E, ClimbPagesBeforeTheKillAndBothOomPagesArrive) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  for (const char* tool : {testing::AlertmanagerProcess::kBinary, kPrometheus}) {
    ASSERT_EQ(access(tool, X_OK), 0)
        << tool << " is missing: install the Debian packages prometheus and "
                   "prometheus-alertmanager (scripts/install-deps.sh does)";
  }
  TestCgroup train("stagewatch/train", {"pressure"});
  train.SetMemoryLimit(192 << 20);
  const std::string dir = TempDir();
  WebhookSink sink;

  testing::AlertmanagerProcess alertmanager(
      dir,
      "route:\n  receiver: sink\n  group_by: [alertname, pipeline_stage, source]\n"
      "  group_wait: 0s\n  group_interval: 1s\n  repeat_interval: 1h\n"
      "receivers:\n  - name: sink\n    webhook_configs:\n"
      "      - url: http://127.0.0.1:" + std::to_string(sink.port()) + "/\n"
      "        send_resolved: true\n");
  ASSERT_TRUE(alertmanager.WaitReady()) << alertmanager.log();
  const int am_port = alertmanager.port();

  testing::WriteFile(dir + "/agent.yml",
                     "memory:\n  sample_interval: 250ms\n"
                     "alerting:\n  alertmanagers: [\"http://127.0.0.1:" + std::to_string(am_port) +
                     "\"]\n"
                     "anomalies:\n"
                     "  memory_climb: {warmup: 3s, window: 2s, min_growth_bytes: 33554432}\n"
                     "  limit_eta: {warmup: 3s, window: 4s, min_span: 2s}\n");
  AgentProcess agent({"--config.file", dir + "/agent.yml", "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  // The default runbook base is the repository's folder: the agent says how to make its links
  // open.
  EXPECT_NE(agent.log().find("runbook links open nowhere"), std::string::npos) << agent.log();

  const int prom_port = testing::FreePort();
  testing::WriteFile(dir + "/prometheus.yml",
                     "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                     "rule_files: [\"" STAGEWATCH_SOURCE_DIR "/alerts/stagewatch.rules.yml\"]\n"
                     "alerting:\n  alertmanagers:\n    - static_configs:\n"
                     "        - targets: [\"127.0.0.1:" + std::to_string(am_port) + "\"]\n"
                     "scrape_configs:\n  - job_name: stagewatch\n    static_configs:\n"
                     "      - targets: [\"127.0.0.1:" + std::to_string(agent.port()) + "\"]\n");
  AgentProcess prometheus({"--config.file=" + dir + "/prometheus.yml",
                           "--storage.tsdb.path=" + dir + "/prom",
                           "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                          nullptr, kPrometheus);
  ASSERT_TRUE(testing::WaitForPort(prom_port)) << prometheus.log();

  // Steady at 16 MiB long enough for the detectors' warm-up, then +16 MiB every 250 ms.
  pid_t hog = train.Spawn("sw-climber", [] {
    auto touch = [](size_t bytes) {
      char* p = static_cast<char*>(
          mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
    };
    touch(16 << 20);
    std::this_thread::sleep_for(std::chrono::seconds(8));
    for (;;) {
      touch(16 << 20);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  ASSERT_EQ(testing::WaitForChild(hog), SIGKILL);
  const Clock::time_point killed = Clock::now();

  const std::map<std::string, std::string> direct_oom = {
      {"alertname", "StagewatchOOMKill"}, {"pipeline_stage", "train"}, {"source", "agent"}};
  const std::map<std::string, std::string> rule_oom = {
      {"alertname", "StagewatchOOMKill"}, {"pipeline_stage", "train"}, {"source", "prometheus"}};
  ASSERT_TRUE(testing::WaitUntil([&] { return sink.Find(direct_oom).has_value(); }, 10000))
      << agent.log() << alertmanager.log();
  ASSERT_TRUE(testing::WaitUntil([&] { return sink.Find(rule_oom).has_value(); }, 30000))
      << prometheus.log() << alertmanager.log();

  std::optional<Received> early = sink.Find(
      {{"alertname", "StagewatchMemoryClimb"}, {"pipeline_stage", "train"}, {"source", "agent"}});
  std::optional<Received> eta = sink.Find({{"alertname", "StagewatchMemoryLimitETAShort"},
                                           {"pipeline_stage", "train"}, {"source", "agent"}});
  if (!early || (eta && eta->at < early->at)) early = eta;
  ASSERT_TRUE(early.has_value()) << "no climb or limit-ETA page\n" << agent.log();

  // From the kernel's choice of victim (the agent's timestamp of the kill), not from the
  // reaping of the process, which comes later.
  const double kill_unix = testing::ValueOr(
      testing::ParseExposition(agent.Get("/metrics").value_or("")),
      R"(stagewatch_oom_last_kill_timestamp_seconds{pipeline_stage="train"})", 0);
  ASSERT_GT(kill_unix, 0);
  using ms = std::chrono::duration<double, std::milli>;
  const double direct_latency = (sink.Find(direct_oom)->unix_seconds - kill_unix) * 1000;
  const double rule_latency = (sink.Find(rule_oom)->unix_seconds - kill_unix) * 1000;
  const double lead = ms(killed - early->at).count();
  std::printf("kill → direct page %.0f ms, → Prometheus rule page %.0f ms; %s page came %.0f ms "
              "before the kill\n", direct_latency, rule_latency,
              early->labels["alertname"].c_str(), lead);
  EXPECT_GT(lead, 0) << "the early page must come before the kill";
  EXPECT_GE(direct_latency, 0);
  EXPECT_LT(direct_latency, 2000);
  std::filesystem::remove_all(dir);
}

// The agent's own OOM page, read back from Alertmanager's API: the site's labels (instance
// from alerting.labels, as a DaemonSet sets it to the node name), the severity, the rules'
// runbook_url and a generatorURL to the stage's runs under --web.external-url.
TEST(AlertingE2E, DirectPageCarriesRunbookSeverityLabelsAndALinkBack) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  ASSERT_EQ(access(testing::AlertmanagerProcess::kBinary, X_OK), 0)
      << testing::AlertmanagerProcess::kBinary << " is missing: install the Debian package "
      << "prometheus-alertmanager (scripts/install-deps.sh does)";
  const std::string stage = "page-links-" + std::to_string(getpid());
  TestCgroup cg("stagewatch/" + stage);
  cg.SetMemoryLimit(32 << 20);
  const std::string dir = TempDir();
  testing::AlertmanagerProcess alertmanager(
      dir, "route:\n  receiver: none\nreceivers:\n  - name: none\n");
  ASSERT_TRUE(alertmanager.WaitReady()) << alertmanager.log();
  testing::WriteFile(dir + "/agent.yml",
                     "alerting:\n  alertmanagers: [\"http://127.0.0.1:" +
                         std::to_string(alertmanager.port()) + "\"]\n"
                     "  runbook_url_base: https://wiki.example.org/runbooks/\n"
                     "  labels: {instance: node-7, cluster: eu-1}\n");
  AgentProcess agent({"--config.file", dir + "/agent.yml", "--web.listen-address", "127.0.0.1:0",
                      "--web.external-url", "https://sw.example.org/node-7/"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  EXPECT_EQ(agent.log().find("runbook links open nowhere"), std::string::npos) << agent.log();

  pid_t hog = cg.Spawn("sw-page-links", [] { testing::TouchAnonymous(64 << 20); });
  ASSERT_EQ(testing::WaitForChild(hog), SIGKILL);

  httplib::Client am("127.0.0.1", alertmanager.port());
  nlohmann::json page;
  ASSERT_TRUE(testing::WaitUntil([&] {
    httplib::Result res = am.Get("/api/v2/alerts");
    if (!res || res->status != 200) return false;
    const nlohmann::json alerts = nlohmann::json::parse(res->body, nullptr, false);
    for (const nlohmann::json& a : alerts.is_array() ? alerts : nlohmann::json::array()) {
      if (a["labels"].value("alertname", "") == "StagewatchOOMKill" &&
          a["labels"].value("pipeline_stage", "") == stage) {
        page = a;
        return true;
      }
    }
    return false;
  }, 10000)) << agent.log() << alertmanager.log();
  const nlohmann::json& labels = page["labels"];
  EXPECT_EQ(labels.value("instance", ""), "node-7") << page.dump();
  EXPECT_EQ(labels.value("cluster", ""), "eu-1");
  EXPECT_EQ(labels.value("severity", ""), "critical");
  EXPECT_EQ(labels.value("source", ""), "agent");
  EXPECT_EQ(page["annotations"].value("runbook_url", ""),
            "https://wiki.example.org/runbooks/StagewatchOOMKill.md");
  EXPECT_EQ(page.value("generatorURL", ""), "https://sw.example.org/node-7/runs?stage=" + stage);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stagewatch
