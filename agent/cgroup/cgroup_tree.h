// Small readers for cgroupfs files, shared by the collectors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace stagewatch {

// Reads a whole cgroupfs file (they report a size of 0 or 4096, so read to EOF). Errors name
// the file and the errno text; a missing file is NotFound.
absl::StatusOr<std::string> ReadCgroupFile(const std::string& path);
// How a reader gets a file's contents: ReadCgroupFile, or a cache of open files (the sampler).
using CgroupFileRead = absl::FunctionRef<absl::StatusOr<std::string>(const std::string& path)>;

// cgroupfs always ends its files with a newline: InvalidArgument when `contents` is empty or
// its last line has none (it was cut short). `file` names the file in messages.
absl::Status CheckCgroupFileComplete(std::string_view contents, std::string_view file);

// Each line of a cgroupfs file in order, once CheckCgroupFileComplete passed: `take` returns
// nullptr for a line it took, else what is wrong with it, which ends the walk with
// InvalidArgument "<file>: line N \"<line>\": <what>".
absl::Status ForEachCgroupFileLine(std::string_view contents, std::string_view file,
                                   absl::FunctionRef<const char*(std::string_view line)> take);

// The value of `key` in a flat keyed file of "key value" lines (memory.events,
// memory.oom_control, cpu.stat). NotFound when the key is missing, InvalidArgument when its
// value is not an unsigned number; `file_for_errors` names the file in messages.
absl::StatusOr<uint64_t> ParseFlatKeyedValue(std::string_view contents, std::string_view key,
                                             std::string_view file_for_errors);

}  // namespace stagewatch
