#include "runs/run_cgroup_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "cgroup/memory_stats.h"
#include "cgroup/psi.h"
#include "string_util.h"

namespace stagewatch {
namespace {

std::string FileIn(const CgroupLayout& layout, const char* controller, const std::string& path,
                   const char* name) {
  const std::string dir = ControllerDir(layout, controller, path);
  return dir.empty() ? "" : absl::StrCat(dir, "/", name);
}

constexpr uint64_t kDefaultWeight = 100;   // cgroup2 cpu.weight
constexpr uint64_t kDefaultShares = 1024;  // v1 cpu.shares

}  // namespace

std::optional<uint64_t> SoftLimitOf(std::string_view text, bool v2) {
  absl::StatusOr<std::optional<uint64_t>> limit =
      v2 ? ParseMemoryLimitV2(text, "memory.high") : ParseMemoryLimitV1(text, "soft limit");
  return limit.ok() ? *limit : std::nullopt;
}

std::optional<double> CpuMaxCoresOf(std::string_view quota, std::string_view period, bool v2) {
  std::vector<std::string_view> fields;
  if (v2) {
    fields = SplitNonEmpty(quota, ' ');  // the newline goes with the last field
  } else {
    fields = {quota, period};
  }
  int64_t quota_us = 0, period_us = 0;
  auto number = [](std::string_view text, int64_t& v) {
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(ToAbsl(text)), &v) && v > 0;
  };
  if (fields.size() != 2 || !number(fields[0], quota_us) || !number(fields[1], period_us)) {
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

RunLimits ReadRunLimits(const CgroupLayout& layout, const std::string& cgroup_path) {
  OpenFileBudget none;  // read once: nothing stays open
  RunCgroupFiles files(layout, cgroup_path, &none);
  const absl::Time now = absl::Now();
  RunLimits limits = files.ReadLimits(now);
  limits.memory_max_bytes = files.ReadMemoryMax(now);
  return limits;
}

RunCgroupFiles::RunCgroupFiles(const CgroupLayout& layout, const std::string& cgroup_path,
                               OpenFileBudget* budget)
    : layout_(layout), cgroup_path_(cgroup_path), v2_(layout.key == CGROUP_KEY_DEFAULT),
      budget_(budget) {
  const std::string& p = cgroup_path;
  files_[kUsage].path =
      FileIn(layout, "memory", p, v2_ ? "memory.current" : "memory.usage_in_bytes");
  files_[kLimit].path = FileIn(layout, "memory", p, v2_ ? "memory.max" : "memory.limit_in_bytes");
  files_[kPeak].path =
      FileIn(layout, "memory", p, v2_ ? "memory.peak" : "memory.max_usage_in_bytes");
  files_[kFailcnt].path = FileIn(layout, "memory", p, v2_ ? "memory.events" : "memory.failcnt");
  // v2: cpu.stat holds usage and throttling; v1: cpuacct.usage and the cpu hierarchy's cpu.stat.
  files_[kCpuUsage].path = v2_ ? "" : FileIn(layout, "cpuacct", p, "cpuacct.usage");
  files_[kCpuStat].path = FileIn(layout, "cpu", p, "cpu.stat");
  files_[kMemoryPsi].path = FileIn(layout, "pressure", p, "memory.pressure");
  files_[kCpuPsi].path = FileIn(layout, "pressure", p, "cpu.pressure");
  files_[kMemoryHigh].path =
      FileIn(layout, "memory", p, v2_ ? "memory.high" : "memory.soft_limit_in_bytes");
  files_[kCpuQuota].path = FileIn(layout, "cpu", p, v2_ ? "cpu.max" : "cpu.cfs_quota_us");
  files_[kCpuPeriod].path = v2_ ? "" : FileIn(layout, "cpu", p, "cpu.cfs_period_us");
  files_[kCpuWeight].path = FileIn(layout, "cpu", p, v2_ ? "cpu.weight" : "cpu.shares");
}

std::optional<uint64_t> RunCgroupFiles::ReadMemoryMax(absl::Time now, int* reads) {
  std::optional<std::string> text = ReadSlot(kLimit, now);
  if (!text) return std::nullopt;
  if (reads) ++*reads;
  absl::StatusOr<std::optional<uint64_t>> limit =
      v2_ ? ParseMemoryLimitV2(*text, files_[kLimit].path)
          : ParseMemoryLimitV1(*text, files_[kLimit].path);
  return limit.ok() ? *limit : std::nullopt;
}

RunLimits RunCgroupFiles::ReadLimits(absl::Time now, int* reads) {
  auto read = [&](Slot slot) {
    std::optional<std::string> text = ReadSlot(slot, now);
    if (reads) *reads += text.has_value();
    return text;
  };
  RunLimits l;
  if (std::optional<std::string> high = read(kMemoryHigh)) {
    l.memory_high_bytes = SoftLimitOf(*high, v2_);
  }
  if (std::optional<std::string> quota = read(kCpuQuota)) {
    std::optional<std::string> period = v2_ ? std::optional<std::string>("") : read(kCpuPeriod);
    if (period) l.cpu_max_cores = CpuMaxCoresOf(*quota, *period, v2_);
  }
  if (std::optional<std::string> weight = read(kCpuWeight)) {
    l.cpu_weight = CpuWeightOf(*weight, v2_);
  }
  return l;
}

RunCgroupFiles::~RunCgroupFiles() {
  for (File& f : files_) {
    if (f.fd < 0) continue;
    close(f.fd);
    budget_->left++;
  }
}

std::optional<std::string> RunCgroupFiles::ReadSlot(Slot slot, absl::Time now) {
  File& f = files_[slot];
  if (f.path.empty() || f.gone) return std::nullopt;
  int fd = f.fd;
  if (fd < 0 && now - f.first_miss >= kOpenWindow) {  // not tried again once the window is past
    f.gone = true;
    return std::nullopt;
  }
  if (fd < 0) {
    fd = open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) {
        f.first_miss = std::min(f.first_miss, now);
        f.gone = ++f.attempts >= kOpenAttempts;
      }
      return std::nullopt;
    }
    f.first_miss = absl::InfiniteFuture();  // found: opened for each read if not kept open
    // Kept open: the files an idle sample reads, the others are read one sample in ten.
    const bool every_sample = slot == kUsage || slot == (v2_ ? kCpuStat : kCpuUsage);
    if (every_sample && budget_->left > 0) {
      budget_->left--;
      f.fd = fd;
    }
  }
  char buf[4096];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  const int error = errno;
  if (fd != f.fd) close(fd);
  if (n < 0) {
    // ENODEV: the cgroup was removed; the file answers nothing any more.
    if (f.fd >= 0) {
      close(f.fd);
      f.fd = -1;
      budget_->left++;
    }
    f.gone = error == ENODEV;
    return std::nullopt;
  }
  return std::string(buf, n);
}

