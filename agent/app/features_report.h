// `stagewatch features`: what this kernel supports and which probes attach.
#pragma once

#include <ostream>
#include <string>

#include "probes/attach_policy.h"

namespace stagewatch {

// Probes the kernel and, when privileged, really loads and attaches the probes (then detaches
// them) so the report says what the agent would get under `attach`. Returns the exit code: 0
// when every probe attached, 1 otherwise.
int RunFeaturesReport(bool json, const std::string& btf_path, AttachPolicy attach,
                      std::ostream& out);

}  // namespace stagewatch
