// What `stagewatch run` leaves behind, for real: nothing. Sub-cgroups the command made go with
// the run, the shared stage cgroups go with the last run in them, a signal to the launcher
// reaches every process of the run, a --memory-high that would only stall the command is
// refused, a run's end survives a full disk, and runs whose launcher was SIGKILLed at any
// moment are closed by the next `stagewatch runs list`, their cgroups removed.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "killed_launchers.h"
#include "privileged/launcher_fixture.h"
#include "runs/ledger.h"
#include "test_support.h"

namespace stagewatch::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class LauncherCleanupTest : public LauncherFixture {};

TEST_F(LauncherCleanupTest, AMemoryHighThatWouldOnlyStallTheCommandIsRefusedBeforeItStarts) {
  const std::string marker = dir_ + "/ran";
  AgentProcess run(Args("s", "high-1", {"--memory-high", "1"}, {"touch", marker}));
  EXPECT_EQ(run.WaitExit(20000), 125) << run.log();
  EXPECT_THAT(run.log(), HasSubstr("--memory-high 1 B is below 4.00 MiB: under it the kernel "
                                   "throttles nearly every allocation"));
  EXPECT_THAT(run.log(), HasSubstr("ask for 4M or more, or use --memory-max for a hard cap"));
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty());
  AgentProcess enough(Args("s", "high-2", {"--memory-high", "4M"}, {"true"}));
  EXPECT_EQ(enough.WaitExit(20000), 0) << enough.log();
}

// The command makes cgroups of its own inside its run's, in every hierarchy, and leaves a
// process in the deepest: all of it goes, deepest first.
TEST_F(LauncherCleanupTest, SubCgroupsTheCommandMadeGoWithTheRunInEveryHierarchy) {
  std::string script;
  for (const std::string& base : Bases()) {
    const std::string dir = base + "/stagewatch/sub/sub-1";
    script += "mkdir -p " + dir + "/step_0/inner && echo $$ > " + dir +
              "/step_0/inner/cgroup.procs && ";
  }
  script += "sleep 30 & exit 0";
  AgentProcess run(Args("sub", "sub-1", {}, {"sh", "-c", script}));
  EXPECT_EQ(run.WaitExit(30000), 0) << run.log();
  EXPECT_THAT(run.log(), Not(HasSubstr("cannot remove")));
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty()) << run.log();
}

// `sh -c` waits for its command; a SIGTERM to the launcher reaches that grandchild too, which
// ends cleanly (its trap runs) rather than being SIGKILLed at cleanup.
TEST_F(LauncherCleanupTest, ASignalToTheLauncherReachesEveryProcessOfTheRun) {
  const std::string started = dir_ + "/started", cleaned = dir_ + "/cleaned-up";
  const std::string inner = "trap 'touch " + cleaned + "; exit 0' TERM; touch " + started +
                            "; while :; do sleep 0.1; done";
  AgentProcess run(Args("sig", "sig-1", {}, {"sh", "-c", "sh -c \"" + inner + "\"; echo after"}));
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(started); }, 10000)) << run.log();
  EXPECT_EQ(run.Stop(), 128 + SIGTERM) << run.log();
  EXPECT_TRUE(std::filesystem::exists(cleaned)) << "the grandchild's trap did not run";
  EXPECT_THAT(run.log(), Not(HasSubstr("after")));
  const RunRecord r = Recorded("sig-1");
  ASSERT_TRUE(r.end);
  EXPECT_EQ(r.end->signal, SIGTERM);
  EXPECT_TRUE(r.end->signal_requested);
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty());
}

