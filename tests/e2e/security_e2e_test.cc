// The agent as a platform engineer deploys it: TLS and basic auth from a web config file that
// promtool accepts, scraped by a real Prometheus; no capability left once the probes are
// attached; and every probe attached when started unprivileged with CAP_BPF + CAP_PERFMON.
#include <crypt.h>
#include <signal.h>
#include <grp.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;

std::string TempDir() {
  char dir[] = "/tmp/stagewatch-security-XXXXXX";
  return mkdtemp(dir);
}

std::string BcryptHash(const std::string& password) {
  auto data = std::make_unique<crypt_data>();
  const char* salt = crypt_gensalt_rn("$2y$", 10, nullptr, 0, data->setting, sizeof(data->setting));
  return salt ? crypt_r(password.c_str(), salt, data.get()) : "";
}

// A self-signed certificate for 127.0.0.1, made now: no private key lives in the tree.
void MakeCertificate(const std::string& dir) {
  const std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=stagewatch-test -addext subjectAltName=IP:127.0.0.1 -keyout " + dir +
      "/key.pem -out " + dir + "/cert.pem 2>&1";
  ASSERT_EQ(system(cmd.c_str()), 0) << cmd;
}

// The SHA-256 fingerprint of the certificate in `pem_file`, or of the one the agent serves on
// `port` to a new connection, as openssl prints it; "" when there is none.
std::string FileFingerprint(const std::string& pem_file) {
  auto [rc, out] =
      testing::RunWithInput("openssl x509 -noout -fingerprint -sha256 -in " + pem_file, "");
  return rc == 0 ? out : "";
}
std::string ServedFingerprint(int port) {
  auto [rc, out] = testing::RunWithInput(
      "{ openssl s_client -connect 127.0.0.1:" + std::to_string(port) +
          " </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256; }",
      "");
  return rc == 0 ? out : "";
}

// Replaces `to` at once, as a deployment tool or cert-manager does (rename over it).
void MoveOver(const std::string& from, const std::string& to) {
  ASSERT_EQ(rename(from.c_str(), to.c_str()), 0) << from << " → " << to << ": " << strerror(errno);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
  return n;
}

std::string CapabilityLine(pid_t pid, const std::string& name) {
  const std::string status = testing::ReadFile("/proc/" + std::to_string(pid) + "/status");
  const size_t at = status.find(name + ":\t");
  return at == std::string::npos ? "" : status.substr(at, status.find('\n', at) - at);
}

class TlsAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    STAGEWATCH_REQUIRE_PRIVILEGES();
    dir_ = TempDir();
    MakeCertificate(dir_);
    testing::WriteFile(dir_ + "/web.yml",
                       "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                       "  min_version: TLS12\nbasic_auth_users:\n  scraper: " +
                           BcryptHash("s3cret-pass") + "\n");
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  httplib::Result Get(int port, const std::string& path, const std::string& user = "",
                      const std::string& password = "") {
    httplib::SSLClient client("127.0.0.1", port);
    client.set_ca_cert_path(dir_ + "/cert.pem");
    client.enable_server_certificate_verification(true);
    client.set_connection_timeout(2);
    client.set_read_timeout(5);
    if (!user.empty()) client.set_basic_auth(user, password);
    return client.Get(path);
  }

  std::string dir_;
};

TEST_F(TlsAgent, PromtoolAcceptsTheWebConfig) {
  auto [rc, out] = testing::RunWithInput("cd " + dir_ + " && promtool check web-config web.yml", "");
  EXPECT_EQ(rc, 0) << out;
  AgentProcess check({"--web.config.file", dir_ + "/web.yml", "check-config",
                      STAGEWATCH_SOURCE_DIR "/agent/config/default_config.yaml"});
  EXPECT_EQ(check.WaitExit(), 0) << check.log();
}

