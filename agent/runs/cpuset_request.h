// The cpuset a run asks for (--cpuset-cpus, --cpuset-mems), in the kernel's list format
// ("0-3,8"): parsed before anything is made, so that a typo is told at once, and kept in one
// canonical form, so that "1,0" and "0-1" are the same limits to the run's baseline.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace stagewatch {

// What a list numbers, for messages: "CPUs" or "NUMA nodes".
enum class CpusetKind { kCpus, kMems };

// `text` ("1,0", "0-3, 8") as the canonical list: sorted, each number once, runs of two or more
// as ranges ("0-1"). InvalidArgument, naming `flag`, for anything else: an empty list or item, a
// range without its end ("1-") or backwards ("3-1"), a sign, a number past 65535 (no kernel
// numbers CPUs or nodes that far). The kernel's strided ranges ("0-7:2/4") are not taken.
absl::StatusOr<std::string> CanonicalCpuList(std::string_view text, std::string_view flag);

// How many numbers a canonical list holds ("0-1,4" → 3); 0 for one that does not parse.
int CpuListCount(std::string_view canonical);

// What the host has online, as the kernel lists it: /sys/devices/system/cpu/online and
// /sys/devices/system/node/online; a host without the node directory (no NUMA) has node 0.
// "unknown (<why>)" when the file cannot be read. `sys_root` stands in for /sys in tests.
std::string HostOnlineList(CpusetKind kind, const std::string& sys_root = "/sys");

// "this host's online CPUs are 0-1" (or "NUMA nodes are 0"), for messages.
std::string HostHasText(CpusetKind kind, const std::string& sys_root = "/sys");

}  // namespace stagewatch
