// The web configuration as it is now: the file (--web.config.file) and the certificate, key and
// client CA files it names are re-read when they change, as Prometheus' exporters do, so a
// rotated certificate or a changed basic auth password needs no restart.
//
// Each new connection asks for the current configuration; at most once a second that costs a
// stat() of each file, and a re-read only when one changed (inode, size or modification time).
// A new configuration that does not load (bad YAML, an unreadable file, a key that does not
// match its certificate) is refused with one log line, and the one in use stays. What the
// running server cannot change (TLS on or off, client_auth_type, min_version, max_version) is
// kept as it was, with a log line saying a restart applies it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "exporters/http/tls_credentials.h"
#include "exporters/http/web_config.h"

namespace stagewatch::exporters {

struct LiveWebConfig {
  WebServerConfig config;
  TlsCredentials tls;  // null without TLS
};

class WebConfigWatch {
 public:
  // `path` empty: `initial` is all there is and never changes. Fails when `initial`'s TLS
  // files do not load. `on_users` is told the basic auth users after each reload that changed
  // them.
  static absl::StatusOr<std::unique_ptr<WebConfigWatch>> Start(
      std::string path, WebServerConfig initial,
      std::function<void(const std::map<std::string, std::string>&)> on_users);

  // The configuration to serve a new connection with; re-read first when a file changed and
  // the last look was a second ago or more.
  std::shared_ptr<const LiveWebConfig> Current();
  // Re-reads now, changed or not (SIGHUP).
  void Reload();

 private:
  struct FileStamp {
    std::string path;
    bool exists = false;
    uint64_t device = 0, inode = 0, size = 0;
    int64_t modified_ns = 0;
    bool operator==(const FileStamp&) const = default;
  };
  WebConfigWatch() = default;
  std::vector<FileStamp> Stamps(const WebServerConfig& config) const;
  static std::vector<FileStamp> Stamps(const std::vector<std::string>& paths);
  void ReloadLocked();

  std::string path_;
  std::function<void(const std::map<std::string, std::string>&)> on_users_;
  std::mutex mu_;
  std::shared_ptr<const LiveWebConfig> current_;
  std::vector<FileStamp> stamps_;  // of the files as last read, good or bad
  absl::Time last_look_ = absl::InfinitePast();
};

}  // namespace stagewatch::exporters
