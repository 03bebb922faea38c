// --bpf.attach: which attach types the probes may choose from.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "probes/features.h"

namespace stagewatch {

// kAuto takes the fastest form the kernel offers (tp_btf where it has BPF trampolines).
// kRawTracepoint keeps every probe on raw tracepoints even there: to compare the two forms
// on one kernel, or to step around a kernel whose trampolines misbehave.
enum class AttachPolicy { kAuto, kRawTracepoint };

// "auto" | "raw_tp"; anything else is an error that lists both.
absl::StatusOr<AttachPolicy> ParseAttachPolicy(std::string_view text);

// The features offered to the probes under `policy` (kRawTracepoint withholds trampolines).
// Reports keep the unmodified probe result, so they still say what the kernel has.
KernelFeatures ApplyAttachPolicy(KernelFeatures features, AttachPolicy policy);

}  // namespace stagewatch
