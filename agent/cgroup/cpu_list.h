// The kernel's list format for CPUs and NUMA nodes, "0-3,8,10-11": sysfs's cpulist files
// (/sys/devices/system/cpu/online, node*/cpulist) and the cpusets' cpus and mems files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace stagewatch {

// The ids of `text`, ascending, each once; blanks around an item are allowed. Blank text is the
// empty list (a v1 cpuset not yet given CPUs). For anything else InvalidArgument saying what is
// wrong in it: an empty item, a range without its end or running backwards, a sign, a stride
// (the kernel's "0-7:2/4"), an id above kMaxCpuListId ("the range \"1-\" has no end").
absl::StatusOr<std::vector<int>> ParseCpuListIds(std::string_view text);
inline constexpr int kMaxCpuListId = 65535;  // far above any kernel's NR_CPUS or MAX_NUMNODES

// ParseCpuListIds of a file's text, its errors naming `file` and the text.
absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text, std::string_view file);

// `ids` in the kernel's own form: ascending, runs of two or more as ranges ({0,1,2,3,8} →
// "0-3,8"); "" for none. Duplicates and order do not matter.
std::string FormatCpuList(std::vector<int> ids);

// ParseCpuList of a file's contents; NotFound when the file does not exist.
absl::StatusOr<std::vector<int>> ReadCpuListFile(const std::string& path);

}  // namespace stagewatch
