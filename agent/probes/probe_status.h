// What became of one probe (one BPF program attachment): reported by `stagewatch features`
// and by the stagewatch_probe_* self-metrics.
#pragma once

#include <cstdint>
#include <string>

namespace stagewatch {

struct ProbeStatus {
  std::string name;         // e.g. "oom_kill", "oom_userspace_kill"
  std::string attach_type;  // "raw_tracepoint", "tracepoint", ... the variant chosen
  bool attached = false;
  std::string error;        // why it is not attached; empty when attached
  uint64_t lost_events = 0; // events dropped on the way to user space
};

}  // namespace stagewatch
