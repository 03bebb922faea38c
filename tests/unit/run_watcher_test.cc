// The run watcher on a real SQLite ledger, with cgroup events as the probe delivers them and
// a directory tree standing in for the keyed hierarchy: which cgroups are runs, a launcher's
// row used rather than a second one, who closes what, and what a restart closes.
#include "runs/run_watcher.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "gtest/gtest.h"
#include "cgroup_event_for.h"
#include "runs/pipeline_run.h"
#include "runs_test_util.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TempDir;

class RunWatcherTest : public ::testing::Test {
 protected:
  explicit RunWatcherTest(std::vector<StageConfig> configured = {})
      : stages_(std::move(configured), DiscoveryConfig{}), ledger_path_(dir_.file("ledger.db")) {
    root_ = dir_.file("cgroupfs");
    mkdir(root_.c_str(), 0755);
  }

  std::unique_ptr<RunWatcher> Start(PipelinesConfig pipelines = {},
                                    absl::TimeZone zone = absl::UTCTimeZone(),
                                    RunProbeReaders readers = {}) {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
    EXPECT_TRUE(ledger.ok()) << ledger.status();
    absl::StatusOr<std::unique_ptr<RunWatcher>> w = RunWatcher::Start(
        *std::move(ledger), &stages_,
        {.key_root = root_, .oom_observed = true, .tick = absl::Milliseconds(20),
         .pipelines = std::move(pipelines), .zone = zone},
        std::move(readers));
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *std::move(w) : nullptr;
  }

  // A watcher that samples discovered runs every 20 ms from v1 memory files in the tree.
  std::unique_ptr<RunWatcher> StartSampling() {
    CgroupLayout layout;
    layout.mode = CgroupMode::kV1;
    layout.key = CGROUP_KEY_V1_MEMORY;
    layout.key_root = layout.v1_memory_root = root_;
    layout.v1_roots = {{"memory", root_}};
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
    EXPECT_TRUE(ledger.ok()) << ledger.status();
    if (!ledger.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<RunWatcher>> w = RunWatcher::Start(
        *std::move(ledger), &stages_,
        {.key_root = root_, .oom_observed = true, .tick = absl::Milliseconds(20),
         .sampling = DiscoveredSamplerOptions{.layout = layout,
                                              .interval = absl::Milliseconds(20),
                                              .reads_per_second = 1000}},
        {});
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *std::move(w) : nullptr;
  }

  // Makes the directory and returns the event the probe would deliver for it.
  cgroup_event Mkdir(const std::string& path) {
    std::filesystem::create_directories(root_ + path);
    struct stat st;
    stat((root_ + path).c_str(), &st);
    return Event(CGROUP_EVENT_MKDIR, st.st_ino, path);
  }
  cgroup_event Rmdir(const cgroup_event& made) {
    const std::string path(made.path);
    std::filesystem::remove_all(root_ + path);
    return Event(CGROUP_EVENT_RMDIR, made.cgroup_id, path);
  }
  static cgroup_event Event(int kind, uint64_t id, const std::string& path) {
    return testing::CgroupEventFor(kind, id, path);
  }

  std::vector<RunRecord> Runs() {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_path_);
    EXPECT_TRUE(ledger.ok()) << ledger.status();
    absl::StatusOr<std::vector<RunRecord>> runs = (*ledger)->List({});
    EXPECT_TRUE(runs.ok()) << runs.status();
    return runs.ok() ? *runs : std::vector<RunRecord>{};
  }

  static uint64_t Ended(const RunsSnapshot& s, const std::string& stage,
                        const std::string& verdict) {
    auto it = s.ended.find({stage, "", verdict});
    return it == s.ended.end() ? 99 : it->second;
  }

  TempDir dir_;
  StageResolver stages_;
  std::string ledger_path_;
  std::string root_;
};

// The OOM and cgroup rings are read on threads of their own: a kill handled before the mkdir
// of its run's cgroup (or of a cgroup within the run) still reaches the run.
TEST_F(RunWatcherTest, AKillHandledBeforeItsCgroupsMkdirReachesTheRun) {
  auto watcher = Start();
  watcher->OnCgroupEvent(Mkdir("/jobs"));
  watcher->OnCgroupEvent(Mkdir("/jobs/stagewatch"));
  watcher->OnCgroupEvent(Mkdir("/jobs/stagewatch/train"));
  const cgroup_event job = Mkdir("/jobs/stagewatch/train/job_7");
  const cgroup_event step = Mkdir("/jobs/stagewatch/train/job_7/step_0");
  watcher->OnOomKill(job.cgroup_id, {.pid = 70, .comm = "python3", .kind = "kernel"});
  watcher->OnOomKill(step.cgroup_id, {.pid = 71, .comm = "torchrun", .kind = "kernel"});
  watcher->OnCgroupEvent(job);
  watcher->OnCgroupEvent(step);
  watcher->OnCgroupEvent(Rmdir(step));
  watcher->OnCgroupEvent(Rmdir(job));
  watcher->Flush();

  std::vector<RunRecord> runs = Runs();
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].agent.oom_victims.size(), 2u);
  EXPECT_EQ(runs[0].agent.oom_victims[0].pid, 70);
  EXPECT_EQ(runs[0].agent.oom_victims[1].pid, 71);
}

