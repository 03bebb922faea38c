// The HTTP server's front door against real clients on loopback: a connection that sends
// nothing is closed after the idle timeout, and a TLS client below the web config's
// min_version is refused while one at or above it is served (openssl s_client at each
// version, told to offer the old versions its own defaults leave out).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "exporters/http/http_server.h"
#include "exporters/http/web_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs_test_util.h"
#include "test_support.h"

namespace stagewatch::exporters {
namespace {

using stagewatch::testing::TempDir;

int PortOf(const HttpServer& server) {
  const std::string address = server.address();
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port)) << address;
  return port;
}

absl::StatusOr<std::unique_ptr<HttpServer>> StartServer(WebServerConfig web,
                                                        HttpLimits limits = {}) {
  HttpServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.web = std::move(web);
  options.render_metrics = [](std::string* out) { out->append("stagewatch_up 1\n"); };
  options.ready = [] { return true; };
  return HttpServer::Start(std::move(options), limits);
}

// A loopback connection to `port`, or -1.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A client that opens a connection and sends nothing holds one of the server's connection
// slots until the server closes it: after the idle timeout, not never.
TEST(HttpFrontDoorTest, AnIdleConnectionIsClosedAfterTheIdleTimeout) {
  auto server = StartServer({}, HttpLimits{.idle_timeout_seconds = 1});
  ASSERT_TRUE(server.ok()) << server.status();
  const int idle = Connect(PortOf(**server));
  ASSERT_GE(idle, 0) << strerror(errno);
  // Half a request line is as idle as nothing: the timeout counts from the last byte.
  ASSERT_EQ(send(idle, "GET /metr", 9, MSG_NOSIGNAL), 9);
  timeval bound{.tv_sec = static_cast<time_t>(10 * testing::DeadlineScale()), .tv_usec = 0};
  setsockopt(idle, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
  char byte;
  const ssize_t n = recv(idle, &byte, 1, 0);
  const int error = errno;
  close(idle);
  EXPECT_EQ(n, 0) << (n < 0 ? absl::StrCat("still open after ", bound.tv_sec,
                                           " s: ", strerror(error))
                            : "the server answered half a request line");

  // A client that does send its request is answered on a connection of its own.
  const int busy = Connect(PortOf(**server));
  ASSERT_GE(busy, 0);
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(send(busy, request.data(), request.size(), MSG_NOSIGNAL), ssize_t(request.size()));
  setsockopt(busy, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
  std::string reply;
  char buf[4096];
  for (ssize_t got; (got = recv(busy, buf, sizeof(buf), 0)) > 0;) reply.append(buf, got);
  close(busy);
  EXPECT_THAT(reply, ::testing::StartsWith("HTTP/1.1 200"));
}

class TlsFloorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=stagewatch-test -addext subjectAltName=IP:127.0.0.1 -keyout " +
        dir_.file("key.pem") + " -out " + dir_.file("cert.pem") + " 2>&1";
    ASSERT_EQ(system(cmd.c_str()), 0) << cmd;
  }

  // The server as a site's web config with `min_version` sets it up.
  std::unique_ptr<HttpServer> Serve(const std::string& min_version) {
    std::ofstream(dir_.file("web.yml"))
        << "tls_server_config:\n  cert_file: " << dir_.file("cert.pem")
        << "\n  key_file: " << dir_.file("key.pem") << "\n  min_version: " << min_version << "\n";
    absl::StatusOr<WebServerConfig> web = LoadWebConfigFile(dir_.file("web.yml"));
    EXPECT_TRUE(web.ok()) << web.status();
    if (!web.ok()) return nullptr;
    auto server = StartServer(*web);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(*server) : nullptr;
  }

  // Whether a handshake at exactly `version` (openssl's flag: tls1, tls1_1, ...) succeeds.
  // SECLEVEL=0 lets the client offer TLS 1.0 and 1.1 and their SHA-1 suites.
  bool Handshakes(int port, const std::string& version, std::string* log) {
    const std::string cmd = absl::StrCat(
        "openssl s_client -connect 127.0.0.1:", port, " -", version,
        " -cipher DEFAULT:@SECLEVEL=0 -brief < /dev/null 2>&1");
    auto [rc, out] = testing::RunWithInput(cmd, "");
    *log = cmd + "\n" + out;
    return rc == 0 && out.find("CONNECTION ESTABLISHED") != std::string::npos;
  }

  TempDir dir_;
};

// Each min_version a web config may name is the floor: every older version is refused, it and
// the newer ones are served. The client is the same at every floor, so a refusal is the
// server's.
TEST_F(TlsFloorTest, EveryClientBelowMinVersionIsRefusedAndEveryOtherIsServed) {
  const std::vector<std::pair<std::string, std::string>> versions = {
      {"TLS10", "tls1"}, {"TLS11", "tls1_1"}, {"TLS12", "tls1_2"}, {"TLS13", "tls1_3"}};
  for (size_t floor = 0; floor < versions.size(); ++floor) {
    std::unique_ptr<HttpServer> server = Serve(versions[floor].first);
    ASSERT_NE(server, nullptr);
    for (size_t client = 0; client < versions.size(); ++client) {
      std::string log;
      EXPECT_EQ(Handshakes(PortOf(*server), versions[client].second, &log), client >= floor)
          << "min_version " << versions[floor].first << ", client " << versions[client].second
          << ":\n" << log;
    }
  }
}

}  // namespace
}  // namespace stagewatch::exporters
