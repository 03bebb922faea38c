// What a client or a user can throw at the agent's front door: slow and stuck clients, huge
// bodies, odd telemetry paths, broken URLs and files. Each is served correctly or refused at
// start with a clear message and exit 1; never a signal, never a hang.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "httplib.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using Clock = std::chrono::steady_clock;

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{.sin_family = AF_INET, .sin_port = htons(static_cast<uint16_t>(port))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

long VmKb(pid_t pid, const std::string& field) {
  const std::string status = testing::ReadFile("/proc/" + std::to_string(pid) + "/status");
  const size_t at = status.find(field + ":");
  return at == std::string::npos ? -1 : std::stol(status.substr(at + field.size() + 1));
}

std::string WriteConfig(const std::string& yaml) {
  char path[] = "/tmp/stagewatch-front-door-XXXXXX.yaml";
  close(mkstemps(path, 5));
  testing::WriteFile(path, yaml);
  return path;
}

// Exits 1 within the timeout, its message containing `expected`, and not by a signal.
void ExpectRefused(AgentProcess& agent, const std::string& expected) {
  const int rc = agent.WaitExit(10000);
  EXPECT_EQ(rc, 1) << (rc == -1 ? "still running (a hang)" : "") << agent.log();
  EXPECT_NE(agent.log().find(expected), std::string::npos) << agent.log();
}

TEST(FrontDoor, SixtySlowHeaderClientsDoNotStopScrapes) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  std::vector<int> slow;
  for (int i = 0; i < 60; ++i) {
    const int fd = Connect(agent.port());
    ASSERT_GE(fd, 0);
    ASSERT_GT(write(fd, "GET /metrics HTTP/1.1\r\n", 23), 0);
    slow.push_back(fd);
  }
  std::atomic<bool> done = false;
  std::thread drip([&] {  // one more header line a second, never the blank line
    while (!done) {
      for (int fd : slow) (void)!write(fd, "X-Slow: 1\r\n", 11);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  for (int i = 0; i < 10; ++i) {
    httplib::Client client("127.0.0.1", agent.port());
    client.set_connection_timeout(2);
    client.set_read_timeout(2);
    const Clock::time_point start = Clock::now();
    httplib::Result res = client.Get("/metrics");
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ASSERT_TRUE(res) << "scrape " << i << ": " << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_LT(seconds, 2.0) << "scrape " << i;
  }
  done = true;
  drip.join();
  for (int fd : slow) close(fd);
}

TEST(FrontDoor, GigabytePostLeavesRssSmall) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  const std::string chunk(1 << 20, 'x');
  for (const char* head : {"POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 1073741824\r\n\r\n",
                           "GET /metrics HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "40000000\r\n"}) {
    const int fd = Connect(agent.port());
    ASSERT_GE(fd, 0);
    timeval timeout{.tv_sec = 5, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    signal(SIGPIPE, SIG_IGN);
    ASSERT_GT(write(fd, head, strlen(head)), 0);
    size_t sent = 0;
    while (sent < (size_t{1} << 30)) {
      const ssize_t n = write(fd, chunk.data(), chunk.size());
      if (n <= 0) break;  // the agent answered and closed: it does not read bodies
      sent += static_cast<size_t>(n);
    }
    char answer[64] = {};
    (void)!read(fd, answer, sizeof(answer) - 1);
    close(fd);
    std::printf("%.16s: sent %zu MiB before the agent closed; answer \"%.30s\"\n", head,
                sent >> 20, answer);
  }
  const long peak_kb = VmKb(agent.pid(), "VmHWM");
  EXPECT_GT(peak_kb, 0);
  EXPECT_LT(peak_kb, 100 * 1024) << "peak RSS " << peak_kb << " kB";
  EXPECT_TRUE(agent.Get("/metrics").has_value());  // and it still serves
}

TEST(FrontDoor, RestartOnTheSamePortBindsAtOnce) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const std::string address = "127.0.0.1:" + std::to_string(testing::FreePort());
  {
    AgentProcess first({"--web.listen-address", address});
    ASSERT_TRUE(first.WaitListening()) << first.log();
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(first.Get("/metrics").has_value());
    ASSERT_EQ(first.Stop(), 0) << first.log();
  }
  // A bind that fails is refused at once (as the third agent's below), never retried: the wait
  // is the start-up's own, seconds of BPF loading under the VM stage's emulation.
  AgentProcess second({"--web.listen-address", address});
  EXPECT_TRUE(second.WaitListening()) << second.log();
  EXPECT_TRUE(second.Get("/-/healthy").has_value());
  // A second agent on a port in use is still refused (no SO_REUSEPORT sharing).
  AgentProcess third({"--web.listen-address", address});
  ExpectRefused(third, "Address already in use");
}

TEST(FrontDoor, HealthAndReadiness) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  EXPECT_EQ(agent.Get("/-/healthy").value_or(""), "Healthy.\n");
  EXPECT_TRUE(testing::WaitUntil([&] { return agent.Get("/-/ready").has_value(); }, 5000));
  httplib::Client client("127.0.0.1", agent.port());
  httplib::Result post = client.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(client.Get("/nothing-here")->status, 404);
}

// A thousand query parameters used to fill the connection's memory as they were parsed, and
// the connection closed without an answer.
TEST(FrontDoor, TooManyQueryParametersAreAnswered414) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess agent({"--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  httplib::Client client("127.0.0.1", agent.port());
  for (const int n : {65, 1000, 3000}) {
    std::string query;
    for (int i = 0; i < n; i++) query += (i ? "&a" : "a") + std::to_string(i) + "=b";
    for (const std::string path : {"/runs?", "/metrics?"}) {
      httplib::Result r = client.Get(path + query);
      ASSERT_TRUE(r) << n << " parameters on " << path << ": " << httplib::to_string(r.error());
      EXPECT_EQ(r->status, 414) << n;
      EXPECT_NE(r->body.find(std::to_string(n) + " parameters"), std::string::npos) << r->body;
    }
  }
  // Up to the limit they reach the page, which says what it takes.
  std::string query = "a0=b";
  for (int i = 1; i < 64; i++) query += "&a" + std::to_string(i) + "=b";
  httplib::Result r = client.Get("/api/v1/runs?" + query);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("unknown parameter"), std::string::npos) << r->body;
  EXPECT_EQ(client.Get("/-/healthy")->status, 200);  // and the server serves on
}

TEST(FrontDoor, TelemetryPathIsMatchedLiterally) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  for (const std::string path : {"/m(", "/m[", "/m\\", "/m+"}) {
    AgentProcess agent({"--web.listen-address", "127.0.0.1:0", "--web.telemetry-path", path});
    ASSERT_TRUE(agent.WaitListening()) << path << ": " << agent.log();
    httplib::Client client("127.0.0.1", agent.port());
    httplib::Result exact = client.Get(path.c_str());
    ASSERT_TRUE(exact) << path;
    EXPECT_EQ(exact->status, 200) << path;
    EXPECT_EQ(client.Get("/mmmm")->status, 404) << path;
    EXPECT_EQ(agent.Stop(), 0) << path << ": " << agent.log();
  }
  AgentProcess long_path({"--web.listen-address", "127.0.0.1:0", "--web.telemetry-path",
                          "/" + std::string(30000, 'a')});
  ExpectRefused(long_path, "telemetry path is 30001 characters long; at most 256");
}

TEST(FrontDoor, BadAlertmanagerUrlsAreRefusedByCheckConfigAndAtStart) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  for (const auto& [url, why] : std::vector<std::pair<std::string, std::string>>{
           {"http://", "no host"},
           {"https://[::1", "unterminated IPv6 address"},
           {"http://a b", "spaces"},
           {"http://user:pw@host", "credentials in the URL are not supported"}}) {
    const std::string config = WriteConfig("alerting:\n  alertmanagers: [\"" + url + "\"]\n");
    AgentProcess check({"check-config", config});
    ExpectRefused(check, why);
    AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
    ExpectRefused(agent, why);
    EXPECT_EQ(agent.log().find("listening"), std::string::npos) << agent.log();
    EXPECT_EQ(agent.log().find("pw@"), std::string::npos) << agent.log();
    unlink(config.c_str());
  }
}

TEST(FrontDoor, ConfigFilesMustBeRegularAndSmall) {
  char dir[] = "/tmp/stagewatch-front-door-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string big = std::string(dir) + "/big.yaml";
  testing::WriteFile(big, "# " + std::string(2 << 20, 'x') + "\n");
  for (const auto& [file, why] : std::vector<std::pair<std::string, std::string>>{
           {fifo, "is a FIFO (named pipe); give a regular file"},
           {"/dev/zero", "is a character device; give a regular file"},
           {big, "more than the 1048576 allowed"}}) {
    AgentProcess agent({"--config.file", file, "--web.listen-address", "127.0.0.1:0"});
    ExpectRefused(agent, why);
    AgentProcess check({"check-config", file});
    ExpectRefused(check, why);
    AgentProcess web({"--web.config.file", file, "--web.listen-address", "127.0.0.1:0"});
    ExpectRefused(web, why);
  }
  unlink(fifo.c_str());
  unlink(big.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace stagewatch
