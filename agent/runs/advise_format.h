// The advised limits as the tool that sets them takes them: `stagewatch run` flags, a systemd
// unit's settings, Slurm's sbatch options, or a Kubernetes container's resources.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "runs/advisor.h"

namespace stagewatch {

enum class AdviseFormat { kRun, kSystemd, kSlurm, kKubernetes };
// "run", "systemd", "slurm" or "kubernetes"; anything else is an error naming them.
absl::StatusOr<AdviseFormat> ParseAdviseFormat(std::string_view name);

// The target limits (memory-max, memory-high, cpu-max) for `format`, one setting a line:
//   run         --memory-max 1.5G --memory-high 1383M --cpu-max 0.3
//   systemd     MemoryMax=1536M / MemoryHigh=1383M / CPUQuota=30%
//   slurm       --mem=1536M --cpus-per-task=1
//   kubernetes  resources: requests (memory-high, cpu) and limits (memory-max, cpu)
std::string FormatAdvice(const Advice& advice, AdviseFormat format);

}  // namespace stagewatch
