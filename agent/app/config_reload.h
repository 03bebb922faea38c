// SIGHUP: the configuration is loaded again as at start (the same --config.file and the same
// flag overrides). A configuration that does not load is refused with a log line and the one in
// use stays. What can change while the agent runs is applied (log.level and log.format); every
// other section that changed is named in a log line as needing a restart.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.h"

namespace stagewatch {

// Sets the process logger from the log section; an error names the bad value.
absl::Status ApplyLogConfig(const LogConfig& log);

// The names of the top-level sections that differ ("log", "stages", ...), in file order.
std::vector<std::string> ChangedSections(const Config& running, const Config& next);

class ConfigReload {
 public:
  using Loader = std::function<absl::StatusOr<Config>()>;
  // `running` is what the agent started with; `load` loads it again (null: nothing to reload).
  ConfigReload(Config running, Loader load)
      : running_(std::move(running)), load_(std::move(load)) {}

  // Loads, applies what can be applied live, and logs what happened.
  void Reload();
  // The configuration as applied so far: the start one with the live changes.
  const Config& running() const { return running_; }

 private:
  Config running_;
  Loader load_;
};

}  // namespace stagewatch
