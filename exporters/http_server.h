// The HTTP endpoint: a landing page at "/" and the exposition at the telemetry path.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace stagewatch::exporters {

struct HttpServerOptions {
  std::string listen_address;
  std::string telemetry_path = "/metrics";
  std::function<std::string()> render_metrics;  // the exposition text, built per scrape
};

class HttpServer {
 public:
  // Binds (a port in use is an error that names the address) and serves on its own thread.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options);
  ~HttpServer();  // stops listening and joins the thread

  // The bound address, with the real port when 0 was asked for.
  std::string address() const { return address_; }

 private:
  HttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string address_;
};

}  // namespace stagewatch::exporters