TEST_F(RunWatcherTest, OnlyACgroupDirectlyBeneathAStagesTopIsARunAndItsKillsCount) {
  auto watcher = Start();
  watcher->OnCgroupEvent(Mkdir("/jobs"));
  watcher->OnCgroupEvent(Mkdir("/jobs/stagewatch"));
  watcher->OnCgroupEvent(Mkdir("/jobs/stagewatch/train"));         // the stage's top
  const cgroup_event job = Mkdir("/jobs/stagewatch/train/job_42");  // a run
  watcher->OnCgroupEvent(job);
  const cgroup_event step = Mkdir("/jobs/stagewatch/train/job_42/step_0");  // within the run
  watcher->OnCgroupEvent(step);
  watcher->OnOomKill(step.cgroup_id, {.pid = 77, .comm = "python3", .kind = "kernel"});
  watcher->OnOomKill(12345, {.pid = 78, .comm = "other", .kind = "kernel"});  // not a run's
  watcher->OnCgroupEvent(Rmdir(step));
  watcher->OnCgroupEvent(Rmdir(job));
  watcher->Flush();

  std::vector<RunRecord> runs = Runs();
  ASSERT_EQ(runs.size(), 1u);
  const RunRecord& r = runs[0];
  EXPECT_EQ(r.start.id, "job_42");
  EXPECT_EQ(r.start.stage, "train");
  EXPECT_EQ(r.start.source, RunSource::kDiscovered);
  EXPECT_EQ(r.start.cgroup_path, "/jobs/stagewatch/train/job_42");
  ASSERT_TRUE(r.end);
  EXPECT_EQ(r.end->closed_by, RunCloser::kAgent);
  EXPECT_EQ(r.end->facts.oom_kills_kernel, 1u);
  ASSERT_EQ(r.agent.oom_victims.size(), 1u);
  EXPECT_EQ(r.agent.oom_victims[0].pid, 77);
  EXPECT_EQ(r.agent.oom_kills_userspace, 0u);
  const RunsSnapshot s = watcher->Snapshot();
  EXPECT_EQ(Ended(s, "train", "interrupted"), 1u);
  EXPECT_EQ(Ended(s, "train", "clean"), 0u);  // every verdict of a seen stage, zeros too
  ASSERT_EQ(s.recent.size(), 1u);
  EXPECT_EQ(s.recent[0].id, "job_42");
  EXPECT_EQ(s.recent[0].verdict, "interrupted");
}

// Runs of a configured stage with a pipeline join the night they start in, by that pipeline's
// night_starts; runs of a stage of no pipeline join none.
class PipelineRunWatcherTest : public RunWatcherTest {
 protected:
  PipelineRunWatcherTest()
      : RunWatcherTest({StageConfig{.name = "etl", .pipeline = "nightly",
                                    .cgroup_paths = {"/jobs/etl"}},
                        StageConfig{.name = "adhoc", .cgroup_paths = {"/jobs/adhoc"}}}) {}
};

TEST_F(PipelineRunWatcherTest, ADiscoveredRunOfAPipelinesStageJoinsItsNight) {
  const absl::TimeZone zone = testing::LoadZone("Europe/Berlin");
  PipelinesConfig pipelines;
  pipelines["nightly"].night_starts = absl::Hours(18);
  auto watcher = Start(pipelines, zone);
  watcher->OnCgroupEvent(Mkdir("/jobs"));
  watcher->OnCgroupEvent(Mkdir("/jobs/etl"));
  watcher->OnCgroupEvent(Mkdir("/jobs/adhoc"));
  const cgroup_event etl = Mkdir("/jobs/etl/load_1");
  const cgroup_event adhoc = Mkdir("/jobs/adhoc/try_1");
  watcher->OnCgroupEvent(etl);
  watcher->OnCgroupEvent(adhoc);
  watcher->OnCgroupEvent(Rmdir(etl));
  watcher->OnCgroupEvent(Rmdir(adhoc));
  watcher->Flush();

  std::map<std::string, RunRecord> runs;
  for (RunRecord& r : Runs()) runs[r.start.stage] = std::move(r);
  ASSERT_EQ(runs.size(), 2u);
  const RunStart& s = runs["etl"].start;
  EXPECT_EQ(s.pipeline, "nightly");
  EXPECT_EQ(s.pipeline_run, NightOf(s.start, absl::Hours(18), zone));
  // Before 18:00 Berlin time a run belongs to the night that started the day before.
  const absl::CivilSecond local = absl::ToCivilSecond(s.start, zone);
  const absl::CivilDay expected = local.hour() < 18 ? absl::CivilDay(local) - 1
                                                    : absl::CivilDay(local);
  EXPECT_EQ(s.pipeline_run, absl::FormatCivilTime(expected));
  EXPECT_EQ(runs["adhoc"].start.pipeline, "");
  EXPECT_EQ(runs["adhoc"].start.pipeline_run, "");
}

