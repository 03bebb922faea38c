#include "signals/memory/fault_counting.h"

#include "absl/strings/str_cat.h"

namespace stagewatch {

FaultCounting ChooseFaultCounting(PageFaultSource wanted, const CgroupLayout& layout) {
  switch (wanted) {
    case PageFaultSource::kBpf:
      return {.bpf_minor = true, .why = "memory.fault_source is bpf: a BPF program per fault"};
    case PageFaultSource::kMemcg:
      return {.memcg = true,
              .why = "memory.fault_source is memcg: a stage without the memory controller has "
                     "no page fault figures"};
    case PageFaultSource::kAuto:
      break;
  }
  if (layout.key == CGROUP_KEY_V1_MEMORY) {
    return {.memcg = true,
            .why = absl::StrCat("the v1 memory controller (", layout.v1_memory_root,
                                ") accounts every cgroup; BPF counts major faults only, for the "
                                "fault-storm detector")};
  }
  if (layout.v2_has_memory) {
    return {.memcg = true,
            .bpf_when_uncovered = true,
            .why = absl::StrCat("cgroup2 (", layout.v2_root,
                                ") has the memory controller; BPF counts major faults only, and "
                                "every fault of a stage whose cgroups have it turned off")};
  }
  return {.bpf_minor = true,
          .why = "no memory controller to read memory.stat from: a BPF program per fault"};
}

}  // namespace stagewatch
