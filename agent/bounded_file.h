// Reads a file the user names (configuration, web configuration, password, TLS material)
// only if it is a regular file of bounded size: a FIFO must not block the agent and
// /dev/zero must not fill its memory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace stagewatch {

constexpr size_t kMaxConfigFileBytes = 1 << 20;  // 1 MiB: far above any real configuration

// `what` names the file in messages, e.g. "config file". The error says what the path is
// instead (a directory, a FIFO, a device) or how large it is, and never quotes its content.
absl::StatusOr<std::string> ReadBoundedFile(const std::string& path, std::string_view what,
                                            size_t max_bytes = kMaxConfigFileBytes);

}  // namespace stagewatch
