// `stagewatch features`: what this kernel supports and which probes attach.
#pragma once

#include <ostream>
#include <string>

namespace stagewatch {

// Probes the kernel and, when privileged, really loads and attaches the probes (then detaches
// them) so the report says what the agent would get. Returns the exit code: 0 when every
// probe attached, 1 otherwise.
// `lifecycle_events` is cgroup.lifecycle_events: false reports the walks the agent would use.
int RunFeaturesReport(bool json, const std::string& btf_path, bool lifecycle_events,
                      std::ostream& out);

}  // namespace stagewatch
