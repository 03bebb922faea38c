#include "probes/attach_policy.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace stagewatch {

absl::StatusOr<AttachPolicy> ParseAttachPolicy(std::string_view text) {
  if (text == "auto") return AttachPolicy::kAuto;
  if (text == "raw_tp") return AttachPolicy::kRawTracepoint;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown BPF attach policy \"", absl::string_view(text.data(), text.size()),
      "\" (--bpf.attach, STAGEWATCH_BPF_ATTACH); use auto or raw_tp"));
}

KernelFeatures ApplyAttachPolicy(KernelFeatures features, AttachPolicy policy) {
  if (policy == AttachPolicy::kRawTracepoint) features.tracing = false;
  return features;
}

}  // namespace stagewatch