TEST_F(TlsAgent, BasicAuthOverTlsAnswers401WithoutAnd200WithCredentials) {
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--web.config.file", dir_ + "/web.yml"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  httplib::Result anonymous = Get(agent.port(), "/metrics");
  ASSERT_TRUE(anonymous) << httplib::to_string(anonymous.error());
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_EQ(anonymous->get_header_value("WWW-Authenticate"), "Basic realm=\"stagewatch\"");
  httplib::Result wrong = Get(agent.port(), "/metrics", "scraper", "wrong");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  httplib::Result other_user = Get(agent.port(), "/metrics", "nobody", "s3cret-pass");
  ASSERT_TRUE(other_user);
  EXPECT_EQ(other_user->status, 401);

  httplib::Result ok = Get(agent.port(), "/metrics", "scraper", "s3cret-pass");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200);
  EXPECT_NE(ok->body.find("stagewatch_build_info"), std::string::npos);
  auto [rc, lint] = testing::RunWithInput("promtool check metrics", ok->body);
  EXPECT_EQ(rc, 0) << lint;

  // Plain HTTP on the TLS port gets no metrics.
  EXPECT_FALSE(agent.Get("/metrics").has_value());
  // Probes carry no credentials: health and readiness answer without them.
  httplib::Result healthy = Get(agent.port(), "/-/healthy");
  ASSERT_TRUE(healthy);
  EXPECT_EQ(healthy->status, 200);
  // The password is in no log line.
  EXPECT_EQ(agent.log().find("s3cret-pass"), std::string::npos);
}

// Wrong passwords in a loop from many clients used to run bcrypt on the threads that serve
// scrapes: 8 such clients made a good scrape take 560 ms, 60 made most time out. Now every
// flood request is answered 401 or 429, the scraper keeps getting 200, and bcrypt runs only
// within the flooding address's failed-login budget (10 at once, then one a second).
TEST_F(TlsAgent, AWrongPasswordFloodNeitherStopsScrapesNorHangs) {
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--web.config.file", dir_ + "/web.yml"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  httplib::SSLClient scraper("127.0.0.1", agent.port());  // keep-alive, like Prometheus
  scraper.set_ca_cert_path(dir_ + "/cert.pem");
  scraper.enable_server_certificate_verification(true);
  scraper.set_basic_auth("scraper", "s3cret-pass");
  scraper.set_read_timeout(static_cast<time_t>(10 * testing::DeadlineScale()));
  ASSERT_EQ(scraper.Get("/metrics")->status, 200);  // it logged in before the flood

  constexpr int kFlooders = 32;
  const auto flood_time = std::chrono::seconds(6);
  const auto flood_start = std::chrono::steady_clock::now();
  std::atomic<bool> stop = false;
  std::atomic<int> unauthorized = 0, throttled = 0, other = 0, failed = 0;
  std::vector<std::thread> flooders;
  for (int t = 0; t < kFlooders; t++) {
    flooders.emplace_back([&, t] {
      httplib::SSLClient client("127.0.0.1", agent.port());
      client.enable_server_certificate_verification(false);
      client.set_connection_timeout(5);
      client.set_read_timeout(static_cast<time_t>(10 * testing::DeadlineScale()));
      for (int i = 0; !stop; i++) {
        client.set_basic_auth("scraper", "guess-" + std::to_string(t) + "-" + std::to_string(i));
        httplib::Result r = client.Get("/metrics");
        if (!r) {
          failed++;  // a timeout: the hang this test is about
        } else if (r->status == 401) {
          unauthorized++;
        } else if (r->status == 429) {
          throttled++;
          EXPECT_EQ(r->get_header_value("Retry-After"), "1");
        } else {
          other++;
        }
      }
    });
  }
  int scrapes = 0, good = 0;
  while (std::chrono::steady_clock::now() - flood_start < flood_time) {
    httplib::Result r = scraper.Get("/metrics");
    scrapes++;
    good += r && r->status == 200;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  stop = true;
  for (std::thread& t : flooders) t.join();
  const double flood_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - flood_start).count();

  EXPECT_EQ(good, scrapes);
  EXPECT_EQ(failed.load(), 0) << "flood requests that got no answer";
  EXPECT_EQ(other.load(), 0);
  EXPECT_GT(throttled.load(), 0);
  EXPECT_GT(unauthorized.load(), 0);
  httplib::Result last = scraper.Get("/metrics");
  ASSERT_TRUE(last);
  ASSERT_EQ(last->status, 200);
  const testing::Scrape scrape = testing::ParseExposition(last->body);
  const double checked =
      testing::ValueOr(scrape, "stagewatch_http_basic_auth_checks_total{result=\"refused\"}", -1);
  // The budget: 10 at once and one a second, for the one flooding address (loopback).
  EXPECT_GE(checked, 10);
  EXPECT_LE(checked, 10 + flood_seconds + 1);
  EXPECT_EQ(testing::ValueOr(scrape, "stagewatch_http_basic_auth_checks_total{result=\"accepted\"}", -1), 1);
  const double throttled_by_agent =
      testing::ValueOr(scrape, "stagewatch_http_throttled_requests_total{reason=\"failed_logins\"}", 0) +
      testing::ValueOr(scrape, "stagewatch_http_throttled_requests_total{reason=\"busy\"}", 0);
  EXPECT_EQ(throttled_by_agent, throttled.load());
}

