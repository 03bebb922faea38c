// JSON text of what the agent writes (log lines, run data, alerts). Strings are bytes, not
// always UTF-8 (a command's argument, a process's comm, a cgroup's name: whatever their owner
// chose); nlohmann's dump throws at such a byte, which would end the launcher or the agent. Here
// it becomes U+FFFD instead.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace stagewatch {

inline std::string JsonText(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace stagewatch
