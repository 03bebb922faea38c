// Run time and run count of loaded BPF programs: the kernel keeps them while
// kernel.bpf_stats_enabled is 1 (sysctl), and they read 0 otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct bpf_object;

namespace stagewatch {

struct ProgramStats {
  std::string program;  // the program's name in bpf/*.bpf.c
  uint64_t run_time_ns = 0;
  uint64_t run_count = 0;
};

// Every program of `object` that was loaded (programs left out by probing are skipped).
std::vector<ProgramStats> ReadProgramStats(const bpf_object* object);

// Whether kernel.bpf_stats_enabled is on now.
bool BpfStatsEnabled();

}  // namespace stagewatch