std::optional<uint64_t> RunCgroupFiles::ReadNumber(Slot slot, absl::Time now, int* reads) {
  std::optional<std::string> text = ReadSlot(slot, now);
  if (!text) return std::nullopt;
  ++*reads;
  absl::StatusOr<uint64_t> v = ParseMemoryValue(*text, files_[slot].path);
  return v.ok() ? std::optional(*v) : std::nullopt;
}

std::optional<std::optional<uint64_t>> RunCgroupFiles::ReadFailcnt(absl::Time now, int* reads) {
  std::optional<std::string> text = ReadSlot(kFailcnt, now);
  if (!text) return std::nullopt;
  ++*reads;
  const std::string& file = files_[kFailcnt].path;
  std::optional<uint64_t> failcnt;
  if (!v2_) {
    absl::StatusOr<uint64_t> v = ParseMemoryValue(*text, file);
    if (v.ok()) failcnt = *v;
  } else if (absl::StatusOr<std::map<std::string, uint64_t>> events =
                 ParseMemoryKeyedFile(*text, file);
             events.ok() && events->count("max")) {
    failcnt = events->at("max");
  }
  return std::optional(failcnt);  // read, whether or not it parsed
}

std::optional<RunCgroupReading> RunCgroupFiles::Read(absl::Time now,
                                                     const SampledMemory* sampled) {
  RunCgroupReading r;
  r.usage.at = now;
  // Each file at most once a reading: the idle check's CPU time is the full reading's too.
  std::optional<std::string> texts[kSlots];
  bool tried[kSlots] = {};
  auto read = [&](Slot slot) -> const std::optional<std::string>& {
    if (!tried[slot]) {
      tried[slot] = true;
      texts[slot] = ReadSlot(slot, now);
      r.reads += texts[slot].has_value();
    }
    return texts[slot];
  };
  const Slot cpu_time = v2_ ? kCpuStat : kCpuUsage;
  if (sampled) {
    r.usage.memory_bytes = sampled->usage_bytes;
    r.memory_peak_bytes = sampled->peak_bytes;
    if (v2_) {
      r.memory_failcnt = sampled->failcnt;
    } else {
      std::optional<std::optional<uint64_t>> failcnt = ReadFailcnt(now, &r.reads);
      if (!failcnt) return std::nullopt;  // every v1 memory cgroup has one: it is gone
      r.memory_failcnt = *failcnt;
    }
  } else {
    r.usage.memory_bytes = ReadNumber(kUsage, now, &r.reads);
    if (!r.usage.memory_bytes) return std::nullopt;
    if (last_full_ && since_full_ + 1 < kFullReadEvery &&
        r.usage.memory_bytes == last_full_->usage.memory_bytes &&
        read(cpu_time) == last_cpu_time_) {
      since_full_++;
      RunCgroupReading idle = *last_full_;
      idle.usage.at = now;
      idle.reads = r.reads;
      return idle;
    }
    r.usage.memory_limit_bytes = ReadMemoryMax(now, &r.reads);
    r.memory_peak_bytes = ReadNumber(kPeak, now, &r.reads);
    if (std::optional<std::optional<uint64_t>> failcnt = ReadFailcnt(now, &r.reads)) {
      r.memory_failcnt = *failcnt;
    }
  }
  if (const std::optional<std::string>& text = read(kCpuStat)) {
    absl::StatusOr<CpuCgroupStats> cpu = v2_ ? ParseCpuStatV2(*text, files_[kCpuStat].path)
                                             : ParseCpuStatV1(*text, files_[kCpuStat].path);
    if (cpu.ok()) r.cpu = *cpu;
    if (!period_read_) {
      cfs_period_ = CfsPeriodSeconds(layout_, cgroup_path_);
      period_read_ = true;
    }
  } else if (sampled && v2_) {
    return std::nullopt;  // every cgroup2 directory has one: it is gone
  }
  if (const std::optional<std::string>& text = read(kCpuUsage)) {
    absl::StatusOr<uint64_t> ns = ParseCpuacctUsage(*text, files_[kCpuUsage].path);
    if (ns.ok()) r.cpu.usage_ns = *ns;
  }
  r.usage.cpu_ns = r.cpu.usage_ns;
  int i = 0;
  for (Slot slot : {kMemoryPsi, kCpuPsi}) {
    const std::optional<std::string>& text = read(slot);
    absl::StatusOr<PsiTotals> psi = text ? ParsePsi(*text, files_[slot].path)
                                         : absl::StatusOr<PsiTotals>(absl::NotFoundError(""));
    r.usage.psi_some_us[i++] = psi.ok() ? std::optional(psi->some_us) : std::nullopt;
  }
  if (readings_++ % kLimitsEvery == 0) {
    limits_ = ReadLimits(now, &r.reads);
    if (sampled) limits_->memory_max_bytes = ReadMemoryMax(now, &r.reads);
  }
  if (sampled) {
    r.usage.memory_limit_bytes = limits_->memory_max_bytes;
  } else {
    limits_->memory_max_bytes = r.usage.memory_limit_bytes;
  }
  last_full_ = r;
  last_cpu_time_ = texts[cpu_time];
  since_full_ = 0;
  return r;
}

}  // namespace stagewatch
