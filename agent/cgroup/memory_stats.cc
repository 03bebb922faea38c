#include "cgroup/memory_stats.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cgroup_tree.h"
#include "cgroup/limit_files.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// v1 shows "no limit" as PAGE_COUNTER_MAX pages in bytes, which is never below 2^62.
constexpr uint64_t kV1Unlimited = uint64_t{1} << 62;

// A figure's file in each version.
struct MemoryFile {
  const char* v1;
  const char* v2;
  const char* Of(bool v2_file) const { return v2_file ? v2 : v1; }
};
constexpr MemoryFile kUsageFile{"memory.usage_in_bytes", "memory.current"};
constexpr MemoryFile kPeakFile{"memory.max_usage_in_bytes", "memory.peak"};
constexpr MemoryFile kMaxFile{kV1LimitFiles.memory_max, kV2LimitFiles.memory_max};
constexpr MemoryFile kSoftLimitFile{kV1LimitFiles.memory_high, kV2LimitFiles.memory_high};

std::string Path(std::string_view dir, std::string_view name) {
  return absl::StrCat(ToAbsl(dir), "/", ToAbsl(name));
}

// dir/name read and parsed; the read's error (NotFound when missing) or the parser's.
template <typename Parser>
auto ReadIn(CgroupFileRead read, std::string_view dir, std::string_view name, Parser parse)
    -> decltype(parse(std::string_view(), std::string_view())) {
  const std::string file = Path(dir, name);
  absl::StatusOr<std::string> contents = read(file);
  if (!contents.ok()) return contents.status();
  return parse(*contents, file);
}

// Sets `out` from a figure whose file may be missing: NotFound leaves `out` alone.
template <typename T, typename Out>
absl::Status SetIfPresent(absl::StatusOr<T> value, Out& out) {
  if (absl::IsNotFound(value.status())) return absl::OkStatus();
  if (!value.ok()) return value.status();
  out = std::move(*value);
  return absl::OkStatus();
}

// The figures, each from its one file, of the cgroup directory `dir`.
absl::StatusOr<uint64_t> UsageIn(CgroupFileRead read, std::string_view dir, bool v2) {
  return ReadIn(read, dir, kUsageFile.Of(v2), ParseMemoryValue);
}

// Each "key value" line of a keyed file (memory.stat, memory.events), every line checked;
// `take` returns false for a key it already had.
absl::Status ForEachKeyedLine(std::string_view contents, std::string_view file,
                              absl::FunctionRef<bool(std::string_view key, uint64_t value)> take) {
  return ForEachCgroupFileLine(contents, file, [&](std::string_view line) -> const char* {
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos) return "expected \"key value\"";
    uint64_t value = 0;
    if (!ParseDigits(line.substr(space + 1), value)) return "value is not a number";
    if (!take(line.substr(0, space), value)) return "key appears twice";
    return nullptr;
  });
}

absl::StatusOr<std::optional<uint64_t>> MaxIn(CgroupFileRead read, std::string_view dir,
                                              bool v2) {
  return ReadIn(read, dir, kMaxFile.Of(v2), v2 ? ParseMemoryLimitV2 : ParseMemoryLimitV1);
}

absl::StatusOr<std::optional<uint64_t>> SoftLimitIn(CgroupFileRead read, std::string_view dir,
                                                    bool v2) {
  return ReadIn(read, dir, kSoftLimitFile.Of(v2), v2 ? ParseMemoryLimitV2 : ParseMemoryLimitV1);
}

absl::StatusOr<uint64_t> PeakIn(CgroupFileRead read, std::string_view dir, bool v2) {
  return ReadIn(read, dir, kPeakFile.Of(v2), ParseMemoryValue);
}

absl::StatusOr<std::map<std::string, uint64_t>> EventsIn(CgroupFileRead read,
                                                         std::string_view dir) {
  return ReadIn(read, dir, "memory.events", ParseMemoryKeyedFile);
}

absl::Status ReadMemoryStat(CgroupFileRead read, std::string_view dir, MemoryCgroupStats& stats) {
  const std::string file = Path(dir, "memory.stat");
  absl::StatusOr<std::string> contents = read(file);
  if (!contents.ok()) return contents.status();
  return ParseMemoryStat(*contents, file, stats);
}

void FinishWorkingSet(MemoryCgroupStats& stats) {
  // usage and memory.stat are read at different instants, so inactive_file can exceed usage.
  stats.working_set_bytes = stats.usage_bytes > stats.inactive_file_bytes
                                ? stats.usage_bytes - stats.inactive_file_bytes
                                : 0;
}