TEST_F(RunWatcherTest, ALaunchersRowIsUsedNotDoubledAndALiveLauncherClosesItsOwn) {
  const std::string path = "/stagewatch/validate/r1";
  auto watcher = Start();
  // The launcher's order: the cgroup first, its row a moment later.
  const cgroup_event run = Mkdir(path);
  watcher->OnCgroupEvent(run);
  watcher->Flush();
  {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
    ASSERT_TRUE(ledger.ok());
    RunStart start = testing::Started("r1", "validate", absl::Now());
    start.cgroup_path = path;
    start.launcher_pid = getpid();  // alive
    ASSERT_TRUE((*ledger)->BeginRun(start).ok());
  }
  absl::SleepFor(absl::Milliseconds(100));  // a few ticks: the watcher finds the row
  watcher->OnCgroupEvent(Rmdir(run));
  watcher->Flush();
  std::vector<RunRecord> runs = Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].end) << "the agent closed a run whose launcher lives";
  EXPECT_TRUE(runs[0].agent_observed);
  EXPECT_EQ(Ended(watcher->Snapshot(), "validate", "interrupted"), 0u);

  {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
    ASSERT_TRUE(ledger.ok());
    RunEnd end{.end = absl::Now(), .exit_code = 0};
    ASSERT_TRUE((*ledger)->EndRun("r1", end).ok());
  }
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        const RunsSnapshot s = watcher->Snapshot();
        return !s.recent.empty() && s.recent[0].id == "r1";
      },
      5000));
  runs = Runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].end->closed_by, RunCloser::kLauncher);
}

// A short run under load: the launcher has begun and ended its row before the agent handles
// the cgroup's mkdir and rmdir. The agent's facts go to that row; no discovered second one.
TEST_F(RunWatcherTest, ALaunchersRowEndedBeforeTheEventsArriveGetsTheFactsNotADouble) {
  const std::string path = "/stagewatch/validate/r2";
  auto watcher = Start();
  const cgroup_event run = Mkdir(path);
  {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
    ASSERT_TRUE(ledger.ok());
    RunStart start = testing::Started("r2", "validate", absl::Now() - absl::Milliseconds(50));
    start.cgroup_path = path;
    start.launcher_pid = getpid();
    ASSERT_TRUE((*ledger)->BeginRun(start).ok());
    RunEnd end{.end = absl::Now(), .signal = SIGKILL};  // not sent through the launcher
    ASSERT_TRUE((*ledger)->EndRun("r2", end).ok());
  }
  watcher->OnCgroupEvent(run);
  watcher->OnOomKill(run.cgroup_id, {.pid = 79, .comm = "python3", .kind = "kernel"});
  watcher->OnCgroupEvent(Rmdir(run));
  watcher->Flush();

  std::vector<RunRecord> runs = Runs();
  ASSERT_EQ(runs.size(), 1u) << "a discovered row beside the launcher's";
  EXPECT_EQ(runs[0].start.id, "r2");
  EXPECT_EQ(runs[0].end->closed_by, RunCloser::kLauncher);
  ASSERT_EQ(runs[0].agent.oom_victims.size(), 1u);
  EXPECT_EQ(runs[0].agent.oom_victims[0].pid, 79);
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return Ended(watcher->Snapshot(), "validate", "interrupted") == 1; }, 5000));

  // The same path made again by hand long after: a run of its own.
  {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
    ASSERT_TRUE(ledger.ok());
    RunStart start = testing::Started("r3", "validate", absl::Now() - absl::Minutes(5));
    start.cgroup_path = "/stagewatch/validate/r3";
    ASSERT_TRUE((*ledger)->BeginRun(start).ok());
    ASSERT_TRUE((*ledger)->EndRun("r3", {.end = absl::Now() - absl::Minutes(4)}).ok());
  }
  const cgroup_event again = Mkdir("/stagewatch/validate/r3");
  watcher->OnCgroupEvent(again);
  watcher->OnCgroupEvent(Rmdir(again));
  watcher->Flush();
  runs = Runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].start.source, RunSource::kDiscovered);
  EXPECT_EQ(runs[0].start.cgroup_path, "/stagewatch/validate/r3");
  EXPECT_NE(runs[0].start.id, "r3");
}

