// The kernel's list format for CPUs and NUMA nodes, "0-3,8,10-11": sysfs's cpulist files
// (/sys/devices/system/cpu/online, node*/cpulist) and the cpusets' cpus and mems files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace stagewatch {

// The ids of `text`, ascending, each once. Blank text is the empty list (a v1 cpuset not yet
// given CPUs). InvalidArgument, naming `file` and the text, for anything else: a range whose
// end is below its start, a sign, a stride, an id above kMaxCpuListId.
absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text, std::string_view file);
inline constexpr int kMaxCpuListId = 65535;  // far above any kernel's NR_CPUS or MAX_NUMNODES

// `ids` in the kernel's own form: ascending, runs of two or more as ranges ({0,1,2,3,8} →
// "0-3,8"); "" for none. Duplicates and order do not matter.
std::string FormatCpuList(std::vector<int> ids);

// ParseCpuList of a file's contents; NotFound when the file does not exist.
absl::StatusOr<std::vector<int>> ReadCpuListFile(const std::string& path);

}  // namespace stagewatch
