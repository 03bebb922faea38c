#include "runs/advise_format.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "string_util.h"

namespace stagewatch {
namespace {

constexpr uint64_t kMiB = 1 << 20, kGiB = 1 << 30;

// Whole MiB (the advisor rounds to them), or GiB where a quarter GiB divides it (1.5G): both
// read back as the same bytes.
std::string Size(uint64_t bytes, bool gib_allowed) {
  if (gib_allowed && bytes >= kGiB && bytes % (kGiB / 4) == 0) {
    return absl::StrFormat("%gG", double(bytes) / kGiB);
  }
  return absl::StrCat((bytes + kMiB - 1) / kMiB, "M");
}

std::string Millicores(double cores) { return absl::StrCat(std::llround(cores * 1000), "m"); }

}  // namespace

absl::StatusOr<AdviseFormat> ParseAdviseFormat(std::string_view name) {
  if (name == "run") return AdviseFormat::kRun;
  if (name == "systemd") return AdviseFormat::kSystemd;
  if (name == "slurm") return AdviseFormat::kSlurm;
  if (name == "kubernetes") return AdviseFormat::kKubernetes;
  return absl::InvalidArgumentError(absl::StrCat(
      "--format \"", ToAbsl(name), "\" is not known; use run, systemd, slurm or kubernetes"));
}

std::string FormatAdvice(const Advice& a, AdviseFormat format) {
  const std::optional<double>& cpu = a.cpu_max_cores;
  switch (format) {
    case AdviseFormat::kRun: {
      std::string out = absl::StrCat("--memory-max ", Size(a.memory_max_bytes, true),
                                     " --memory-high ", Size(a.memory_high_bytes, true));
      if (cpu) absl::StrAppend(&out, absl::StrFormat(" --cpu-max %g", *cpu));
      return out + "\n";
    }
    case AdviseFormat::kSystemd: {
      std::string out = absl::StrCat("MemoryMax=", Size(a.memory_max_bytes, false),
                                     "\nMemoryHigh=", Size(a.memory_high_bytes, false), "\n");
      if (cpu) absl::StrAppend(&out, "CPUQuota=", std::llround(*cpu * 100), "%\n");
      return out;
    }
    case AdviseFormat::kSlurm: {
      // Slurm gives whole CPUs and has no throttling point.
      std::string out = absl::StrCat("--mem=", Size(a.memory_max_bytes, false));
      if (cpu) absl::StrAppend(&out, " --cpus-per-task=", std::max(1LL, std::llround(std::ceil(*cpu))));
      return out + "\n";
    }
    case AdviseFormat::kKubernetes: {
      auto mi = [](uint64_t b) { return absl::StrCat((b + kMiB - 1) / kMiB, "Mi"); };
      std::string out = absl::StrCat("resources:\n  requests:\n    memory: ",
                                     mi(a.memory_high_bytes), "\n");
      if (cpu) absl::StrAppend(&out, "    cpu: ", Millicores(*cpu), "\n");
      absl::StrAppend(&out, "  limits:\n    memory: ", mi(a.memory_max_bytes), "\n");
      if (cpu) absl::StrAppend(&out, "    cpu: ", Millicores(*cpu), "\n");
      return out;
    }
  }
  return "";
}

}  // namespace stagewatch