TEST_F(RunWatcherTest, AtStartARunLeftOpenWhoseCgroupAndLauncherAreGoneIsClosed) {
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  {
    absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
    ASSERT_TRUE(ledger.ok());
    RunStart gone = testing::Started("gone", "train", absl::Now() - absl::Minutes(5));
    gone.launcher_pid = dead;
    ASSERT_TRUE((*ledger)->BeginRun(gone).ok());
    RunStart alive = testing::Started("alive", "train", absl::Now());
    std::filesystem::create_directories(root_ + alive.cgroup_path);  // its cgroup lives
    ASSERT_TRUE((*ledger)->BeginRun(alive).ok());
  }
  auto watcher = Start();
  std::map<std::string, RunRecord> by_id;
  for (RunRecord& r : Runs()) by_id[r.start.id] = r;
  ASSERT_TRUE(by_id["gone"].end);
  EXPECT_EQ(by_id["gone"].end->closed_by, RunCloser::kAgent);
  EXPECT_FALSE(by_id["gone"].end->facts.oom_kills_kernel) << "nobody watched: unknown, not 0";
  EXPECT_FALSE(by_id["alive"].end);
}

// Runs born and gone before the watcher got to them (a churn it lags behind) are written in one
// ledger commit per pass of the watcher, not three or four each: every commit is an fsync.
// stagewatch_run_info holds each stage's newest runs.info_per_stage ended runs, newest first,
// both as runs end and as a restarted watcher seeds it from the ledger.
TEST_F(RunWatcherTest, RunInfoHoldsTheNewestInfoPerStageRunsOfAStage) {
  RunsConfig runs;
  runs.info_per_stage = 2;
  const RunWatcherOptions options{.key_root = root_, .runs = runs, .oom_observed = true,
                                  .tick = absl::Milliseconds(20)};
  auto ids = [](const RunsSnapshot& s) {
    std::vector<std::string> out;
    for (const EndedRun& r : s.recent) out.push_back(r.id);
    return out;
  };
  {
    absl::StatusOr<std::unique_ptr<RunWatcher>> watcher =
        RunWatcher::Start(*Ledger::Open(ledger_path_), &stages_, options, {});
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    for (const std::string id : {"capped_1", "capped_2", "capped_3"}) {
      const cgroup_event made = Mkdir("/stagewatch/capped/" + id);
      (*watcher)->OnCgroupEvent(made);
      (*watcher)->OnCgroupEvent(Rmdir(made));
      (*watcher)->Flush();
      absl::SleepFor(absl::Milliseconds(5));  // distinct start and end times
    }
    EXPECT_EQ(Runs().size(), 3u);
    EXPECT_EQ(ids((*watcher)->Snapshot()), (std::vector<std::string>{"capped_3", "capped_2"}));
  }
  absl::StatusOr<std::unique_ptr<RunWatcher>> restarted =
      RunWatcher::Start(*Ledger::Open(ledger_path_), &stages_, options, {});
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  EXPECT_EQ(ids((*restarted)->Snapshot()), (std::vector<std::string>{"capped_3", "capped_2"}));
}

TEST_F(RunWatcherTest, RunsBornAndGoneBeforeAPassCostOneCommitAndKeepEveryFact) {
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path_);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  const Ledger* counted = ledger->get();
  absl::StatusOr<std::unique_ptr<RunWatcher>> watcher = RunWatcher::Start(
      *std::move(ledger), &stages_,
      {.key_root = root_, .oom_observed = true, .tick = absl::Milliseconds(20)}, {});
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  const uint64_t before = counted->commits();

  // A writer holding the ledger's write lock (a launcher) stalls the watcher's first write
  // until every event below is queued, as a churn faster than the watcher queues them.
  std::unique_ptr<Ledger> other = *Ledger::Open(ledger_path_);
  ASSERT_TRUE(other->BeginBatch().ok());
  constexpr int kRuns = 100;
  std::map<std::string, uint64_t> kills;
  for (int i = 0; i < kRuns; i++) {
    const cgroup_event made = Mkdir("/stagewatch/oneshot/run_" + std::to_string(i));
    (*watcher)->OnCgroupEvent(made);
    if (i % 10 == 0) {
      (*watcher)->OnOomKill(made.cgroup_id, {.pid = 100 + i, .comm = "job", .kind = "kernel"});
    }
    kills[made.path] = i % 10 == 0 ? 1 : 0;
    cgroup_event gone = Rmdir(made);
    gone.memory_peak_pages = 1 + i;
    gone.memory_max_pages = 1000;
    (*watcher)->OnCgroupEvent(gone);
  }
  ASSERT_TRUE(other->CommitBatch().ok());
  (*watcher)->Flush();
  const uint64_t commits = counted->commits() - before;

  std::vector<RunRecord> runs = Runs();
  ASSERT_EQ(runs.size(), static_cast<size_t>(kRuns));
  const uint64_t page = sysconf(_SC_PAGESIZE);
  for (const RunRecord& r : runs) {
    const int i = std::stoi(r.start.id.substr(r.start.id.rfind('_') + 1));
    EXPECT_EQ(r.start.source, RunSource::kDiscovered);
    EXPECT_EQ(r.start.stage, "oneshot");
    ASSERT_TRUE(r.end) << r.start.id;
    EXPECT_GE(r.end->end, r.start.start) << r.start.id;
    EXPECT_EQ(r.end->closed_by, RunCloser::kAgent);
    EXPECT_TRUE(r.agent.saw_end) << r.start.id;
    EXPECT_EQ(r.end->facts.oom_kills_kernel, kills[r.start.cgroup_path]) << r.start.id;
    EXPECT_EQ(r.agent.oom_victims.size(), kills[r.start.cgroup_path]) << r.start.id;
    EXPECT_EQ(r.end->facts.memory_peak_bytes, (1 + i) * page) << r.start.id;
    EXPECT_EQ(r.end->facts.memory_limit_bytes, 1000 * page) << r.start.id;
  }
  EXPECT_EQ(Ended((*watcher)->Snapshot(), "oneshot", "interrupted"), 10u);
  // Two passes at most (the one stalled, and all the rest), and a tick's.
  EXPECT_LE(commits, 4u) << kRuns << " runs cost " << commits << " commits";
}

