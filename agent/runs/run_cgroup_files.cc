#include "runs/run_cgroup_files.h"

#include <algorithm>
#include <cerrno>

#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cpu_limits.h"
#include "cgroup/memory_stats.h"
#include "cgroup/psi.h"

namespace stagewatch {

// One Read's (or ReadLimits') files: each read at most once (the idle check's CPU time is the
// full reading's too), and counted.
class RunCgroupFiles::Reading {
 public:
  Reading(RunCgroupFiles* files, absl::Time now) : files_(files), now_(now) {}

  // The read function to hand a cgroup reader, which keeps its file open when `keep` (Kept():
  // the files read at every sample; Once(): the others).
  auto Function(bool keep) {
    last_ = nullptr;
    return [this, keep](const std::string& path) -> absl::StatusOr<std::string> {
      auto [it, first] = texts_.try_emplace(path);
      if (first) {
        it->second = files_->FileText(path, keep, now_);
        reads += it->second.ok();
      }
      last_ = &it->second;
      return it->second;
    };
  }
  auto Kept() { return Function(true); }
  auto Once() { return Function(false); }

  // The text of the last file read through the newest function, nullopt when it could not be
  // read (a reader's error alone does not tell a missing file from one that does not parse).
  std::optional<std::string> last_text() const {
    return last_ != nullptr && last_->ok() ? std::optional(**last_) : std::nullopt;
  }
  bool last_read_ok() const { return last_ != nullptr && last_->ok(); }

  int reads = 0;

