// `stagewatch features`: what this kernel supports and which probes attach.
#pragma once

#include <ostream>
#include <string>

#include "config/config.h"
#include "probes/attach_policy.h"

namespace stagewatch {

// Probes the kernel and, when privileged, really loads and attaches the probes (then detaches
// them) so the report says what the agent would get. Returns the exit code: 0 when every
// probe attached, 1 otherwise.
struct FeaturesReportOptions {
  bool json = false;
  std::string btf_path;
  AttachPolicy attach = AttachPolicy::kAuto;  // --bpf.attach
  bool lifecycle_events = true;  // cgroup.lifecycle_events: false reports the walks instead
  bool task_iterator = true;     // memory.task_iterator: false reports /proc reads instead
  PageFaultSource fault_source = PageFaultSource::kAuto;  // memory.fault_source
};
int RunFeaturesReport(const FeaturesReportOptions& options, std::ostream& out);

}  // namespace stagewatch
