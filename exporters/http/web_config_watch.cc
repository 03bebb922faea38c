#include "exporters/http/web_config_watch.h"

#include <sys/stat.h>

#include "absl/strings/str_join.h"
#include "log.h"

namespace stagewatch::exporters {
namespace {

constexpr absl::Duration kLookInterval = absl::Seconds(1);

// Keeps in `next` what a running server cannot change, as `running` has it; returns the names
// of what was kept although the file changed it.
std::vector<std::string> KeepWhatNeedsARestart(const WebServerConfig& running,
                                               WebServerConfig& next) {
  std::vector<std::string> kept;
  if (running.tls.has_value() != next.tls.has_value()) {
    kept.push_back("tls_server_config");
    next.tls = running.tls;
    return kept;
  }
  if (!running.tls) return kept;
  const WebTlsConfig& was = *running.tls;
  WebTlsConfig& is = *next.tls;
  if (was.client_auth != is.client_auth) kept.push_back("client_auth_type");
  if (was.min_version != is.min_version) kept.push_back("min_version");
  if (was.max_version != is.max_version) kept.push_back("max_version");
  is.client_auth = was.client_auth;
  is.min_version = was.min_version;
  is.max_version = was.max_version;
  return kept;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WebConfigWatch>> WebConfigWatch::Start(
    std::string path, WebServerConfig initial,
    std::function<void(const std::map<std::string, std::string>&)> on_users) {
  auto live = std::make_shared<LiveWebConfig>();
  if (initial.tls) {
    absl::StatusOr<TlsCredentials> tls = LoadTlsCredentials(*initial.tls);
    if (!tls.ok()) return tls.status();
    live->tls = *std::move(tls);
  }
  live->config = std::move(initial);
  std::unique_ptr<WebConfigWatch> watch(new WebConfigWatch());
  watch->path_ = std::move(path);
  watch->on_users_ = std::move(on_users);
  watch->stamps_ = watch->Stamps(live->config);
  watch->current_ = std::move(live);
  watch->last_look_ = absl::Now();
  return watch;
}

std::vector<WebConfigWatch::FileStamp> WebConfigWatch::Stamps(
    const WebServerConfig& config) const {
  std::vector<std::string> paths = {path_};
  if (config.tls) {
    paths.insert(paths.end(),
                 {config.tls->cert_file, config.tls->key_file, config.tls->client_ca_file});
  }
  return Stamps(paths);
}

std::vector<WebConfigWatch::FileStamp> WebConfigWatch::Stamps(
    const std::vector<std::string>& paths) {
  std::vector<FileStamp> stamps;
  for (const std::string& p : paths) {
    FileStamp s{.path = p};
    struct stat st {};
    if (!p.empty() && stat(p.c_str(), &st) == 0) {
      s = {.path = p, .exists = true, .device = st.st_dev, .inode = st.st_ino,
           .size = static_cast<uint64_t>(st.st_size),
           .modified_ns = st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec};
    }
    stamps.push_back(std::move(s));
  }
  return stamps;
}

std::shared_ptr<const LiveWebConfig> WebConfigWatch::Current() {
  std::lock_guard lock(mu_);
  if (path_.empty()) return current_;
  const absl::Time now = absl::Now();
  if (now - last_look_ >= kLookInterval) {
    last_look_ = now;
    // The files last read, good or bad: a refused file is read again only once it changes.
    std::vector<std::string> paths;
    for (const FileStamp& s : stamps_) paths.push_back(s.path);
    if (Stamps(paths) != stamps_) ReloadLocked();
  }
  return current_;
}

void WebConfigWatch::Reload() {
  std::lock_guard lock(mu_);
  if (path_.empty()) return;
  last_look_ = absl::Now();
  ReloadLocked();
}

void WebConfigWatch::ReloadLocked() {
  // Stamped before reading: a file that changes while it is read is read again next time.
  stamps_ = Stamps(current_->config);
  auto refuse = [this](const absl::Status& why) {
    Log::Warn("web config not reloaded; serving on with the one in use",
              {{"file", path_}, {"err", why.message()}});
  };
  absl::StatusOr<WebServerConfig> next = LoadWebConfigFile(path_);
  if (!next.ok()) return refuse(next.status());
  const std::vector<std::string> kept = KeepWhatNeedsARestart(current_->config, *next);
  auto live = std::make_shared<LiveWebConfig>();
  if (next->tls) {
    // The files the new configuration names count from now on, even when they fail to load.
    stamps_ = Stamps(*next);
    absl::StatusOr<TlsCredentials> tls = LoadTlsCredentials(*next->tls);
    if (!tls.ok()) return refuse(tls.status());
    live->tls = *std::move(tls);
  }
  const bool users_changed = next->basic_auth_users != current_->config.basic_auth_users;
  live->config = *std::move(next);
  current_ = std::move(live);
  if (users_changed && on_users_) on_users_(current_->config.basic_auth_users);
  Log::Info("web config reloaded",
            {{"file", path_},
             {"tls", current_->tls != nullptr},
             {"basic_auth_users", static_cast<int64_t>(current_->config.basic_auth_users.size())}});
  if (!kept.empty()) {
    Log::Warn("web config: a restart applies these changes; kept as they were",
              {{"file", path_}, {"keys", absl::StrJoin(kept, ",")}});
  }
}

}  // namespace stagewatch::exporters
