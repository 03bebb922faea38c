#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "config/config.h"
#include "signals/signal.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RunsConfigTest, DefaultsAreTheDocumentedOnes) {
  const absl::StatusOr<Config> config = DefaultConfig(CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  const RunsConfig& r = config->runs;
  EXPECT_EQ(r.ledger_path, "/var/lib/stagewatch/ledger.db");
  EXPECT_EQ(r.degraded_fraction, 0.05);
  EXPECT_EQ(r.normal_run_queue_wait_fraction, 0.05);
  EXPECT_EQ(r.sample_reads_per_second, 100);
  EXPECT_EQ(r.advise.min_runs, 3);
  EXPECT_EQ(r.advise.max_runs, 30);
  EXPECT_EQ(r.advise.memory_percentile, 0.95);
  EXPECT_EQ(r.advise.memory_margin, 0.15);
  EXPECT_EQ(r.advise.oom_bump, 1.2);
  EXPECT_EQ(r.advise.memory_high_fraction, 0.9);
  EXPECT_EQ(r.advise.cpu_margin, 0.15);
}

TEST(RunsConfigTest, ReadsEveryKey) {
  const absl::StatusOr<Config> config = ParseConfig(
      "runs:\n  ledger_path: /srv/runs.db\n  degraded_fraction: 0.1\n"
      "  normal_run_queue_wait_fraction: 0.2\n  sample_reads_per_second: 0\n"
      "  advise:\n    min_runs: 5\n    max_runs: 50\n"
      "    memory_percentile: 0.9\n    memory_margin: 0.25\n    oom_bump: 1.5\n"
      "    memory_high_fraction: 0.8\n    cpu_margin: 0.3\n",
      "cfg.yaml", CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->runs.ledger_path, "/srv/runs.db");
  EXPECT_EQ(config->runs.degraded_fraction, 0.1);
  EXPECT_EQ(config->runs.normal_run_queue_wait_fraction, 0.2);
  EXPECT_EQ(config->runs.sample_reads_per_second, 0);
  EXPECT_EQ(config->runs.advise.min_runs, 5);
  EXPECT_EQ(config->runs.advise.max_runs, 50);
  EXPECT_EQ(config->runs.advise.memory_percentile, 0.9);
  EXPECT_EQ(config->runs.advise.memory_margin, 0.25);
  EXPECT_EQ(config->runs.advise.oom_bump, 1.5);
  EXPECT_EQ(config->runs.advise.memory_high_fraction, 0.8);
  EXPECT_EQ(config->runs.advise.cpu_margin, 0.3);
}

TEST(RunsConfigTest, BadValuesAreReportedAtTheirLineAndColumn) {
  const absl::StatusOr<Config> bad = ParseConfig(
      "runs:\n  degraded_fraction: 1.5\n  ledger_path: ledger.db\n  advise:\n"
      "    oom_bump: 0.8\n    min_runs: 0\n    max_run: 3\n  sample_reads_per_second: -5\n",
      "cfg.yaml", CollectorFlagNames());
  ASSERT_FALSE(bad.ok());
  const std::string message(bad.status().message());
  EXPECT_THAT(message, HasSubstr("cfg.yaml:2:22: runs.degraded_fraction must be a number above 0 "
                                 "and at most 1"));
  EXPECT_THAT(message, HasSubstr("cfg.yaml:3:16: runs.ledger_path must be an absolute file path"));
  EXPECT_THAT(message, HasSubstr("cfg.yaml:5:15: runs.advise.oom_bump must be a number, 1 or more"));
  EXPECT_THAT(message, HasSubstr("cfg.yaml:6:15: runs.advise.min_runs must be between 1 and 1000"));
  EXPECT_THAT(message, HasSubstr("cfg.yaml:7:5: unknown key \"max_run\" in runs.advise; did you "
                                 "mean \"max_runs\"?"));
  EXPECT_THAT(message, HasSubstr("cfg.yaml:8:28: runs.sample_reads_per_second must be between 0 "
                                 "and 100000"));
}

}  // namespace
}  // namespace stagewatch