absl::StatusOr<MemoryCgroupStats> ReadV1(CgroupFileRead read, const std::string& dir) {
  MemoryCgroupStats stats;
  absl::StatusOr<uint64_t> usage = UsageIn(read, dir, false);
  if (!usage.ok()) return usage.status();
  stats.usage_bytes = *usage;

  std::optional<uint64_t> memsw;  // only with swap accounting (swapaccount=1)
  std::optional<uint64_t> failcnt;
  std::optional<std::map<std::string, uint64_t>> oom_control;
  for (absl::Status status :
       {SetIfPresent(MaxIn(read, dir, false), stats.limit_bytes),
        SetIfPresent(PeakIn(read, dir, false), stats.peak_bytes),
        SetIfPresent(ReadIn(read, dir, "memory.memsw.usage_in_bytes", ParseMemoryValue), memsw),
        SetIfPresent(ReadIn(read, dir, "memory.failcnt", ParseMemoryValue), failcnt),
        SetIfPresent(ReadIn(read, dir, "memory.oom_control", ParseMemoryKeyedFile), oom_control),
        ReadMemoryStat(read, dir, stats)}) {
    if (!status.ok()) return status;
  }
  // memsw counts memory + swap; the two files are read apart, so floor the difference at 0.
  if (memsw) stats.swap_bytes = *memsw > stats.usage_bytes ? *memsw - stats.usage_bytes : 0;
  if (failcnt) stats.events["failcnt"] = *failcnt;
  if (oom_control) {
    // oom_kill appeared in Linux 4.13; older kernels only have oom_kill_disable and under_oom.
    if (auto it = oom_control->find("oom_kill"); it != oom_control->end()) {
      stats.events["oom_kill"] = it->second;
    }
  }
  FinishWorkingSet(stats);
  return stats;
}

absl::StatusOr<MemoryCgroupStats> ReadV2(CgroupFileRead read, const std::string& dir) {
  MemoryCgroupStats stats;
  absl::StatusOr<uint64_t> usage = UsageIn(read, dir, true);
  if (absl::IsNotFound(usage.status())) {
    return absl::NotFoundError(
        absl::StrCat(usage.status().message(),
                     " (the memory controller is not enabled for this cgroup, or it is the root)"));
  }
  if (!usage.ok()) return usage.status();
  stats.usage_bytes = *usage;

  for (absl::Status status :
       {SetIfPresent(MaxIn(read, dir, true), stats.limit_bytes),
        SetIfPresent(SoftLimitIn(read, dir, true), stats.high_bytes),
        SetIfPresent(ReadIn(read, dir, "memory.swap.current", ParseMemoryValue), stats.swap_bytes),
        SetIfPresent(PeakIn(read, dir, true), stats.peak_bytes),
        SetIfPresent(EventsIn(read, dir), stats.events),
        ReadMemoryStat(read, dir, stats)}) {
    if (!status.ok()) return status;
  }
  FinishWorkingSet(stats);
  return stats;
}

// The cgroup's directory in the memory hierarchy; NotFound when the host has none.
absl::StatusOr<std::string> MemoryDir(const CgroupLayout& layout, std::string_view cgroup_path) {
  std::string dir = ControllerDir(layout, "memory", cgroup_path);
  if (dir.empty()) return absl::NotFoundError("no memory hierarchy is mounted");
  return dir;
}

}  // namespace

absl::StatusOr<std::map<std::string, uint64_t>> ParseMemoryKeyedFile(std::string_view contents,
                                                                     std::string_view file) {
  std::map<std::string, uint64_t> values;
  absl::Status parsed = ForEachKeyedLine(contents, file, [&values](std::string_view key,
                                                                   uint64_t value) {
    return values.emplace(std::string(key), value).second;
  });
  if (!parsed.ok()) return parsed;
  return values;
}

absl::StatusOr<uint64_t> ParseMemoryValue(std::string_view contents, std::string_view file) {
  if (absl::Status complete = CheckCgroupFileComplete(contents, file); !complete.ok()) {
    return complete;
  }
  const std::string_view text = contents.substr(0, contents.size() - 1);
  uint64_t value = 0;
  if (!ParseDigits(text, value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(file), ": \"", absl::CEscape(ToAbsl(text)), "\" is not a number"));
  }
  return value;
}

absl::StatusOr<std::optional<uint64_t>> ParseMemoryLimitV2(std::string_view contents,
                                                           std::string_view file) {
  if (contents == "max\n") return std::nullopt;
  absl::StatusOr<uint64_t> value = ParseMemoryValue(contents, file);
  if (!value.ok()) return value.status();
  return *value;
}

absl::StatusOr<std::optional<uint64_t>> ParseMemoryLimitV1(std::string_view contents,
                                                           std::string_view file) {
  absl::StatusOr<uint64_t> value = ParseMemoryValue(contents, file);
  if (!value.ok()) return value.status();
  if (*value >= kV1Unlimited) return std::nullopt;
  return *value;
}

