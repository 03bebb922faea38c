// Run time and run count of loaded BPF programs: the kernel keeps them while
// kernel.bpf_stats_enabled is 1 (sysctl) or some process holds a BPF_ENABLE_STATS fd, and
// they stop growing otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

struct bpf_object;

namespace stagewatch {

struct ProgramStats {
  std::string program;  // the program's name in bpf/*.bpf.c
  uint64_t run_time_ns = 0;
  uint64_t run_count = 0;
};

// Every program of `object` that was loaded (programs left out by probing are skipped).
std::vector<ProgramStats> ReadProgramStats(const bpf_object* object);

// Keeps the kernel counting BPF run time for as long as it lives (bpf_enable_stats(), Linux
// 5.8), without touching the global sysctl; the count stops when the last holder goes.
class BpfStatsHold {
 public:
  // FailedPrecondition, saying why, where the kernel refuses.
  static absl::StatusOr<std::unique_ptr<BpfStatsHold>> Acquire();
  ~BpfStatsHold();
  BpfStatsHold(const BpfStatsHold&) = delete;
  BpfStatsHold& operator=(const BpfStatsHold&) = delete;

 private:
  explicit BpfStatsHold(int fd) : fd_(fd) {}
  const int fd_;
};

// Whether the kernel counts BPF run time now: kernel.bpf_stats_enabled is on, or this process
// holds a BpfStatsHold.
bool BpfStatsEnabled();

}  // namespace stagewatch
