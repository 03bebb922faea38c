// `advise` before and after a limit change, from runs with results in a real ledger.
#include "runs/limit_change.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs/advisor.h"
#include "runs/ledger.h"
#include "runs/runs_report.h"
#include "runs_cli_runner.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::At;
using testing::Started;
using testing::TempDir;

constexpr uint64_t kMiB = 1 << 20;

struct PastRun {
  int64_t start;
  double wall_seconds;
  uint64_t peak_mib;  // 0: no peak was read
  std::map<std::string, double> results;
};

// A finished run of stage "train" under `limits`, with its results as the command wrote them.
void Record(Ledger& ledger, const std::string& id, const RunLimits& limits, const PastRun& run) {
  RunStart start = Started(id, "train", At(run.start));
  start.limits = limits;
  ASSERT_TRUE(ledger.BeginRun(start).ok());
  RunEnd end;
  end.end = At(run.start) + absl::Seconds(run.wall_seconds);
  end.exit_code = 0;
  if (run.peak_mib) end.facts.memory_peak_bytes = run.peak_mib * kMiB;
  end.facts.memory_limit_bytes = limits.memory_max_bytes;
  ASSERT_TRUE(ledger.EndRun(id, end).ok());
  if (!run.results.empty()) {
    ASSERT_TRUE(ledger.AddResults(id, run.results).ok());
  }
}

Advice AdviseFromLedger(const std::string& path) {
  auto ledger = *Ledger::Open(path);
  absl::StatusOr<std::vector<RunRecord>> runs = ledger->List({.stage = "train"});
  EXPECT_TRUE(runs.ok()) << runs.status();
  return AdviseLimits("train", *runs, RunsConfig{});
}

const RunLimits k2GiB{.memory_max_bytes = 2048 * kMiB};
const RunLimits k1point5GiB{.memory_max_bytes = 1536 * kMiB};

// Five runs at 2 GiB, then five at 1.5 GiB: each a little slower, peaking 400 MiB lower, with
// the same accuracy. "rows" was recorded only before the change, so it is not compared.
void RecordTheIssuesExample(const std::string& path) {
  auto ledger = *Ledger::Open(path);
  const double loss_before[] = {0.11, 0.12, 0.13, 0.12, 0.12};
  for (int i = 0; i < 5; ++i) {
    Record(*ledger, "b" + std::to_string(i), k2GiB,
           {i * 1000, 100.0 + i, 1800u + 10 * i,
            {{"accuracy", 0.9547}, {"loss", loss_before[i]}, {"rows", 4000000}}});
  }
  for (int i = 0; i < 5; ++i) {
    Record(*ledger, "a" + std::to_string(i), k1point5GiB,
           {(5 + i) * 1000, 104.0 + i, 1400u + 10 * i, {{"accuracy", 0.9547}, {"loss", 0.125}}});
  }
}

