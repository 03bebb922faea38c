// Least privilege: once the probes are attached the agent needs no capability (BPF maps and
// links are used through descriptors it holds), so it drops all of them but those the user
// asked to keep (--capabilities.keep), from every set, whoever started it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace stagewatch {

// Parses "cap_net_bind_service,CAP_SYS_PTRACE" (case-insensitive, the "cap_" prefix
// optional; empty or "none": none). "all" is refused: it would undo the drop. The error names
// the unknown capability.
absl::StatusOr<std::vector<int>> ParseCapabilityList(std::string_view list);

// Drops every capability not in `keep` from the effective, permitted, inheritable, ambient
// and (where CAP_SETPCAP allows) bounding sets, so neither this process nor anything it
// runs gets them back. Kept ones that the process does not have are not added.
absl::Status DropCapabilities(const std::vector<int>& keep);

// The effective set as CapEff shows it in /proc/self/status, for logs.
std::string EffectiveCapabilityNames();

}  // namespace stagewatch
