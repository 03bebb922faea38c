// The advisor's bounds around its target (as the VPA recommender gives them) and the target
// written as run, systemd, Slurm and Kubernetes take it.
#include "runs/advise_bounds.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/advise_format.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;

Advice FiveRuns() {
  Advice a;
  a.stage = "train";
  a.enough_runs = true;
  a.runs_counted = a.runs_with_peak = 5;
  a.percentile = 0.95;
  a.largest_peak_bytes = 1200 * kMiB + 5;
  a.percentile_peak_bytes = 1100 * kMiB;
  a.memory_max_bytes = 1536 * kMiB;
  a.memory_high_bytes = 1383 * kMiB;
  a.cpu_percentile_cores = 0.26;
  a.cpu_max_cores = 0.3;
  return a;
}

TEST(AdviseBoundsTest, LowerIsWhatARunNeededUpperWidensWithFewRuns) {
  const AdviceBounds b = BoundsOf(FiveRuns());
  EXPECT_EQ(b.memory_bytes.lower, 1201 * kMiB);  // the largest peak, up to a MiB
  EXPECT_EQ(b.memory_bytes.target, 1536 * kMiB);
  EXPECT_EQ(b.memory_bytes.upper, uint64_t(1536 * 1.2) * kMiB + kMiB);  // × (1 + 1/5), up
  ASSERT_TRUE(b.cpu_cores);
  EXPECT_DOUBLE_EQ(b.cpu_cores->lower, 0.3);  // 0.26 up to 0.05
  EXPECT_DOUBLE_EQ(b.cpu_cores->upper, 0.4);  // 0.36 up to 0.05
  const std::string text = BoundsText(b);
  EXPECT_THAT(text, HasSubstr("memory-max: lower 1.17 GiB, target 1.50 GiB, upper 1.80 GiB"));
  EXPECT_THAT(text, HasSubstr("the largest peak of 5 runs"));
  EXPECT_THAT(text, HasSubstr("the target × (1 + 1/5 runs)"));
}

TEST(AdviseBoundsTest, AnOomKillRaisesTheLowerBoundAboveItsLimit) {
  Advice a = FiveRuns();
  a.oom_limit_bytes = 1400 * kMiB;
  const AdviceBounds b = BoundsOf(a);
  EXPECT_EQ(b.memory_bytes.lower, 1401 * kMiB);
  EXPECT_THAT(b.memory_bytes.lower_why, HasSubstr("OOM-killed at 1.37 GiB"));
}

TEST(AdviseFormatTest, EachToolsSyntax) {
  const Advice a = FiveRuns();
  EXPECT_EQ(FormatAdvice(a, AdviseFormat::kRun), "--memory-max 1.5G --memory-high 1383M --cpu-max 0.3\n");
  EXPECT_EQ(FormatAdvice(a, AdviseFormat::kSystemd),
            "MemoryMax=1536M\nMemoryHigh=1383M\nCPUQuota=30%\n");
  EXPECT_EQ(FormatAdvice(a, AdviseFormat::kSlurm), "--mem=1536M --cpus-per-task=1\n");
  EXPECT_EQ(FormatAdvice(a, AdviseFormat::kKubernetes),
            "resources:\n  requests:\n    memory: 1383Mi\n    cpu: 300m\n"
            "  limits:\n    memory: 1536Mi\n    cpu: 300m\n");
  EXPECT_EQ(ParseAdviseFormat("slurm").value(), AdviseFormat::kSlurm);
  EXPECT_THAT(ParseAdviseFormat("yaml").status().message(),
              HasSubstr("use run, systemd, slurm or kubernetes"));
}

}  // namespace
}  // namespace stagewatch