// The first run makes stagewatch/ and <stage>/ and ends first; the others found them there.
// The last one to end removes them, in every hierarchy. Runs made and ended at once race to
// make and remove them; none fails, and nothing is left.
TEST_F(LauncherCleanupTest, TheSharedStageCgroupsGoWithTheLastRunInThem) {
  AgentProcess first(Args("shared", "first", {}, {"sleep", "0.3"}));
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(RunDir("shared", "first")); }, 10000))
      << first.log();
  std::vector<std::unique_ptr<AgentProcess>> later;
  for (int i = 0; i < 3; ++i) {
    later.push_back(std::make_unique<AgentProcess>(
        Args("shared", "later-" + std::to_string(i), {}, {"sleep", "1"})));
  }
  EXPECT_EQ(first.WaitExit(20000), 0) << first.log();
  for (auto& run : later) EXPECT_EQ(run->WaitExit(20000), 0) << run->log();
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty());

  for (int round = 0; round < 3; ++round) {
    std::vector<std::unique_ptr<AgentProcess>> runs;
    for (int i = 0; i < 6; ++i) {
      runs.push_back(std::make_unique<AgentProcess>(
          Args("shared", absl::StrCat("race-", round, "-", i), {}, {"true"})));
    }
    for (auto& run : runs) EXPECT_EQ(run->WaitExit(20000), 0) << run->log();
  }
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty());
}

TEST_F(LauncherCleanupTest, AnEndAFullDiskCannotTakeIsKeptAndRecordedLaterAsItWas) {
  SmallDisk disk(dir_ + "/small");
  ASSERT_TRUE(disk.mounted()) << strerror(errno);
  ledger_ = dir_ + "/small/ledger.db";
  const std::string started = dir_ + "/started";
  AgentProcess run(Args("full", "full-1", {},
                        {"sh", "-c", "touch " + started + "; sleep 1; exit 3"}));
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(started); }, 10000)) << run.log();
  disk.Fill();
  EXPECT_EQ(run.WaitExit(20000), 3) << run.log();

  const std::string kept = ledger_ + ".pending/full-1.end";
  EXPECT_THAT(run.log(), HasSubstr("the run's end is not recorded in the ledger yet"));
  EXPECT_THAT(run.log(), HasSubstr("it is kept in " + kept + ", and the agent (within a second), "
                                   "the next `stagewatch run` or `stagewatch runs list` records "
                                   "it there"));
  ASSERT_TRUE(std::filesystem::exists(kept)) << run.log();
  const nlohmann::json end = nlohmann::json::parse(ReadFile(kept));
  EXPECT_EQ(end["exit_code"], 3);
  const absl::Time ended = absl::FromUnixNanos(end["end_unix_ns"].get<int64_t>());
  EXPECT_FALSE((*(*Ledger::OpenForReading(ledger_))->Get("full-1"))->end);

  disk.Free();
  const absl::Time freed = absl::Now();
  absl::SleepFor(absl::Seconds(1));  // recorded later: its end is not when it was recorded
  AgentProcess list({"runs", "list", "--ledger.path", ledger_, "--json"});
  ASSERT_EQ(list.WaitExit(10000), 0) << list.log();
  EXPECT_THAT(list.log(), HasSubstr("recorded the end of run full-1, kept while the ledger could "
                                    "not take it"));
  EXPECT_FALSE(std::filesystem::exists(kept));
  const RunRecord r = Recorded("full-1");
  ASSERT_TRUE(r.end);
  EXPECT_EQ(r.end->exit_code, 3);
  EXPECT_EQ(absl::ToUnixMillis(r.end->end), absl::ToUnixMillis(ended));
  // The command slept 1 s; under emulation it may take longer, but it ended before the disk
  // was freed, so an end stamped when it was recorded would fail here.
  EXPECT_GE(*r.Wall(), absl::Seconds(1));
  EXPECT_LT(r.end->end, freed);
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty());
}