TEST(LimitChangeTest, ComparesWallPeakAndResultsBeforeAndAfterTheChange) {
  TempDir dir;
  RecordTheIssuesExample(dir.file("ledger.db"));
  const Advice a = AdviseFromLedger(dir.file("ledger.db"));
  ASSERT_EQ(a.limit_changes.size(), 1u);
  const LimitChange& c = a.limit_changes[0];
  EXPECT_EQ(c.before, k2GiB);
  EXPECT_EQ(c.after, k1point5GiB);
  EXPECT_EQ(c.at, At(5000));
  EXPECT_EQ(c.runs_before, 5);
  EXPECT_EQ(c.runs_after, 5);
  ASSERT_TRUE(c.wall && c.wall->percent);
  EXPECT_DOUBLE_EQ(c.wall->before, 102);
  EXPECT_DOUBLE_EQ(c.wall->after, 106);
  EXPECT_NEAR(*c.wall->percent, 400.0 / 102, 1e-9);
  // Walls 100..104 against 104..108, one tie: U = 0.5, exact p = 4/252 (2 × the 2 splits with
  // a rank sum at most 15.5).
  EXPECT_TRUE(c.wall_p_exact);
  EXPECT_NEAR(c.wall_p, 4.0 / 252, 1e-12);
  ASSERT_TRUE(c.peak && c.peak->percent);
  EXPECT_DOUBLE_EQ(c.peak->before, 1820.0 * kMiB);
  EXPECT_NEAR(*c.peak->percent, -400.0 / 1820 * 100, 1e-9);
  ASSERT_EQ(c.results.size(), 2u);  // not "rows": no run after the change recorded it
  EXPECT_DOUBLE_EQ(c.results.at("accuracy").after, 0.9547);
  EXPECT_DOUBLE_EQ(c.results.at("loss").before, 0.12);

  const std::string line =
      "  memory-max 2.00 GiB → 1.50 GiB: wall +3.9% (p 0.016 over 5+5 runs), peak -22.0%, "
      "accuracy 0.9547 → 0.9547, loss 0.12 → 0.125\n";
  EXPECT_THAT(AdviceText(a), HasSubstr("before and after each change (medians; p: Mann-Whitney "
                                       "U test):\n" + line));

  const nlohmann::json j = AdviceToJson(a)["limit_changes"];
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["at"], "2026-09-21T15:36:40.000Z");
  EXPECT_EQ(j[0]["changed"], nlohmann::json::parse(R"([{"limit": "memory_max_bytes",
      "before": 2147483648.0, "after": 1610612736.0}])"));
  EXPECT_EQ(j[0]["runs_before"], 5);
  EXPECT_EQ(j[0]["runs_after"], 5);
  EXPECT_EQ(j[0]["enough_runs"], true);
  EXPECT_EQ(j[0]["wall_seconds"]["median_before"], 102.0);
  EXPECT_EQ(j[0]["wall_seconds"]["median_after"], 106.0);
  EXPECT_NEAR(j[0]["wall_seconds"]["p_value"].get<double>(), 4.0 / 252, 1e-12);
  EXPECT_EQ(j[0]["wall_seconds"]["p_exact"], true);
  EXPECT_EQ(j[0]["memory_peak_bytes"]["median_after"], 1420.0 * kMiB);
  EXPECT_EQ(j[0]["results"]["accuracy"]["median_before"], 0.9547);
  EXPECT_EQ(j[0]["results"]["loss"]["median_after"], 0.125);
  EXPECT_FALSE(j[0]["results"].contains("rows"));
  EXPECT_EQ(j[0]["text"], line.substr(2, line.size() - 3));
}

TEST(LimitChangeTest, SaysTooFewRunsWithOneRunOnASideAndComparesEachChange) {
  TempDir dir;
  {
    auto ledger = *Ledger::Open(dir.file("ledger.db"));
    const RunLimits cpu{.memory_max_bytes = 2048 * kMiB, .cpu_max_cores = 0.5};
    const RunLimits more_cpu{.memory_max_bytes = 2048 * kMiB, .cpu_max_cores = 1};
    Record(*ledger, "c0", cpu, {0, 100, 1800, {{"accuracy", 0.5}}});
    Record(*ledger, "c1", cpu, {1000, 101, 1810, {{"accuracy", 0.75}}});
    Record(*ledger, "c2", cpu, {2000, 102, 1820, {}});
    Record(*ledger, "m0", more_cpu, {3000, 60, 1800, {{"accuracy", 0.9}}});
    Record(*ledger, "l0", k1point5GiB, {4000, 61, 1400, {}});
    Record(*ledger, "l1", k1point5GiB, {5000, 99.5, 1410, {}});
  }
  const Advice a = AdviseFromLedger(dir.file("ledger.db"));
  ASSERT_EQ(a.limit_changes.size(), 2u);
  EXPECT_FALSE(a.limit_changes[0].enough_runs);
  EXPECT_FALSE(a.limit_changes[0].wall);
  EXPECT_FALSE(a.limit_changes[1].enough_runs);
  const std::string text = AdviceText(a);
  // The results still show: they are what the runs computed, not a test.
  EXPECT_THAT(text, HasSubstr("  cpu-max 0.5 → 1: too few runs to compare (3+1; 2 a side "
                              "needed), accuracy 0.625 → 0.9\n"));
  EXPECT_THAT(text, HasSubstr("  memory-max 2.00 GiB → 1.50 GiB, cpu-max 1 → none: too few runs "
                              "to compare (1+2; 2 a side needed)\n"));
  const nlohmann::json j = AdviceToJson(a)["limit_changes"];
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["wall_seconds"], nullptr);
  EXPECT_EQ(j[0]["memory_peak_bytes"], nullptr);
  EXPECT_EQ(j[1]["changed"][1], nlohmann::json::parse(
                                    R"({"limit": "cpu_max_cores", "before": 1.0, "after": null})"));
}

