#include "cgroup/cpu_limits.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cgroup/limit_files.h"
#include "string_util.h"

namespace stagewatch {
namespace {

constexpr uint64_t kDefaultWeight = 100;   // cgroup2 cpu.weight
constexpr uint64_t kDefaultShares = 1024;  // v1 cpu.shares

bool PositiveNumber(std::string_view text, int64_t& v) {
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(ToAbsl(text)), &v) && v > 0;
}

// The cgroup's directory in the cpu hierarchy; NotFound when the host has none.
absl::StatusOr<std::string> CpuDir(const CgroupLayout& layout, std::string_view cgroup_path) {
  std::string dir = ControllerDir(layout, "cpu", cgroup_path);
  if (dir.empty()) return absl::NotFoundError("no cpu hierarchy is mounted");
  return dir;
}

absl::StatusOr<std::string> ReadIn(CgroupFileRead read, const std::string& dir,
                                   std::string_view name) {
  return read(absl::StrCat(dir, "/", ToAbsl(name)));
}

}  // namespace

std::optional<double> CpuMaxCoresOf(std::string_view quota, std::string_view period, bool v2) {
  std::vector<std::string_view> fields;
  if (v2) {
    fields = SplitNonEmpty(quota, ' ');  // the newline goes with the last field
  } else {
    fields = {quota, period};
  }
  int64_t quota_us = 0, period_us = 0;
  if (fields.size() != 2 || !PositiveNumber(fields[0], quota_us) ||
      !PositiveNumber(fields[1], period_us)) {
    return std::nullopt;  // "max", -1, or unreadable
  }
  return double(quota_us) / double(period_us);
}

std::optional<uint32_t> CpuWeightOf(std::string_view text, bool v2) {
  uint64_t v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ToAbsl(text)), &v)) return std::nullopt;
  if (v == (v2 ? kDefaultWeight : kDefaultShares)) return std::nullopt;
  if (v2) return uint32_t(v);
  const double weight = std::round(double(v) * kDefaultWeight / kDefaultShares);
  return uint32_t(std::clamp(weight, 1.0, 10000.0));  // cgroup2's range
}

absl::StatusOr<std::optional<double>> ReadCpuMaxCores(const CgroupLayout& layout,
                                                      std::string_view cgroup_path,
                                                      CgroupFileRead read) {
  absl::StatusOr<std::string> dir = CpuDir(layout, cgroup_path);
  if (!dir.ok()) return dir.status();
  const bool v2 = layout.key == CGROUP_KEY_DEFAULT;
  const LimitFiles& files = LimitFilesOf(v2);
  absl::StatusOr<std::string> quota = ReadIn(read, *dir, files.cpu_max);
  if (!quota.ok()) return quota.status();
  absl::StatusOr<std::string> period =
      v2 ? std::string() : ReadIn(read, *dir, files.cpu_period);
  if (!period.ok()) return period.status();
  return CpuMaxCoresOf(*quota, *period, v2);
}

absl::StatusOr<std::optional<uint32_t>> ReadCpuWeight(const CgroupLayout& layout,
                                                      std::string_view cgroup_path,
                                                      CgroupFileRead read) {
  absl::StatusOr<std::string> dir = CpuDir(layout, cgroup_path);
  if (!dir.ok()) return dir.status();
  const bool v2 = layout.key == CGROUP_KEY_DEFAULT;
  absl::StatusOr<std::string> weight = ReadIn(read, *dir, LimitFilesOf(v2).cpu_weight);
  if (!weight.ok()) return weight.status();
  return CpuWeightOf(*weight, v2);
}

absl::StatusOr<double> ReadCfsPeriodSeconds(const CgroupLayout& layout,
                                            std::string_view cgroup_path, CgroupFileRead read) {
  absl::StatusOr<std::string> dir = CpuDir(layout, cgroup_path);
  if (!dir.ok()) return dir.status();
  const bool v2 = layout.key == CGROUP_KEY_DEFAULT;
  // cgroup2 keeps the period in cpu.max, after the quota.
  const std::string file =
      absl::StrCat(*dir, "/", v2 ? kV2LimitFiles.cpu_max : kV1LimitFiles.cpu_period);
  absl::StatusOr<std::string> text = read(file);
  if (!text.ok()) return text.status();
  const std::vector<std::string_view> fields = SplitNonEmpty(*text, ' ');
  int64_t period_us = 0;
  if (fields.size() != (v2 ? 2u : 1u) || !PositiveNumber(fields.back(), period_us)) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": \"", absl::CEscape(ToAbsl(*text)), "\" holds no CFS period"));
  }
  return double(period_us) / 1e6;
}

}  // namespace stagewatch