TEST_F(TlsAgent, PrometheusScrapesOverTlsWithBasicAuth) {
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--web.config.file", dir_ + "/web.yml"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  testing::WriteFile(dir_ + "/password", "s3cret-pass\n");
  const int prom_port = testing::FreePort();
  testing::WriteFile(dir_ + "/prometheus.yml",
                     "global:\n  scrape_interval: 1s\n"
                     "scrape_configs:\n  - job_name: stagewatch\n    scheme: https\n"
                     "    tls_config:\n      ca_file: " + dir_ + "/cert.pem\n"
                     "    basic_auth:\n      username: scraper\n      password_file: " + dir_ +
                         "/password\n"
                     "    static_configs:\n      - targets: [\"127.0.0.1:" +
                         std::to_string(agent.port()) + "\"]\n");
  AgentProcess prometheus({"--config.file=" + dir_ + "/prometheus.yml",
                           "--storage.tsdb.path=" + dir_ + "/prom",
                           "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                          nullptr, "/usr/bin/prometheus");
  ASSERT_TRUE(testing::WaitForPort(prom_port)) << prometheus.log();

  httplib::Client api("127.0.0.1", prom_port);
  std::string last;
  const bool scraped = testing::WaitUntil(
      [&] {
        // Samples exist only if a scrape succeeded: TLS verified and credentials accepted.
        httplib::Result r = api.Get("/api/v1/query?query=stagewatch_build_info");
        if (!r) return false;
        last = r->body;
        return r->body.find("\"result\":[{") != std::string::npos;
      },
      20000);
  EXPECT_TRUE(scraped) << last << "\n" << prometheus.log();
}

TEST_F(TlsAgent, RequiredClientCertificateIsVerified) {
  // A CA, and a client certificate it signed; the server certificate is the fixture's.
  const std::string d = dir_;
  const std::string cmd =
      "cd " + d + " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
      "-nodes -days 1 -subj /CN=test-ca -keyout ca-key.pem -out ca.pem && "
      "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-subj /CN=scraper -keyout client-key.pem -out client.csr && "
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 1 "
      "-out client.pem";
  ASSERT_EQ(system((cmd + " >/dev/null 2>&1").c_str()), 0) << cmd;
  testing::WriteFile(d + "/mtls.yml",
                     "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                     "  client_ca_file: ca.pem\n  client_auth_type: RequireAndVerifyClientCert\n");
  auto [rc, out] = testing::RunWithInput("cd " + d + " && promtool check web-config mtls.yml", "");
  EXPECT_EQ(rc, 0) << out;
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--web.config.file", d + "/mtls.yml"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  httplib::Result without = Get(agent.port(), "/metrics");
  EXPECT_TRUE(!without || without->status == 403) << without->status;

  // Signed by another CA (the server's own self-signed certificate): refused.
  httplib::SSLClient stranger("127.0.0.1", agent.port(), d + "/cert.pem", d + "/key.pem");
  stranger.set_ca_cert_path(d + "/cert.pem");
  httplib::Result wrong = stranger.Get("/metrics");
  EXPECT_TRUE(!wrong || wrong->status == 403) << wrong->status;

  httplib::SSLClient client("127.0.0.1", agent.port(), d + "/client.pem", d + "/client-key.pem");
  client.set_ca_cert_path(d + "/cert.pem");
  httplib::Result with = client.Get("/metrics");
  ASSERT_TRUE(with) << httplib::to_string(with.error());
  EXPECT_EQ(with->status, 200);
}

// A rotated certificate is served to the next connection, without a restart; a replacement
// that does not fit its key is refused with a log line, and the pair in use is served on.
TEST_F(TlsAgent, ARotatedCertificateIsServedWithoutARestart) {
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--web.config.file", dir_ + "/web.yml"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  const std::string first = FileFingerprint(dir_ + "/cert.pem");
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(ServedFingerprint(agent.port()), first);

  const std::string next = dir_ + "/next";
  std::filesystem::create_directory(next);
  MakeCertificate(next);
  const std::string second = FileFingerprint(next + "/cert.pem");
  ASSERT_NE(second, first);
  MoveOver(next + "/key.pem", dir_ + "/key.pem");
  MoveOver(next + "/cert.pem", dir_ + "/cert.pem");
  EXPECT_TRUE(testing::WaitUntil([&] { return ServedFingerprint(agent.port()) == second; }, 5000))
      << agent.log();
  // Over a verified connection too, with the new certificate as the CA.
  httplib::Result ok = Get(agent.port(), "/metrics", "scraper", "s3cret-pass");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200);

  // A certificate without its key: refused, said once, and the second pair served on.
  const size_t refusals = Count(agent.log(), "web config not reloaded");
  MakeCertificate(next);
  MoveOver(next + "/cert.pem", dir_ + "/cert.pem");
  std::string served;  // the files are looked at when a connection starts
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        served = ServedFingerprint(agent.port());
        return Count(agent.log(), "web config not reloaded") > refusals;
      },
      5000))
      << agent.log();
  EXPECT_NE(agent.log().find("do not match"), std::string::npos) << agent.log();
  EXPECT_EQ(served, second);
  EXPECT_EQ(ServedFingerprint(agent.port()), second);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // past the next look
  EXPECT_EQ(ServedFingerprint(agent.port()), second);
  EXPECT_EQ(Count(agent.log(), "web config not reloaded"), refusals + 1) << agent.log();
}

