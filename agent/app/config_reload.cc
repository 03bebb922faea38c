#include "app/config_reload.h"

#include "absl/strings/str_join.h"
#include "log.h"

namespace stagewatch {

absl::Status ApplyLogConfig(const LogConfig& log) {
  absl::StatusOr<LogLevel> level = ParseLogLevel(log.level);
  if (!level.ok()) return level.status();
  absl::StatusOr<LogFormat> format = ParseLogFormat(log.format);
  if (!format.ok()) return format.status();
  Log::Configure(*level, *format);
  return absl::OkStatus();
}

std::vector<std::string> ChangedSections(const Config& a, const Config& b) {
  std::vector<std::string> changed;
  auto check = [&changed](bool same, const char* name) {
    if (!same) changed.push_back(name);
  };
  check(a.web == b.web, "web");
  check(a.log == b.log, "log");
  check(a.cgroup == b.cgroup, "cgroup");
  check(a.discovery == b.discovery, "discovery");
  check(a.oom == b.oom, "oom");
  check(a.memory == b.memory, "memory");
  check(a.anomalies == b.anomalies, "anomalies");
  check(a.alerting == b.alerting, "alerting");
  check(a.runs == b.runs, "runs");
  check(a.pipelines == b.pipelines, "pipelines");
  check(a.stages == b.stages, "stages");
  check(a.collectors == b.collectors, "collectors");
  return changed;
}

void ConfigReload::Reload() {
  if (!load_) return;
  absl::StatusOr<Config> next = load_();
  if (!next.ok()) {
    Log::Error("configuration not reloaded; running on with the one in use",
               {{"err", next.status().message()}});
    return;
  }
  if (absl::Status s = ApplyLogConfig(next->log); !s.ok()) {  // the loader checked it already
    Log::Error("configuration not reloaded; running on with the one in use",
               {{"err", s.message()}});
    return;
  }
  std::vector<std::string> restart = ChangedSections(running_, *next);
  std::erase(restart, "log");
  running_.log = next->log;
  Log::Info("configuration reloaded", {{"log_level", running_.log.level},
                                       {"log_format", running_.log.format}});
  if (!restart.empty()) {
    Log::Warn("configuration: a restart applies these changed sections; running on without them",
              {{"sections", absl::StrJoin(restart, ",")}});
  }
}

}  // namespace stagewatch