// Runs born and gone just before a shutdown, still queued when it comes, are in the ledger:
// the watcher stops once its queue is handled.
TEST_F(RunWatcherTest, RunsStillQueuedAtShutdownAreRecorded) {
  std::unique_ptr<RunWatcher> watcher = Start();
  ASSERT_TRUE(watcher);
  // A writer holding the ledger's write lock stalls the watcher's first pass, so that the
  // shutdown comes while the rest are queued.
  std::unique_ptr<Ledger> other = *Ledger::Open(ledger_path_);
  ASSERT_TRUE(other->BeginBatch().ok());
  constexpr int kRuns = 50;
  for (int i = 0; i < kRuns; i++) {
    const cgroup_event made = Mkdir("/stagewatch/lastbatch/run_" + std::to_string(i));
    watcher->OnCgroupEvent(made);
    watcher->OnCgroupEvent(Rmdir(made));
  }
  std::thread stop([&watcher] { watcher.reset(); });
  absl::SleepFor(absl::Milliseconds(100));  // the shutdown waits on the stalled pass
  ASSERT_TRUE(other->CommitBatch().ok());
  stop.join();

  std::vector<RunRecord> runs = Runs();
  EXPECT_EQ(runs.size(), static_cast<size_t>(kRuns));
  for (const RunRecord& r : runs) EXPECT_TRUE(r.end) << r.start.id;
}

}  // namespace
}  // namespace stagewatch

namespace stagewatch {
namespace {

// A discovered run sampled by the agent from its (fixture) v1 memory files while it lives, and
// closed with the kernel's figures the rmdir event carries: those beat the last sample's.
TEST_F(RunWatcherTest, ADiscoveredRunIsSampledAndClosedWithTheKernelsPeakAtRmdir) {
  std::unique_ptr<RunWatcher> watcher = StartSampling();
  ASSERT_NE(watcher, nullptr);
  watcher->OnCgroupEvent(Mkdir("/stagewatch"));
  watcher->OnCgroupEvent(Mkdir("/stagewatch/train"));
  const std::string dir = root_ + "/stagewatch/train/job_9";
  cgroup_event job = Mkdir("/stagewatch/train/job_9");
  for (const auto& [file, text] : std::map<std::string, std::string>{
           {"memory.usage_in_bytes", "104857600\n"},
           {"memory.limit_in_bytes", "209715200\n"},
           {"memory.max_usage_in_bytes", "115343360\n"},
           {"memory.failcnt", "0\n"}}) {
    std::ofstream(dir + "/" + file) << text;
  }
  watcher->OnCgroupEvent(job);
  // Recorded after the grace second; then sampled every 20 ms.
  ASSERT_TRUE(testing::WaitUntil([&] { return Runs().size() == 1; }, 5000));
  absl::SleepFor(absl::Milliseconds(300));

  cgroup_event gone = Rmdir(job);
  gone.memory_peak_pages = (uint64_t{130} << 20) / sysconf(_SC_PAGESIZE);
  gone.memory_max_pages = (uint64_t{200} << 20) / sysconf(_SC_PAGESIZE);
  gone.memory_failcnt = 4;
  watcher->OnCgroupEvent(gone);
  watcher->Flush();

  std::vector<RunRecord> runs = Runs();
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_TRUE(runs[0].end);
  const CgroupFacts& f = runs[0].end->facts;
  EXPECT_EQ(f.memory_peak_bytes, uint64_t{130} << 20);  // the kernel's, not the last sample's
  EXPECT_EQ(f.memory_limit_bytes, uint64_t{200} << 20);
  EXPECT_EQ(f.memory_failcnt, 4u);
  EXPECT_EQ(f.memory_mean_bytes, uint64_t{100} << 20);
  EXPECT_EQ(f.memory_p95_bytes, uint64_t{100} << 20);
  EXPECT_EQ(f.near_limit_seconds, 0);
  EXPECT_FALSE(f.cpu_seconds);  // no cpuacct hierarchy here
  absl::StatusOr<std::unique_ptr<Ledger>> reader = Ledger::OpenForReading(ledger_path_);
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<std::vector<RunSample>> points = (*reader)->Samples(runs[0].start.id);
  ASSERT_TRUE(points.ok());
  EXPECT_GE(points->size(), 3u);
  for (const RunSample& p : *points) EXPECT_EQ(p.memory_bytes, uint64_t{100} << 20);
}

// Per-cgroup figures as a tracker holds them, until the test says the tracker forgot one.
class FakeProbeFigures {
 public:
  void Set(uint64_t id, uint64_t migrations, double run_queue_wait) {
    std::lock_guard<std::mutex> lock(mu_);
    figures_[id] = {migrations, run_queue_wait};
  }
  void Forget(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    figures_.erase(id);
  }
  RunProbeReaders Readers() {
    RunProbeReaders r;
    r.migrations = [this](const std::set<uint64_t>& ids) {
      std::lock_guard<std::mutex> lock(mu_);
      std::pair<uint64_t, uint64_t> sum;
      for (uint64_t id : ids) sum.second += figures_.contains(id) ? figures_[id].first : 0;
      return std::optional(sum);
    };
    r.run_queue_wait_seconds = [this](const std::set<uint64_t>& ids) {
      std::lock_guard<std::mutex> lock(mu_);
      double sum = 0;
      for (uint64_t id : ids) sum += figures_.contains(id) ? figures_[id].second : 0;
      return std::optional(sum);
    };
    return r;
  }