// A changed password in the web config file counts from the next request: the new one is let
// in, the old one (remembered as right until then) is not.
TEST_F(TlsAgent, AChangedPasswordCountsWithoutARestart) {
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--web.config.file", dir_ + "/web.yml"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  httplib::Result before = Get(agent.port(), "/metrics", "scraper", "s3cret-pass");
  ASSERT_TRUE(before) << httplib::to_string(before.error());
  ASSERT_EQ(before->status, 200);

  testing::WriteFile(dir_ + "/web.yml.new",
                     "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                     "basic_auth_users:\n  scraper: " + BcryptHash("n3w-pass") + "\n");
  MoveOver(dir_ + "/web.yml.new", dir_ + "/web.yml");
  // A few tries a second: each wrong one takes from the address's failed-login budget.
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        httplib::Result r = Get(agent.port(), "/metrics", "scraper", "n3w-pass");
        return r && r->status == 200;
      },
      5000))
      << agent.log();
  httplib::Result old = Get(agent.port(), "/metrics", "scraper", "s3cret-pass");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, 401);
  EXPECT_NE(agent.log().find("web config reloaded"), std::string::npos) << agent.log();
}

// Pages reach a real Alertmanager served over TLS with basic auth (its own --web.config.file):
// the agent verifies it with tls.ca_file and reads the password from password_file.
TEST_F(TlsAgent, PagesReachAnAlertmanagerOverTlsWithPasswordFile) {
  testing::TestCgroup cgroup("stagewatch/train");
  const int am_port = testing::FreePort();
  testing::WriteFile(dir_ + "/am.yml", "route:\n  receiver: none\nreceivers:\n  - name: none\n");
  AgentProcess alertmanager({"--config.file=" + dir_ + "/am.yml", "--storage.path=" + dir_ + "/am",
                             "--web.config.file=" + dir_ + "/web.yml",
                             "--web.listen-address=127.0.0.1:" + std::to_string(am_port),
                             "--cluster.listen-address="},
                            nullptr, "/usr/bin/prometheus-alertmanager");
  ASSERT_TRUE(testing::WaitForPort(am_port)) << alertmanager.log();

  testing::WriteFile(dir_ + "/password", "s3cret-pass\n");
  testing::WriteFile(dir_ + "/agent.yml",
                     "alerting:\n  alertmanagers: [\"https://127.0.0.1:" + std::to_string(am_port) +
                         "\"]\n  basic_auth: {username: scraper, password_file: " + dir_ +
                         "/password}\n  tls: {ca_file: " + dir_ + "/cert.pem}\n");
  AgentProcess agent({"--config.file", dir_ + "/agent.yml", "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();

  cgroup.SetMemoryLimit(16 << 20);
  ASSERT_EQ(testing::WaitForChild(cgroup.Spawn("sw-tls-hog", testing::HogMemoryForever)), SIGKILL);

  std::string alerts;
  const bool paged = testing::WaitUntil(
      [&] {
        httplib::Result r = Get(am_port, "/api/v2/alerts", "scraper", "s3cret-pass");
        alerts = r ? r->body : "no answer";
        return r && r->status == 200 && alerts.find("StagewatchOOMKill") != std::string::npos;
      },
      15000);
  EXPECT_TRUE(paged) << alerts << agent.log() << alertmanager.log();
  const testing::Scrape scrape = testing::ParseExposition(agent.Get("/metrics").value_or(""));
  EXPECT_EQ(testing::ValueOr(scrape,
                             "stagewatch_alertmanager_requests_total{alertmanager=\"https://"
                             "127.0.0.1:" + std::to_string(am_port) + "\",result=\"failure\"}",
                             -1),
            0);
  EXPECT_EQ(agent.log().find("s3cret-pass"), std::string::npos);
}

TEST(Capabilities, StartedAsRootKeepsNoneAfterAttach) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"}) {
    EXPECT_EQ(CapabilityLine(agent.pid(), set), std::string(set) + ":\t0000000000000000")
        << agent.log();
  }
  EXPECT_EQ(CapabilityLine(agent.pid(), "CapBnd"), "CapBnd:\t0000000000000000");
  // It still serves what the probes count, through the descriptors it holds.
  const testing::Scrape scrape = testing::ParseExposition(agent.Get("/metrics").value_or(""));
  EXPECT_EQ(testing::ValueOr(scrape, R"(stagewatch_probe_attached{probe="oom_kill",attach_type="raw_tracepoint"})", 0), 1);
}

