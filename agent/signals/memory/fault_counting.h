// Where a stage's page faults are counted: the kernel's own per-cgroup counters (memory.stat
// pgfault/pgmajfault, no cost per fault) where the memory controller is, else BPF programs on
// every fault (about +64 ns each, bench/README.md). memory.fault_source chooses; auto takes
// memory.stat wherever the host's layout gives every cgroup the controller.
#pragma once

#include <string>

#include "cgroup/layout.h"
#include "config/config.h"

namespace stagewatch {

struct FaultCounting {
  bool memcg = false;  // stages with memcg figures take them from memory.stat
  // BPF counts minor faults from the start (major faults it counts in every mode: rare, and
  // the fault-storm detector's feed each second).
  bool bpf_minor = false;
  // BPF starts counting minor faults once a stage without memcg figures is found.
  bool bpf_when_uncovered = false;
  std::string why;  // for `stagewatch features` and the start-up log
};

FaultCounting ChooseFaultCounting(PageFaultSource wanted, const CgroupLayout& layout);

}  // namespace stagewatch