 private:
  std::mutex mu_;
  std::map<uint64_t, std::pair<uint64_t, double>> figures_;
};

// A run's child cgroup removed before the run: its figures are read at its own rmdir, so they
// count once in the run whether the trackers forgot the child before the run ended or not.
TEST_F(RunWatcherTest, AChildRemovedBeforeItsRunCountsOnceWhetherOrNotItsFiguresWereForgotten) {
  for (bool forgotten : {true, false}) {
    SCOPED_TRACE(forgotten ? "forgotten before the run ended" : "still held at the run's end");
    FakeProbeFigures figures;
    auto watcher = Start({}, absl::UTCTimeZone(), figures.Readers());
    const std::string job_path = forgotten ? "/stagewatch/fit/job_1" : "/stagewatch/fit/job_2";
    watcher->OnCgroupEvent(Mkdir("/stagewatch"));
    watcher->OnCgroupEvent(Mkdir("/stagewatch/fit"));
    const cgroup_event job = Mkdir(job_path);
    watcher->OnCgroupEvent(job);
    const cgroup_event step = Mkdir(job_path + "/step_0");
    watcher->OnCgroupEvent(step);
    const cgroup_event later = Mkdir(job_path + "/step_1");  // made after step_0 went
    watcher->Flush();  // the run and step_0 are watched
    figures.Set(job.cgroup_id, 5, 0.25);
    figures.Set(step.cgroup_id, 300, 1.5);
    watcher->OnCgroupEvent(Rmdir(step));
    if (forgotten) figures.Forget(step.cgroup_id);
    watcher->OnCgroupEvent(later);
    figures.Set(later.cgroup_id, 40, 0.5);
    watcher->OnCgroupEvent(Rmdir(later));
    watcher->Flush();
    if (forgotten) figures.Forget(later.cgroup_id);
    watcher->OnCgroupEvent(Rmdir(job));
    watcher->Flush();

    std::vector<RunRecord> runs = Runs();
    ASSERT_EQ(runs.size(), forgotten ? 1u : 2u);
    const RunRecord& r = runs[0];  // the newest
    ASSERT_TRUE(r.end);
    EXPECT_EQ(r.agent.cross_node_migrations, 345u);
    EXPECT_EQ(r.agent.run_queue_wait_seconds, 2.25);
  }
}

// The heap is trimmed at the first tick after a churn of runs stops (not at the samples write,
// 10 s later), once, and never while no run closes.
TEST_F(RunWatcherTest, TheHeapIsTrimmedOnceWhenAChurnStops) {
  std::unique_ptr<RunWatcher> watcher = Start();  // ticks every 20 ms, writes samples every 10 s
  ASSERT_NE(watcher, nullptr);
  watcher->OnCgroupEvent(Mkdir("/stagewatch"));
  watcher->OnCgroupEvent(Mkdir("/stagewatch/trim_churn"));
  watcher->Flush();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(watcher->held().trims, 0u);  // nothing closed yet
  for (int i = 0; i < 50; i++) {
    const cgroup_event made = Mkdir("/stagewatch/trim_churn/short_" + std::to_string(i));
    watcher->OnCgroupEvent(made);
    watcher->OnCgroupEvent(Rmdir(made));
  }
  watcher->Flush();
  EXPECT_TRUE(testing::WaitUntil([&] { return watcher->held().trims == 1; }, 2000));
  absl::SleepFor(absl::Milliseconds(200));  // ten quiet ticks
  EXPECT_EQ(watcher->held().trims, 1u);
  EXPECT_EQ(Runs().size(), 50u);
}

// What a churn's late-event keepers free after it stopped is given back too: the heap is
// trimmed at the next kSettleTrims samples writes, and then no more.
TEST_F(RunWatcherTest, TheHeapIsTrimmedAgainAtTheSamplesWritesAfterAChurn) {
  absl::StatusOr<std::unique_ptr<RunWatcher>> watcher = RunWatcher::Start(
      *Ledger::Open(ledger_path_), &stages_,
      {.key_root = root_, .oom_observed = true, .tick = absl::Milliseconds(20),
       .write_samples_every = absl::Milliseconds(60)},
      {});
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  (*watcher)->OnCgroupEvent(Mkdir("/stagewatch"));
  (*watcher)->OnCgroupEvent(Mkdir("/stagewatch/settle_churn"));
  for (int i = 0; i < 20; i++) {
    const cgroup_event made = Mkdir("/stagewatch/settle_churn/short_" + std::to_string(i));
    (*watcher)->OnCgroupEvent(made);
    (*watcher)->OnCgroupEvent(Rmdir(made));
  }
  (*watcher)->Flush();
  const uint64_t settled = 1 + RunWatcher::kSettleTrims;
  // Settled once the trims after the churn are done: one more if the churn spanned a samples
  // write, and then the count must not be read before that one (it was, under load).
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        const RunWatcher::Held h = (*watcher)->held();
        return h.trims >= settled && h.settle_trims_due == 0;
      },
      3000));
  const uint64_t trims = (*watcher)->held().trims;
  EXPECT_LE(trims, settled + 1);
  absl::SleepFor(absl::Milliseconds(400));  // six more samples writes
  EXPECT_EQ((*watcher)->held().trims, trims);
}