TEST(Capabilities, KeepListIsHonoured) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--capabilities.keep",
                      "cap_net_bind_service"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  EXPECT_EQ(CapabilityLine(agent.pid(), "CapEff"), "CapEff:\t0000000000000400");  // bit 10

  // "none", the default --help and the docs name, is a value the flag takes.
  AgentProcess none({"--web.listen-address", "127.0.0.1:0", "--capabilities.keep", "none"});
  ASSERT_TRUE(none.WaitListening()) << none.log();
  EXPECT_EQ(CapabilityLine(none.pid(), "CapEff"), "CapEff:\t0000000000000000");

  AgentProcess bad({"--web.listen-address", "127.0.0.1:0", "--capabilities.keep", "cap_flying"});
  EXPECT_EQ(bad.WaitExit(), 1);
  EXPECT_NE(bad.log().find("unknown capability \"cap_flying\""), std::string::npos) << bad.log();
}

// As deploy/stagewatch.service runs it: uid 65534, CAP_BPF and CAP_PERFMON ambient, no other
// capability even in the bounding set.
void BecomeNobodyWithBpfCapabilities() {
  const cap_value_t keep[] = {CAP_BPF, CAP_PERFMON};
  for (int cap = 0; cap < static_cast<int>(cap_max_bits()); ++cap) {
    if (cap != CAP_BPF && cap != CAP_PERFMON && cap != CAP_SETPCAP) cap_drop_bound(cap);
  }
  if (prctl(PR_SET_KEEPCAPS, 1) != 0 || setgroups(0, nullptr) != 0 || setgid(65534) != 0 ||
      setuid(65534) != 0) {
    _exit(120);
  }
  cap_t caps = cap_init();
  for (cap_flag_t flag : {CAP_PERMITTED, CAP_EFFECTIVE, CAP_INHERITABLE}) {
    cap_set_flag(caps, flag, 2, keep, CAP_SET);
  }
  if (cap_set_proc(caps) != 0) _exit(121);
  for (cap_value_t cap : keep) {
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0) _exit(122);
  }
}

TEST(Capabilities, NobodyWithOnlyBpfAndPerfmonAttachesEveryProbe) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"}, BecomeNobodyWithBpfCapabilities);
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  const std::string status = testing::ReadFile("/proc/" + std::to_string(agent.pid()) + "/status");
  EXPECT_NE(status.find("Uid:\t65534\t65534\t65534\t65534"), std::string::npos) << status;
  EXPECT_EQ(CapabilityLine(agent.pid(), "CapEff"), "CapEff:\t0000000000000000");

  const testing::Scrape scrape = testing::ParseExposition(agent.Get("/metrics").value_or(""));
  int probes = 0;
  for (const auto& [series, value] : scrape) {
    if (series.rfind("stagewatch_probe_attached{", 0) != 0) continue;
    ++probes;
    EXPECT_EQ(value, 1) << series << "\n" << agent.log();
  }
  EXPECT_GE(probes, 5) << agent.log();  // oom_kill, oom_userspace_kill, sched, memory's
}

}  // namespace
}  // namespace stagewatch
