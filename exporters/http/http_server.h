// The HTTP endpoint: a landing page at "/", the exposition at the telemetry path, and
// /-/healthy and /-/ready for service managers and Kubernetes probes.
//
// Built on libmicrohttpd's event loop (epoll, a few worker threads) rather than a thread per
// connection, so clients that send slowly or never finish cost a socket, not a worker:
// scrapes are served whatever other clients do. Idle connections time out, request headers
// are bounded by a per-connection memory pool, request bodies are never read, and the
// listen socket has the kernel's full backlog. TLS and basic auth come from the web
// configuration (exporters/http/web_config.h), re-read when its files change, and each new
// connection gets the certificate current then; credentials are checked through the auth gate
// (exporters/http/auth_gate.h), off the serving threads, with requests suspended meanwhile.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exporters/http/auth_gate.h"
#include "exporters/http/web_config.h"

struct MHD_Daemon;

namespace stagewatch::exporters {

// A GET (or HEAD) request for an extra page: the decoded path and query parameters (a repeated
// parameter keeps its last value).
struct HttpRequest {
  std::string path;
  std::map<std::string, std::string> query;
};
struct HttpReply {
  unsigned int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};
// Serves `path` exactly, or, when it ends in '/', every path beneath it too. Behind basic auth
// like the metrics; the server keeps its limits (no bodies, bounded request line).
struct ExtraHandler {
  std::string path;
  std::function<HttpReply(const HttpRequest&)> handle;
};

struct HttpServerOptions {
  std::string listen_address;
  std::string telemetry_path = "/metrics";  // matched literally
  WebServerConfig web;                      // TLS and basic auth; default: plain, open
  // The file `web` was read from: re-read when it or a file it names changes, and on
  // ReloadWebConfig() (exporters/http/web_config_watch.h). Empty: `web` never changes.
  std::string web_config_file;
  // Writes the exposition text into *out, which is empty but keeps the room an earlier
  // scrape's text took (exposition_buffers.h).
  std::function<void(std::string* out)> render_metrics;
  std::function<bool()> ready;                  // /-/ready answers 200 once it is true
  std::vector<ExtraHandler> handlers;           // more pages, e.g. /runs
};

// Limits of the front door; the defaults suit a node agent scraped by a few Prometheus.
struct HttpLimits {
  int worker_threads = 4;          // each runs its own epoll loop
  int idle_timeout_seconds = 10;   // a connection that sends nothing for this long is closed
  int max_connections = 1024;      // beyond it new connections are refused at once
  size_t connection_memory = 64 << 10;  // request line + headers must fit
  size_t max_path = 1024;               // a longer path is answered 414
  size_t max_query_parameters = 64;     // more are answered 414 (the pages read a few)
};

class HttpServer {
 public:
  // Binds (the error names the address and why, e.g. in use) and serves on its own threads.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                           HttpLimits limits = {});
  ~HttpServer();  // stops serving, closes every connection and the listen socket
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound address, with the real port when 0 was asked for.
  std::string address() const { return address_; }
  // What basic auth has checked and throttled so far (all zero without basic auth).
  AuthGateStats auth_stats() const;
  // Re-reads the web configuration file now (SIGHUP), as when it changes; a bad one is
  // refused with a log line and the one in use stays.
  void ReloadWebConfig();

 private:
  struct Handler;
  HttpServer() = default;

  std::unique_ptr<Handler> handler_;
  MHD_Daemon* daemon_ = nullptr;
  std::string address_;
};

}  // namespace stagewatch::exporters