absl::Status ParseMemoryStat(std::string_view contents, std::string_view file,
                             MemoryCgroupStats& stats) {
  // v1 lists both the cgroup's own (key) and hierarchical (total_key) values; usage is
  // hierarchical, so the totals match it. v2 has only the plain keys, already hierarchical.
  // Scanned for the three keys, not parsed into a map: a sample reads every domain's.
  static constexpr std::string_view kKeys[] = {"inactive_file", "pgfault", "pgmajfault"};
  std::optional<uint64_t> found[2][std::size(kKeys)];  // [plain, total_][key]
  absl::Status parsed = ForEachKeyedLine(contents, file, [&found](std::string_view key,
                                                                  uint64_t value) {
    const bool total = key.starts_with("total_");
    if (total) key.remove_prefix(std::string_view("total_").size());
    for (size_t i = 0; i < std::size(kKeys); i++) {
      if (key != kKeys[i]) continue;
      if (found[total][i]) return false;
      found[total][i] = value;
    }
    return true;
  });
  if (!parsed.ok()) return parsed;
  auto value = [&found](size_t i) { return found[1][i] ? found[1][i] : found[0][i]; };
  if (!value(0)) {
    return absl::InvalidArgumentError(absl::StrCat(ToAbsl(file), ": no \"inactive_file\" line"));
  }
  stats.inactive_file_bytes = *value(0);
  stats.pgfault = value(1);
  stats.pgmajfault = value(2);
  return absl::OkStatus();
}

absl::StatusOr<MemoryCgroupStats> ReadMemoryStats(const CgroupLayout& layout,
                                                  std::string_view cgroup_path,
                                                  CgroupFileRead read) {
  const std::string dir = ControllerDir(layout, "memory", cgroup_path);
  const bool v2 = layout.key == CGROUP_KEY_DEFAULT;
  if (dir.empty()) {
    return absl::NotFoundError(v2 ? "no cgroup2 hierarchy is mounted to read memory files from"
                                  : "no v1 memory hierarchy is mounted");
  }
  return v2 ? ReadV2(read, dir) : ReadV1(read, dir);
}

absl::StatusOr<uint64_t> ReadMemoryUsage(const CgroupLayout& layout, std::string_view cgroup_path,
                                         CgroupFileRead read) {
  absl::StatusOr<std::string> dir = MemoryDir(layout, cgroup_path);
  if (!dir.ok()) return dir.status();
  return UsageIn(read, *dir, layout.key == CGROUP_KEY_DEFAULT);
}

absl::StatusOr<std::optional<uint64_t>> ReadMemoryMax(const CgroupLayout& layout,
                                                      std::string_view cgroup_path,
                                                      CgroupFileRead read) {
  absl::StatusOr<std::string> dir = MemoryDir(layout, cgroup_path);
  if (!dir.ok()) return dir.status();
  return MaxIn(read, *dir, layout.key == CGROUP_KEY_DEFAULT);
}

absl::StatusOr<std::optional<uint64_t>> ReadMemoryMaxIn(std::string_view dir, bool v2,
                                                        CgroupFileRead read) {
  return MaxIn(read, dir, v2);
}

absl::StatusOr<std::optional<uint64_t>> ReadMemorySoftLimit(const CgroupLayout& layout,
                                                            std::string_view cgroup_path,
                                                            CgroupFileRead read) {
  absl::StatusOr<std::string> dir = MemoryDir(layout, cgroup_path);
  if (!dir.ok()) return dir.status();
  return SoftLimitIn(read, *dir, layout.key == CGROUP_KEY_DEFAULT);
}

absl::StatusOr<uint64_t> ReadMemoryPeak(const CgroupLayout& layout, std::string_view cgroup_path,
                                        CgroupFileRead read) {
  absl::StatusOr<std::string> dir = MemoryDir(layout, cgroup_path);
  if (!dir.ok()) return dir.status();
  return PeakIn(read, *dir, layout.key == CGROUP_KEY_DEFAULT);
}

absl::StatusOr<std::optional<uint64_t>> ReadMemoryFailcnt(const CgroupLayout& layout,
                                                          std::string_view cgroup_path,
                                                          CgroupFileRead read) {
  absl::StatusOr<std::string> dir = MemoryDir(layout, cgroup_path);
  if (!dir.ok()) return dir.status();
  if (layout.key != CGROUP_KEY_DEFAULT) {
    return ReadIn(read, *dir, "memory.failcnt", ParseMemoryValue);
  }
  absl::StatusOr<std::map<std::string, uint64_t>> events = EventsIn(read, *dir);
  if (!events.ok()) return events.status();
  auto max = events->find("max");  // v2 counts the hits of memory.max among its events
  return max == events->end() ? std::nullopt : std::optional<uint64_t>(max->second);
}

std::optional<uint64_t> LowerLimit(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

absl::StatusOr<std::optional<uint64_t>> ReadMemoryLimit(const CgroupLayout& layout,
                                                        std::string_view cgroup_path) {
  absl::StatusOr<std::optional<uint64_t>> max = ReadMemoryMax(layout, cgroup_path);
  if (layout.key != CGROUP_KEY_DEFAULT || !max.ok()) return max;
  absl::StatusOr<std::optional<uint64_t>> high = ReadMemorySoftLimit(layout, cgroup_path);
  if (!high.ok()) return high.status();
  return LowerLimit(*max, *high);
}

}  // namespace stagewatch