// A churn of short discovered runs (as a job scheduler makes them): every run gets its closed
// row, and once it is closed the watcher and its sampler hold nothing of it, so an agent's
// memory does not grow with the runs it has seen.
TEST_F(RunWatcherTest, NothingOfARunIsHeldOnceItsRowIsClosed) {
  std::unique_ptr<RunWatcher> watcher = StartSampling();
  ASSERT_NE(watcher, nullptr);
  watcher->OnCgroupEvent(Mkdir("/stagewatch"));
  watcher->OnCgroupEvent(Mkdir("/stagewatch/churn"));

  // Some live past the grace second (recorded and sampled while open), with a descendant that
  // had a kill; the rest are made and removed before anything looks at them.
  std::vector<cgroup_event> lived, steps;
  for (int i = 0; i < 10; i++) {
    lived.push_back(Mkdir("/stagewatch/churn/lived_" + std::to_string(i)));
    watcher->OnCgroupEvent(lived.back());
    std::ofstream(root_ + lived.back().path + "/memory.usage_in_bytes") << "4096\n";
    steps.push_back(Mkdir(std::string(lived.back().path) + "/step"));
    watcher->OnCgroupEvent(steps.back());
  }
  ASSERT_TRUE(testing::WaitUntil([&] { return watcher->held().sampled == 10; }, 5000));
  watcher->OnOomKill(steps[0].cgroup_id, {.pid = 7, .comm = "python3", .kind = "kernel"});
  for (int i = 0; i < 200; i++) {
    const cgroup_event made = Mkdir("/stagewatch/churn/short_" + std::to_string(i));
    watcher->OnCgroupEvent(made);
    watcher->OnCgroupEvent(Rmdir(made));
  }
  watcher->Flush();
  const RunWatcher::Held during = watcher->held();
  EXPECT_EQ(during.open_runs, 10u);  // the ten that live
  EXPECT_EQ(during.cgroups, 20u);    // their own cgroups and steps
  EXPECT_EQ(during.published, 20u);  // the same, for the deliverers
  EXPECT_EQ(during.sampled, 10u);
  for (size_t i = 0; i < lived.size(); i++) {
    watcher->OnCgroupEvent(Rmdir(steps[i]));
    watcher->OnCgroupEvent(Rmdir(lived[i]));
  }
  watcher->Flush();

  const RunWatcher::Held after = watcher->held();
  EXPECT_EQ(after.open_runs, 0u);
  EXPECT_EQ(after.cgroups, 0u);
  EXPECT_EQ(after.published, 0u);
  EXPECT_EQ(after.sampled, 0u);
  EXPECT_EQ(after.queued, 0u);
  std::vector<RunRecord> runs = Runs();
  ASSERT_EQ(runs.size(), 210u);
  int killed = 0;
  for (const RunRecord& r : runs) {
    ASSERT_TRUE(r.end) << r.start.id;
    EXPECT_TRUE(r.agent.saw_end) << r.start.id;
    killed += r.end->facts.oom_kills_kernel.value_or(0);
  }
  EXPECT_EQ(killed, 1);
  EXPECT_EQ(Ended(watcher->Snapshot(), "churn", "interrupted"), 1u);
}

