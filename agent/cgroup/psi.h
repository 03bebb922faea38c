// Pressure stall information (PSI) totals of one cgroup, from cgroup2's <resource>.pressure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "cgroup/cgroup_tree.h"
#include "cgroup/layout.h"

namespace stagewatch {

// Cumulative stall time in microseconds: `some` = at least one task stalled on the resource,
// `full` = all non-idle tasks stalled at once. full_us is nullopt when the file has no "full"
// line (cpu.pressure before Linux 5.13); a "full" line of zeros is reported as 0.
struct PsiTotals {
  uint64_t some_us = 0;
  std::optional<uint64_t> full_us;
};

// Parses "some avg10=0.00 avg60=0.00 avg300=0.00 total=N\nfull avg10=... total=M\n".
// `file` names the file in error messages.
absl::StatusOr<PsiTotals> ParsePsi(std::string_view contents, std::string_view file);

// Reads <cgroup2 dir of cgroup_path>/<resource>.pressure, resource "cpu", "memory" or "io".
// NotFound, saying why, when the host mounts no cgroup2 or its kernel has PSI off
// (CONFIG_PSI unset, booted with psi=0, or cgroup.pressure set to 0).
absl::StatusOr<PsiTotals> ReadPsi(const CgroupLayout& layout, std::string_view cgroup_path,
                                  std::string_view resource,
                                  CgroupFileRead read = ReadCgroupFile);

}  // namespace stagewatch
