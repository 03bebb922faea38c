// --bpf.attach: the two policies, what they offer the probes, and the message for a typo.
#include "probes/attach_policy.h"

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

TEST(AttachPolicyTest, ParsesBothPoliciesAndNamesThemForAnythingElse) {
  EXPECT_EQ(*ParseAttachPolicy("auto"), AttachPolicy::kAuto);
  EXPECT_EQ(*ParseAttachPolicy("raw_tp"), AttachPolicy::kRawTracepoint);
  for (const char* bad : {"", "tp_btf", "RAW_TP", "raw_tp "}) {
    absl::StatusOr<AttachPolicy> p = ParseAttachPolicy(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("use auto or raw_tp"), std::string::npos) << p.status();
    EXPECT_NE(p.status().message().find("STAGEWATCH_BPF_ATTACH"), std::string::npos);
  }
}

TEST(AttachPolicyTest, RawTracepointWithholdsTrampolinesAndKeepsEverythingElse) {
  KernelFeatures f;
  f.tracing = true;
  f.raw_tracepoint = true;
  f.btf = true;
  EXPECT_TRUE(ApplyAttachPolicy(f, AttachPolicy::kAuto).tracing);
  const KernelFeatures raw = ApplyAttachPolicy(f, AttachPolicy::kRawTracepoint);
  EXPECT_FALSE(raw.tracing);
  EXPECT_TRUE(raw.raw_tracepoint);
  EXPECT_TRUE(raw.btf);
}

}  // namespace
}  // namespace stagewatch