// The tick looks at the runs of a stage the resolver forgot, not at every open run: the
// stage's series stay while any run of it is open, and go at the tick after its last closes.
TEST_F(RunWatcherTest, AForgottenStagesSeriesGoOnceItsLastOpenRunCloses) {
  std::unique_ptr<RunWatcher> watcher = Start();
  ASSERT_NE(watcher, nullptr);
  watcher->OnCgroupEvent(Mkdir("/stagewatch"));
  watcher->OnCgroupEvent(Mkdir("/stagewatch/kept"));
  watcher->OnCgroupEvent(Mkdir("/stagewatch/old"));
  std::vector<cgroup_event> old;
  for (int i = 0; i < 2; i++) {
    old.push_back(Mkdir("/stagewatch/old/run_" + std::to_string(i)));
    watcher->OnCgroupEvent(old.back());
  }
  const cgroup_event kept = Mkdir("/stagewatch/kept/run_k");
  watcher->OnCgroupEvent(kept);
  ASSERT_TRUE(testing::WaitUntil([&] { return Runs().size() == 3; }, 5000));
  const absl::Time t0 = absl::Now();
  stages_.ForgetGone({stages_.Resolve("/stagewatch/kept/run_k").id}, t0);
  ASSERT_TRUE(stages_.ForgetGone({stages_.Resolve("/stagewatch/kept/run_k").id},
                                 t0 + absl::Hours(1000)));
  absl::SleepFor(absl::Milliseconds(100));  // five ticks
  EXPECT_EQ(Ended(watcher->Snapshot(), "old", "unobserved"), 0u) << "two of its runs are open";

  watcher->OnCgroupEvent(Rmdir(old[0]));
  watcher->Flush();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(Ended(watcher->Snapshot(), "old", "unobserved"), 1u) << "one of its runs is open";

  watcher->OnCgroupEvent(Rmdir(old[1]));
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return Ended(watcher->Snapshot(), "old", "unobserved") == 99; }, 2000));
  EXPECT_EQ(Ended(watcher->Snapshot(), "kept", "unobserved"), 0u);
  for (const RunRecord& r : Runs()) EXPECT_EQ(r.end.has_value(), r.start.stage == "old");
}

// The ticks look only at the runs that changed: among open runs that stay quiet tick after
// tick, one made later is recorded and gets its samples written while it runs, and the ones
// removed are closed, each with its own samples.
TEST_F(RunWatcherTest, AmongQuietOpenRunsALaterOneIsSampledAndRemovedOnesAreClosed) {
  CgroupLayout layout;
  layout.mode = CgroupMode::kV1;
  layout.key = CGROUP_KEY_V1_MEMORY;
  layout.key_root = layout.v1_memory_root = root_;
  layout.v1_roots = {{"memory", root_}};
  absl::StatusOr<std::unique_ptr<RunWatcher>> started = RunWatcher::Start(
      *Ledger::Open(ledger_path_), &stages_,
      {.key_root = root_, .oom_observed = true, .tick = absl::Milliseconds(20),
       .sampling = DiscoveredSamplerOptions{.layout = layout, .interval = absl::Milliseconds(20),
                                            .reads_per_second = 1000},
       .write_samples_every = absl::Milliseconds(60)},
      {});
  ASSERT_TRUE(started.ok()) << started.status();
  RunWatcher& watcher = **started;
  watcher.OnCgroupEvent(Mkdir("/stagewatch"));
  watcher.OnCgroupEvent(Mkdir("/stagewatch/quiet"));
  const auto make = [&](const std::string& name) {
    const cgroup_event made = Mkdir("/stagewatch/quiet/" + name);
    std::ofstream(root_ + made.path + "/memory.usage_in_bytes") << "4096\n";
    watcher.OnCgroupEvent(made);
    return made;
  };
  std::vector<cgroup_event> quiet;
  for (int i = 0; i < 20; i++) quiet.push_back(make("quiet_" + std::to_string(i)));
  ASSERT_TRUE(testing::WaitUntil([&] { return watcher.held().sampled == 20; }, 5000));
  absl::SleepFor(absl::Milliseconds(200));  // ten ticks in which nothing happens

  make("late");
  const auto samples_of = [&](const std::string& id) {
    absl::StatusOr<std::vector<RunSample>> points =
        (*Ledger::OpenForReading(ledger_path_))->Samples(id);
    return points.ok() ? points->size() : 0;
  };
  EXPECT_TRUE(testing::WaitUntil([&] { return samples_of("late") > 0; }, 5000))
      << "its points are written while it runs";
  for (int i = 0; i < 3; i++) watcher.OnCgroupEvent(Rmdir(quiet[i]));
  watcher.Flush();
  EXPECT_EQ(watcher.held().open_runs, 18u);
  EXPECT_EQ(watcher.held().sampled, 18u);
  for (const RunRecord& r : Runs()) {
    const bool removed = r.start.id == "quiet_0" || r.start.id == "quiet_1" ||
                         r.start.id == "quiet_2";
    EXPECT_EQ(r.end.has_value(), removed) << r.start.id;
    EXPECT_GT(samples_of(r.start.id), 0u) << r.start.id;
  }
}

}  // namespace
}  // namespace stagewatch