 private:
  RunCgroupFiles* files_;
  absl::Time now_;
  absl::node_hash_map<std::string, absl::StatusOr<std::string>> texts_;  // stable: last_
  const absl::StatusOr<std::string>* last_ = nullptr;
};

RunLimits ReadRunLimits(const CgroupLayout& layout, const std::string& cgroup_path) {
  OpenCgroupFiles none(0);  // read once: nothing stays open
  RunCgroupFiles files(layout, cgroup_path, &none);
  const absl::Time now = absl::Now();
  RunLimits limits = files.ReadLimits(now);
  limits.memory_max_bytes = files.ReadMemoryMax(now);
  return limits;
}

RunCgroupFiles::RunCgroupFiles(const CgroupLayout& layout, const std::string& cgroup_path,
                               OpenCgroupFiles* open_files)
    : layout_(layout), cgroup_path_(cgroup_path), v2_(layout.key == CGROUP_KEY_DEFAULT),
      open_files_(open_files) {}

absl::StatusOr<std::string> RunCgroupFiles::FileText(const std::string& path, bool keep,
                                                     absl::Time now) {
  const std::optional<uint32_t> id = open_files_->file_ids().Of(path, cgroup_path_);
  // Not a file of this cgroup's own (or past the ids' bound): read, keeping nothing of it.
  if (!id) return OpenCgroupFiles::File(open_files_).Read(path, /*keep=*/false);
  auto known = std::find_if(files_.begin(), files_.end(), [&](const File& f) { return f.id == *id; });
  File& f = known != files_.end() ? *known : files_.emplace_back(open_files_, *id);
  // Not looked for again once the window is past.
  if (!f.gone && !f.file.is_open() && now - f.first_miss >= kOpenWindow) f.gone = true;
  // Not NotFound: a reader explains a missing file by looking at its directory (cgroup/psi),
  // a lookup that giving up is there to save.
  if (f.gone) return absl::FailedPreconditionError(absl::StrCat(path, ": no longer looked for"));
  OpenCgroupFiles::File::Failure failure;
  absl::StatusOr<std::string> text = f.file.Read(path, keep, &failure);
  if (text.ok() || !failure.at_open) {
    f.first_miss = absl::InfiniteFuture();  // found: opened for each read if not kept open
  }
  if (text.ok()) return text;
  if (!failure.at_open) {
    f.gone = failure.error == ENODEV;  // the cgroup was removed: the file answers nothing more
  } else if (failure.error == ENOENT) {
    f.first_miss = std::min(f.first_miss, now);
    f.gone = ++f.attempts >= kOpenAttempts;
  }
  return text;
}

std::optional<uint64_t> RunCgroupFiles::ReadMemoryMax(Reading& reading) {
  absl::StatusOr<std::optional<uint64_t>> max =
      stagewatch::ReadMemoryMax(layout_, cgroup_path_, reading.Once());
  return max.ok() ? *max : std::nullopt;
}

std::optional<uint64_t> RunCgroupFiles::ReadMemoryMax(absl::Time now, int* reads) {
  Reading reading(this, now);
  std::optional<uint64_t> max = ReadMemoryMax(reading);
  if (reads) *reads += reading.reads;
  return max;
}

RunLimits RunCgroupFiles::ReadLimits(Reading& reading) {
  RunLimits l;
  if (absl::StatusOr<std::optional<uint64_t>> high =
          ReadMemorySoftLimit(layout_, cgroup_path_, reading.Once());
      high.ok()) {
    l.memory_high_bytes = *high;
  }
  if (absl::StatusOr<std::optional<double>> cores =
          ReadCpuMaxCores(layout_, cgroup_path_, reading.Once());
      cores.ok()) {
    l.cpu_max_cores = *cores;
  }
  if (absl::StatusOr<std::optional<uint32_t>> weight =
          ReadCpuWeight(layout_, cgroup_path_, reading.Once());
      weight.ok()) {
    l.cpu_weight = *weight;
  }
  return l;
}

RunLimits RunCgroupFiles::ReadLimits(absl::Time now, int* reads) {
  Reading reading(this, now);
  RunLimits l = ReadLimits(reading);
  if (reads) *reads += reading.reads;
  return l;
}

std::optional<std::string> RunCgroupFiles::ReadCpuTime(Reading& reading) {
  if (v2_) {
    ReadCpuStat(layout_, cgroup_path_, reading.Kept()).IgnoreError();
  } else {
    ReadCpuacctUsage(layout_, cgroup_path_, reading.Kept()).IgnoreError();
  }
  return reading.last_text();
}

std::optional<RunCgroupReading> RunCgroupFiles::Read(absl::Time now,
                                                     const SampledMemory* sampled) {
  RunCgroupReading r;
  r.usage.at = now;
  Reading reading(this, now);
  if (sampled) {
    r.usage.memory_bytes = sampled->usage_bytes;
    r.memory_peak_bytes = sampled->peak_bytes;
    if (v2_) {
      r.memory_failcnt = sampled->failcnt;
    } else {
      absl::StatusOr<std::optional<uint64_t>> failcnt =
          ReadMemoryFailcnt(layout_, cgroup_path_, reading.Once());
      if (!reading.last_read_ok()) return std::nullopt;  // every v1 memory cgroup has one: gone
      r.memory_failcnt = failcnt.ok() ? *failcnt : std::nullopt;
    }
  } else {
    absl::StatusOr<uint64_t> usage = ReadMemoryUsage(layout_, cgroup_path_, reading.Kept());
    if (!usage.ok()) return std::nullopt;
    r.usage.memory_bytes = *usage;
    if (last_full_ && since_full_ + 1 < kFullReadEvery &&
        r.usage.memory_bytes == last_full_->usage.memory_bytes &&
        ReadCpuTime(reading) == last_cpu_time_) {
      since_full_++;
      RunCgroupReading idle = *last_full_;
      idle.usage.at = now;
      idle.reads = reading.reads;
      return idle;
    }
    r.usage.memory_limit_bytes = ReadMemoryMax(reading);
    if (absl::StatusOr<uint64_t> peak = ReadMemoryPeak(layout_, cgroup_path_, reading.Once());
        peak.ok()) {
      r.memory_peak_bytes = *peak;
    }
    if (absl::StatusOr<std::optional<uint64_t>> failcnt =
            ReadMemoryFailcnt(layout_, cgroup_path_, reading.Once());
        failcnt.ok()) {
      r.memory_failcnt = *failcnt;
    }
  }
  // v2: cpu.stat holds usage and throttling; v1: cpuacct.usage and the cpu hierarchy's cpu.stat.
  absl::StatusOr<CpuCgroupStats> cpu =
      ReadCpuStat(layout_, cgroup_path_, v2_ ? reading.Kept() : reading.Once());
  if (reading.last_read_ok()) {
    if (cpu.ok()) r.cpu = *cpu;
    if (!period_read_) {
      absl::StatusOr<double> period = ReadCfsPeriodSeconds(layout_, cgroup_path_);
      cfs_period_ = period.ok() ? std::optional(*period) : std::nullopt;
      period_read_ = true;
    }
  } else if (sampled && v2_) {
    return std::nullopt;  // every cgroup2 directory has one: it is gone
  }
  if (!v2_) {
    absl::StatusOr<uint64_t> ns = ReadCpuacctUsage(layout_, cgroup_path_, reading.Kept());
    if (ns.ok()) r.cpu.usage_ns = *ns;
  }
  r.usage.cpu_ns = r.cpu.usage_ns;
  int i = 0;
  for (const char* resource : {"memory", "cpu"}) {
    absl::StatusOr<PsiTotals> psi = ReadPsi(layout_, cgroup_path_, resource, reading.Once());
    r.usage.psi_some_us[i++] = psi.ok() ? std::optional(psi->some_us) : std::nullopt;
  }
  if (absl::StatusOr<NumaMemory> numa = ReadNumaStat(layout_, cgroup_path_, reading.Once());
      numa.ok()) {
    r.memory_by_node = *std::move(numa);
  }
  if (readings_++ % kLimitsEvery == 0) {
    limits_ = ReadLimits(reading);
    if (sampled) limits_->memory_max_bytes = ReadMemoryMax(reading);
  }
  if (sampled) {
    r.usage.memory_limit_bytes = limits_->memory_max_bytes;
  } else {
    limits_->memory_max_bytes = r.usage.memory_limit_bytes;
  }
  r.reads = reading.reads;
  last_full_ = r;
  last_cpu_time_ = ReadCpuTime(reading);  // read already: what this reading found
  since_full_ = 0;
  return r;
}

}  // namespace stagewatch