TEST(LimitChangeTest, ComparesWallWithoutPeaksAndSaysWhy) {
  TempDir dir;
  {
    auto ledger = *Ledger::Open(dir.file("ledger.db"));
    Record(*ledger, "b0", k2GiB, {0, 10, 0, {}});
    Record(*ledger, "b1", k2GiB, {1000, 10, 1800, {}});
    Record(*ledger, "a0", k1point5GiB, {2000, 5, 1400, {}});
    Record(*ledger, "a1", k1point5GiB, {3000, 5, 1400, {}});
  }
  const Advice a = AdviseFromLedger(dir.file("ledger.db"));
  ASSERT_EQ(a.limit_changes.size(), 1u);
  EXPECT_FALSE(a.limit_changes[0].peak);
  // Walls 10, 10 against 5, 5: the most extreme of C(4, 2) = 6 splits, ties within each side.
  EXPECT_THAT(AdviceText(a), HasSubstr("  memory-max 2.00 GiB → 1.50 GiB: wall -50.0% (p 0.33 "
                                       "over 2+2 runs), peak: too few runs with one (1+2)\n"));
  const nlohmann::json j = AdviceToJson(a)["limit_changes"][0];
  EXPECT_EQ(j["memory_peak_bytes"], nullptr);
  EXPECT_EQ(j["peak_runs_before"], 1);
  EXPECT_EQ(j["peak_runs_after"], 2);
}

TEST(LimitChangeTest, NoChangeNoSection) {
  TempDir dir;
  {
    auto ledger = *Ledger::Open(dir.file("ledger.db"));
    for (int i = 0; i < 3; ++i) {
      Record(*ledger, "s" + std::to_string(i), k2GiB, {i * 1000, 100, 1800, {}});
    }
  }
  const Advice a = AdviseFromLedger(dir.file("ledger.db"));
  EXPECT_TRUE(a.limit_changes.empty());
  EXPECT_THAT(AdviceText(a), Not(HasSubstr("before and after")));
  EXPECT_EQ(AdviceToJson(a)["limit_changes"], nlohmann::json::array());
}

TEST(LimitChangeTest, AdviseThroughTheCliShowsTheChangeInTextAndJson) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  RecordTheIssuesExample(path);
  const testing::CliOutput text =
      testing::RunCli({"advise", "--stage", "train", "--ledger.path", path});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("  memory-max 2.00 GiB → 1.50 GiB: wall +3.9% (p 0.016 over "
                                  "5+5 runs), peak -22.0%, accuracy 0.9547 → 0.9547, loss 0.12 → "
                                  "0.125\n"));
  const testing::CliOutput json =
      testing::RunCli({"advise", "--stage", "train", "--ledger.path", path, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out)["limit_changes"];
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["runs_before"], 5);
  EXPECT_NEAR(j[0]["wall_seconds"]["p_value"].get<double>(), 4.0 / 252, 1e-12);
  EXPECT_EQ(j[0]["results"]["accuracy"]["median_after"], 0.9547);
}

// A run pinned to other CPUs is a limit change too, and says which cpuset changed.
TEST(LimitChangeTest, ACpusetChangeIsALimitChange) {
  TempDir dir;
  {
    auto ledger = *Ledger::Open(dir.file("ledger.db"));
    RunLimits pinned = k2GiB;
    pinned.cpuset_cpus = "0-1";
    Record(*ledger, "free", k2GiB, {0, 10, 1800, {}});
    Record(*ledger, "pinned", pinned, {1000, 10, 1800, {}});
  }
  const Advice a = AdviseFromLedger(dir.file("ledger.db"));
  ASSERT_EQ(a.limit_changes.size(), 1u);
  EXPECT_THAT(AdviceText(a), HasSubstr("  cpuset-cpus none → 0-1: too few runs to compare"));
  const nlohmann::json j = AdviceToJson(a);
  EXPECT_EQ(j["limit_changes"][0]["changed"], nlohmann::json::parse(
                                                  R"([{"limit": "cpuset_cpus", "before": null,
                                                       "after": "0-1"}])"));
  EXPECT_EQ(j["limit_periods"][1]["limits"]["cpuset_cpus"], "0-1");
}

}  // namespace
}  // namespace stagewatch
