#include "runs/run_efficiency.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_format.h"
#include "runs/cpuset_request.h"
#include "units.h"

namespace stagewatch {

int OnlineCpuCount() { return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)); }

RunEfficiency EfficiencyOf(const RunRecord& run, int online_cpus) {
  RunEfficiency e;
  const RunLimits& l = run.start.limits;
  e.cpus = std::max(online_cpus, 1);
  e.cpus_from = "online CPUs";
  // The tightest of the host, the cpuset and the quota.
  if (const int pinned = l.cpuset_cpus ? CpuListCount(*l.cpuset_cpus) : 0;
      pinned > 0 && pinned < e.cpus) {
    e.cpus = pinned;
    e.cpus_from = "cpuset-cpus";
  }
  if (l.cpu_max_cores && *l.cpu_max_cores > 0 &&
      (!l.cpuset_cpus || *l.cpu_max_cores <= e.cpus)) {
    e.cpus = std::min(*l.cpu_max_cores, e.cpus);
    e.cpus_from = "cpu-max";
  }
  if (!run.end) return e;
  const CgroupFacts& f = run.end->facts;
  const double wall = absl::ToDoubleSeconds(run.end->end - run.start.start);
  if (f.cpu_seconds && wall > 0) e.cpu = *f.cpu_seconds / (wall * e.cpus);
  e.peak_bytes = f.memory_peak_bytes;
  // The kernel's limit at the end, else the one it was started with.
  e.limit_bytes = f.memory_limit_bytes ? f.memory_limit_bytes : run.start.limits.memory_max_bytes;
  if (e.peak_bytes && e.limit_bytes && *e.limit_bytes > 0) {
    e.memory = double(*e.peak_bytes) / double(*e.limit_bytes);
  }
  return e;
}

std::string CpuEfficiencyText(const RunEfficiency& e, const RunRecord& run) {
  if (!e.cpu) return "not observed";
  const double wall = absl::ToDoubleSeconds(run.end->end - run.start.start);
  return absl::StrFormat("%.1f%% of %s × %g CPU%s (%s)", *e.cpu * 100, FormatSeconds(wall),
                         e.cpus, e.cpus == 1 ? "" : "s", e.cpus_from);
}

std::string MemoryEfficiencyText(const RunEfficiency& e) {
  if (!e.peak_bytes) return "not observed";
  if (!e.memory) return absl::StrFormat("no limit (peak %s)", FormatBytes(*e.peak_bytes));
  return absl::StrFormat("%.1f%% of a %s limit (peak %s)", *e.memory * 100,
                         FormatBytes(*e.limit_bytes), FormatBytes(*e.peak_bytes));
}

nlohmann::json EfficiencyToJson(const RunEfficiency& e) {
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"cpu", opt(e.cpu)}, {"cpus", e.cpus}, {"cpus_from", e.cpus_from},
          {"memory", opt(e.memory)}};
}

}  // namespace stagewatch
