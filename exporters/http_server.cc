#include "exporters/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "listen_address.h"
#include "log.h"
#include "version.h"

namespace stagewatch::exporters {
namespace {

constexpr const char* kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string LandingPage(const std::string& telemetry_path) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html><head><title>stagewatch</title></head><body>\n"
      "<h1>stagewatch</h1>\n<p>Per-pipeline-stage OOM kills, memory and CPU contention, "
      "traced with eBPF.</p>\n<p><a href=\"", telemetry_path, "\">Metrics</a></p>\n",
      "<p>Version ", kVersion, " (", kRevision, ")</p>\n</body></html>\n");
}

// httplib reports only a bool; binding a probe socket first gives the user the real reason.
absl::Status CheckCanBind(const ListenAddress& a) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const std::string port = std::to_string(a.port);
  if (int rc = getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve listen host \"", a.host, "\": ", gai_strerror(rc)));
  }
  int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc = fd < 0 ? -1 : bind(fd, res->ai_addr, res->ai_addrlen);
  if (rc == 0) rc = listen(fd, 1);
  int err = errno;
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  if (rc == 0) return absl::OkStatus();
  std::string hint = err == EADDRINUSE ? "; another process listens there: stop it or pick "
                                         "another address with --web.listen-address"
                     : err == EACCES ? "; ports below 1024 need privileges" : "";
  return absl::UnavailableError(absl::StrCat("cannot listen on ", a.host, ":", a.port, ": ",
                                             strerror(err), hint));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options) {
  absl::StatusOr<ListenAddress> addr = ParseListenAddress(options.listen_address);
  if (!addr.ok()) return addr.status();
  if (absl::Status s = CheckCanBind(*addr); !s.ok()) return s;

  std::unique_ptr<HttpServer> http(new HttpServer());
  http->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *http->server_;
  const std::string landing = LandingPage(options.telemetry_path);
  server.Get("/", [landing](const httplib::Request&, httplib::Response& res) {
    res.set_content(landing, "text/html; charset=utf-8");
  });
  auto render = std::move(options.render_metrics);
  server.Get(options.telemetry_path, [render](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), kExpositionContentType);
  });

  int port = addr->port;
  if (port == 0) {
    port = server.bind_to_any_port(addr->host);
  } else if (!server.bind_to_port(addr->host, port)) {
    port = -1;
  }
  if (port < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address, "; pick another address with "
                     "--web.listen-address"));
  }
  const bool v6 = addr->host.find(':') != std::string::npos;
  http->address_ = v6 ? absl::StrCat("[", addr->host, "]:", port) : absl::StrCat(addr->host, ":", port);
  http->thread_ = std::thread([&server] { server.listen_after_bind(); });
  return http;
}

HttpServer::~HttpServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace stagewatch::exporters
