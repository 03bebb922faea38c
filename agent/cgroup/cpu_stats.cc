#include "cgroup/cpu_stats.h"

#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cgroup_tree.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// The value of `key`, nullopt when the file has no such line.
absl::StatusOr<std::optional<uint64_t>> OptionalKey(std::string_view contents, std::string_view key,
                                                    std::string_view file) {
  absl::StatusOr<uint64_t> value = ParseFlatKeyedValue(contents, key, file);
  if (absl::IsNotFound(value.status())) return std::nullopt;
  if (!value.ok()) return value.status();
  return *value;
}

absl::StatusOr<uint64_t> UsecToNs(uint64_t usec, std::string_view key, std::string_view file) {
  if (usec > std::numeric_limits<uint64_t>::max() / 1000) {
    return absl::OutOfRangeError(
        absl::StrCat(ToAbsl(file), ": ", ToAbsl(key), " ", usec, " overflows 64-bit nanoseconds"));
  }
  return usec * 1000;
}

// cpu.stat of the cgroup directory `dir`, v2's or v1's (the cpu hierarchy's).
absl::StatusOr<CpuCgroupStats> CpuStatIn(CgroupFileRead read, const std::string& dir, bool v2) {
  const std::string file = absl::StrCat(dir, "/cpu.stat");
  absl::StatusOr<std::string> contents = read(file);
  if (!contents.ok()) return contents.status();
  return v2 ? ParseCpuStatV2(*contents, file) : ParseCpuStatV1(*contents, file);
}

absl::StatusOr<uint64_t> CpuacctUsageIn(CgroupFileRead read, const std::string& dir) {
  const std::string file = absl::StrCat(dir, "/cpuacct.usage");
  absl::StatusOr<std::string> contents = read(file);
  if (!contents.ok()) return contents.status();
  return ParseCpuacctUsage(*contents, file);
}

}  // namespace

absl::StatusOr<CpuCgroupStats> ParseCpuStatV1(std::string_view contents, std::string_view file) {
  if (absl::Status complete = CheckCgroupFileComplete(contents, file); !complete.ok()) {
    return complete;
  }
  CpuCgroupStats stats;
  // The v1 cpu controller always writes all three; a missing one means a broken file.
  for (auto [key, field] :
       {std::pair{"nr_periods", &stats.nr_periods}, std::pair{"nr_throttled", &stats.nr_throttled},
        std::pair{"throttled_time", &stats.throttled_ns}}) {
    absl::StatusOr<uint64_t> value = ParseFlatKeyedValue(contents, key, file);
    if (!value.ok()) return value.status();
    *field = *value;
  }
  return stats;
}

absl::StatusOr<uint64_t> ParseCpuacctUsage(std::string_view contents, std::string_view file) {
  if (absl::Status complete = CheckCgroupFileComplete(contents, file); !complete.ok()) {
    return complete;
  }
  std::string_view text = contents.substr(0, contents.size() - 1);
  uint64_t value = 0;
  if (!ParseDigits(text, value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(file), ": \"", absl::CEscape(ToAbsl(text)), "\" is not a number"));
  }
  return value;
}

absl::StatusOr<CpuCgroupStats> ParseCpuStatV2(std::string_view contents, std::string_view file) {
  if (absl::Status complete = CheckCgroupFileComplete(contents, file); !complete.ok()) {
    return complete;
  }
  CpuCgroupStats stats;
  absl::StatusOr<uint64_t> usage_us = ParseFlatKeyedValue(contents, "usage_usec", file);
  if (!usage_us.ok()) return usage_us.status();
  absl::StatusOr<uint64_t> usage_ns = UsecToNs(*usage_us, "usage_usec", file);
  if (!usage_ns.ok()) return usage_ns.status();
  stats.usage_ns = *usage_ns;

  absl::StatusOr<std::optional<uint64_t>> periods = OptionalKey(contents, "nr_periods", file);
  absl::StatusOr<std::optional<uint64_t>> throttled = OptionalKey(contents, "nr_throttled", file);
  absl::StatusOr<std::optional<uint64_t>> throttled_us =
      OptionalKey(contents, "throttled_usec", file);
  for (const auto* value : {&periods, &throttled, &throttled_us}) {
    if (!value->ok()) return value->status();
  }
  const int present = periods->has_value() + throttled->has_value() + throttled_us->has_value();
  if (present == 0) return stats;  // no cpu controller in this cgroup
  if (present != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(file),
        ": has only some of nr_periods, nr_throttled and throttled_usec (truncated?)"));
  }
  absl::StatusOr<uint64_t> throttled_ns = UsecToNs(**throttled_us, "throttled_usec", file);
  if (!throttled_ns.ok()) return throttled_ns.status();
  stats.nr_periods = **periods;
  stats.nr_throttled = **throttled;
  stats.throttled_ns = *throttled_ns;
  return stats;
}

absl::StatusOr<CpuCgroupStats> ReadCpuStats(const CgroupLayout& layout,
                                            std::string_view cgroup_path, CgroupFileRead read) {
  if (layout.key == CGROUP_KEY_DEFAULT) {
    const std::string dir = ControllerDir(layout, "cpu", cgroup_path);
    if (dir.empty()) return absl::NotFoundError("no cgroup2 hierarchy is mounted to read cpu.stat");
    return CpuStatIn(read, dir, true);
  }

  const std::string cpu_dir = ControllerDir(layout, "cpu", cgroup_path);
  const std::string cpuacct_dir = ControllerDir(layout, "cpuacct", cgroup_path);
  if (cpu_dir.empty() && cpuacct_dir.empty()) {
    return absl::NotFoundError("neither the v1 cpu nor the v1 cpuacct hierarchy is mounted");
  }
  CpuCgroupStats stats;
  if (!cpu_dir.empty()) {
    absl::StatusOr<CpuCgroupStats> throttling = CpuStatIn(read, cpu_dir, false);
    if (!throttling.ok()) return throttling.status();
    stats = *throttling;
  }
  if (!cpuacct_dir.empty()) {
    absl::StatusOr<uint64_t> usage = CpuacctUsageIn(read, cpuacct_dir);
    if (!usage.ok()) return usage.status();
    stats.usage_ns = *usage;
  }
  return stats;
}

absl::StatusOr<CpuCgroupStats> ReadCpuStat(const CgroupLayout& layout,
                                           std::string_view cgroup_path, CgroupFileRead read) {
  const std::string dir = ControllerDir(layout, "cpu", cgroup_path);
  if (dir.empty()) return absl::NotFoundError("no cpu hierarchy is mounted to read cpu.stat");
  return CpuStatIn(read, dir, layout.key == CGROUP_KEY_DEFAULT);
}

absl::StatusOr<uint64_t> ReadCpuacctUsage(const CgroupLayout& layout,
                                          std::string_view cgroup_path, CgroupFileRead read) {
  const std::string dir =
      layout.key == CGROUP_KEY_DEFAULT ? "" : ControllerDir(layout, "cpuacct", cgroup_path);
  if (dir.empty()) return absl::NotFoundError("no v1 cpuacct hierarchy is mounted");
  return CpuacctUsageIn(read, dir);
}

}  // namespace stagewatch
