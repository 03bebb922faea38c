// How much of what a run was given it used, as seff prints it: CPU efficiency (its CPU seconds
// over its wall time × the CPUs it could use) and memory efficiency (its peak over its limit).
#pragma once

#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "runs/run_record.h"

namespace stagewatch {

struct RunEfficiency {
  std::optional<double> cpu;  // in [0, 1] but for rounding; none: CPU time or wall unknown
  double cpus = 0;            // the CPUs it could use
  std::string cpus_from;      // "cpu-max" (its quota), "cpuset-cpus", "online CPUs" (the host)
  std::optional<double> memory;  // peak / limit; none: no peak, or no limit
  std::optional<uint64_t> peak_bytes, limit_bytes;
};

// `online_cpus`: the CPUs of the host (OnlineCpuCount()), for a run with neither a CPU quota
// nor a cpuset below them. A discovered run's cpuset is not kept: the host's CPUs stand in.
RunEfficiency EfficiencyOf(const RunRecord& run, int online_cpus);
int OnlineCpuCount();  // sysconf(_SC_NPROCESSORS_ONLN), at least 1

// "50.6% of 90.0 s × 1 CPU (cpu-max)"; "not observed".
std::string CpuEfficiencyText(const RunEfficiency& e, const RunRecord& run);
// "100.0% of a 1.00 GiB limit (peak 1.00 GiB)"; "no limit (peak 1.00 GiB)"; "not observed".
std::string MemoryEfficiencyText(const RunEfficiency& e);
nlohmann::json EfficiencyToJson(const RunEfficiency& e);

}  // namespace stagewatch