// Without an agent, the next run of the stage closes the run of a launcher killed mid-run, and
// removes the empty cgroups a run closed by someone who could not remove them left (an agent
// whose cgroupfs is read-only).
TEST_F(LauncherCleanupTest, TheNextRunOfAStageClosesRunsOfDeadLaunchersAndRemovesWhatTheyLeft) {
  AgentProcess killed(Args("next", "killed-1", {}, {"sleep", "0.5"}));
  const std::string procs = RunDir("next", "killed-1") + "/cgroup.procs";
  ASSERT_TRUE(WaitUntil([&] { return !ReadFile(procs).empty(); }, 10000)) << killed.log();
  kill(killed.pid(), SIGKILL);
  killed.WaitExit();
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(procs).empty(); }, 10000));
  {
    std::unique_ptr<Ledger> ledger = *Ledger::Open(ledger_);
    RunStart left{.id = "left-1", .stage = "next", .command = {"true"},
                  .cgroup_path = cgroup_->path() + "/stagewatch/next/left-1",
                  .start = absl::Now() - absl::Seconds(5)};
    ASSERT_TRUE(ledger->BeginRun(left).ok());
    ASSERT_TRUE(ledger->EndRun("left-1", {.end = left.start + absl::Seconds(1),
                                          .closed_by = RunCloser::kAgent}).ok());
    for (const std::string& base : Bases()) {
      std::filesystem::create_directories(base + "/stagewatch/next/left-1");
    }
  }
  AgentProcess next(Args("next", "next-1", {}, {"true"}));
  EXPECT_EQ(next.WaitExit(20000), 0) << next.log();
  EXPECT_THAT(next.log(), HasSubstr("stagewatch: closed run killed-1 of stage next: its launcher"));
  ASSERT_TRUE(Recorded("killed-1").end);
  EXPECT_EQ(Recorded("killed-1").end->closed_by, RunCloser::kLauncher);
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty());
}

// Launchers SIGKILLed at random moments of short runs, no agent: their commands run on, and
// the next `runs list` closes every run left open, no later than its command ended (its start:
// the runs are shorter than a sample), and removes its cgroups.
TEST_F(LauncherCleanupTest, RunsOfLaunchersKilledAtRandomMomentsAreClosedByTheNextRunsList) {
  ASSERT_TRUE(Ledger::Open(ledger_).ok());  // there, whenever the launchers die
  const KilledLaunches killed =
      LaunchAndKillAtRandom(15, dir_, [&](const std::string& id, const std::string& command) {
        return std::make_unique<AgentProcess>(Args("killed", id, {}, {"sh", "-c", command}));
      });
  const unsigned seed = killed.seed;
  // Every command has ended (0.5 s at most).
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const std::string& base : Bases()) {
          for (const KilledLaunch& run : killed.runs) {
            if (!ReadFile(base + "/stagewatch/killed/" + run.id + "/cgroup.procs").empty()) {
              return false;
            }
          }
        }
        return true;
      },
      10000));

  AgentProcess list({"runs", "list", "--ledger.path", ledger_, "--stage", "killed", "--json"});
  ASSERT_EQ(list.WaitExit(20000), 0) << list.log();
  absl::StatusOr<std::vector<RunRecord>> rows =
      (*Ledger::OpenForReading(ledger_))->List({.stage = "killed"});
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::map<std::string, RunRecord> by_id;
  for (const RunRecord& r : *rows) by_id[r.start.id] = r;
  int orphans = 0;
  for (const KilledLaunch& run : killed.runs) {
    auto found = by_id.find(run.id);
    if (found == by_id.end()) continue;  // killed before it recorded the run
    const RunRecord& r = found->second;
    ASSERT_TRUE(r.end) << run.id << " (seed " << seed << ")\n" << list.log();
    const double wall = absl::ToDoubleSeconds(*r.Wall());
    const bool orphan = !r.end->exit_code && !r.end->signal;  // not closed by its launcher
    const double real = RealSeconds(dir_, r);
    std::printf("%s: sleep %.2f s, real %.3f s, wall %.3f s, closed by %s\n", run.id.c_str(),
                run.seconds, real, wall, orphan ? "runs list" : "its launcher");
    if (!orphan) continue;  // killed after it had closed the run
    orphans++;
    EXPECT_GE(wall, 0) << run.id;
    EXPECT_LE(wall, real) << run.id << " (seed " << seed << "): after its command ended";
  }
  // Some die while their command sleeps (at least one); none would be a broken launch.
  EXPECT_GT(orphans, 0) << "seed " << seed;
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty()) << "seed " << seed << "\n" << list.log();
}

}  // namespace
}  // namespace stagewatch::testing
