// The agent's side of runs: every cgroup directly beneath a stage's top that the agent sees
// born and die is a run. Records those no launcher started (source=discovered), adds what only
// the agent sees (OOM kills as they happen; run-queue wait, reclaim stalls and preemptors at
// the end; anomalies of its stage while it lives) to every run's row, and closes runs whose
// launcher is gone: when their cgroup goes, or at once when it holds no task any more (the
// launcher died while its command ran on). Counts ended runs by verdict for the metrics.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bpf/lifecycle.h"
#include "cgroup/layout.h"
#include "config/pipelines_config.h"
#include "config/anomaly_config.h"
#include "config/runs_config.h"
#include "detectors/detector.h"
#include "detectors/run_expectation.h"
#include "runs/agent_presence.h"
#include "runs/baseline.h"
#include "runs/discovered_sampler.h"
#include "runs/ended_run_totals.h"
#include "runs/ledger.h"
#include "runs/run_end_readings.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

// Reads what the probes hold for a run's cgroups (its own and its descendants, by id). A reader
// left empty, or returning nullopt, means that fact is not observed (its probe is not running).
// The readers run on the thread that delivers the rmdir, before the probes' entries of the
// dead cgroup go, so they must take no lock a cgroup event's deliverer may hold: they read
// the BPF maps only. stage_of names the preempting cgroups later, on the watcher's thread.
struct RunProbeReaders {
  std::function<std::optional<double>(const std::set<uint64_t>&)> run_queue_wait_seconds;
  // Of that wait, the part spent throttled (AgentFacts::run_queue_throttled_seconds).
  std::function<std::optional<double>(const std::set<uint64_t>&)> run_queue_throttled_seconds;
  std::function<std::optional<double>(const std::set<uint64_t>&)> reclaim_stall_seconds;
  // preempting cgroup id → times it preempted one of `ids`, which held no task from
  // `settled_ns` on (CLOCK_MONOTONIC, as an event's at_ns; kSettledNow: not known, read now)
  std::function<std::optional<std::map<uint64_t, uint64_t>>(const std::set<uint64_t>&,
                                                             uint64_t settled_ns)>
      preemptions;
  static constexpr uint64_t kSettledNow = UINT64_MAX;
  std::function<std::string(uint64_t)> stage_of;
  // Its tasks' CPU migrations: {within a NUMA node, across nodes}.
  std::function<std::optional<std::pair<uint64_t, uint64_t>>(const std::set<uint64_t>&)>
      migrations;
  // Its on-CPU seconds by NUMA node id.
  std::function<std::optional<std::map<int, double>>(const std::set<uint64_t>&)>
      cpu_seconds_by_node;
};

// The detectors that judge a running run against its stage's usual runs (the anomaly engine):
// each run with a baseline is handed to `expect` once, when recorded, and to `forget` when it
// has ended; `pace` gets its slower-than-usual state (detectors/run_pace.h) each tick, with the
// cause so far. Unset: runs are not judged while they run.
struct RunDetectorHooks {
  std::function<void(uint64_t cgroup_id, const RunExpectation& expected)> expect;
  std::function<void(uint64_t cgroup_id)> forget;
  std::function<void(const Stage& stage, absl::Time t, uint64_t cgroup_id,
                     const DetectorState& state)>
      pace;
  SlowRunConfig slow_run;
};

struct RunWatcherOptions {
  std::string key_root;  // mount point of the keyed hierarchy: where run cgroup paths live
  // The hierarchies a dead launcher's run has cgroups in, to read and remove them.
  CgroupLayout layout;
  // The lifecycle probe sends populated flips (CGROUP_EVENT_UNPOPULATED): a dead launcher's run
  // is closed the moment its last task exits. Without them, every open launcher run's
  // launcher is looked at every orphan_sweep, and its end is when it was last known alive.
  bool populated_events = false;
  absl::Duration orphan_sweep = absl::Seconds(10);
  RunsConfig runs;
  bool oom_observed = false;  // the OOM probe runs: a run without kill events had none
  absl::Duration tick = absl::Seconds(1);  // how often closes by launchers are looked for
  // Samples discovered runs' cgroup files when set (runs.sample_reads_per_second above 0).
  std::optional<DiscoveredSamplerOptions> sampling;
  absl::Duration write_samples_every = absl::Seconds(10);  // batched ledger writes
  // A discovered run of a stage with a pipeline joins the night it starts in (pipeline_run.h).
  PipelinesConfig pipelines;
  absl::TimeZone zone = absl::LocalTimeZone();
  RunDetectorHooks detectors;
};

// What the kernel held in a removed cgroup's own memcg at its rmdir (bpf/lifecycle.h), in bytes;
// all nullopt when the event had none (no memcg of its own, or an older kernel).
struct MemcgAtRmdir {
  std::optional<uint64_t> peak_bytes;
  std::optional<uint64_t> failcnt;
  bool limit_known = false;
  std::optional<uint64_t> limit_bytes;  // nullopt and limit_known: unlimited
  static MemcgAtRmdir Of(const cgroup_event& event);
};

// Thread-safe: events come from the probes' poll threads and from drains at collect time. The
// callers only queue them (they may hold the path cache's or a tracker's lock); one thread of
// the watcher's own does the ledger writes.
class RunWatcher {
 public:
  // Closes runs left open whose cgroup is gone (and whose launcher, if any, is gone), adopts the
  // open runs whose cgroup lives, and starts the ticker.
  static absl::StatusOr<std::unique_ptr<RunWatcher>> Start(std::unique_ptr<Ledger> ledger,
                                                           StageResolver* stages,
                                                           RunWatcherOptions options,
                                                           RunProbeReaders readers);
  ~RunWatcher();
  RunWatcher(const RunWatcher&) = delete;
  RunWatcher& operator=(const RunWatcher&) = delete;

  // Call before the path cache applies the event (an rmdir's probe entries are still there).
  void OnCgroupEvent(const cgroup_event& event);
  // The lifecycle probe lost events: open runs are looked at again at the next tick.
  void OnEventsLost();
  // Waits until every event queued so far is in the ledger (for tests and shutdown).
  void Flush();
  void OnOomKill(uint64_t victim_cgroup_id, const OomVictim& victim);
  void OnAnomaly(const std::string& stage, const RunAnomaly& anomaly);

  RunsSnapshot Snapshot() const;

  // What the watcher holds by run or cgroup, for tests and benches: all of it goes with the
  // run, so each count is bounded by the runs open (and the events not yet handled).
  struct Held {
    size_t open_runs = 0;  // open_
    size_t cgroups = 0;    // by_cgroup_
    size_t published = 0;  // runs and descendants the deliverers read at rmdir
    size_t sampled = 0;    // runs the sampler holds
    size_t queued = 0;     // events not yet handled
    uint64_t trims = 0;    // malloc_trim calls so far (not state: a count)
    int settle_trims_due = 0;  // trims still due at the samples writes after a churn
  };
  Held held() const;
  // Heap trims at the samples writes after a churn has stopped (see Tick()).
  static constexpr int kSettleTrims = 3;

 private:
  // A run's cgroup, from its mkdir on. A launcher makes the cgroup a moment before it writes
  // the run's row, so the row is looked for until kGrace has passed; only then is it recorded as
  // a discovered run (facts seen meanwhile wait in `buffered`).
  struct OpenRun {
    RunStart start;           // id is "" until recorded
    bool recorded = false;
    uint64_t cgroup_id = 0;   // 0 for a run found open at startup whose cgroup was gone
    std::set<uint64_t> ids;   // its cgroup and descendants
    uint64_t kernel_kills = 0;
    AgentFacts buffered;
    bool removed = false;  // its cgroup is gone; waiting for the launcher to close it
    bool populated = false;  // a task is in its cgroup (populated flips, or read at startup)
    std::optional<absl::Time> emptied_at;  // when its last task exited, as the kernel said
    RunEndReadings retired;  // its removed descendants' figures, read at their rmdirs
  };
  static constexpr absl::Duration kGrace = absl::Seconds(1);
  // Whether the ledger's newest row for a cgroup's path, which the agent saw made at `seen`, is
  // that cgroup's run: an open row, or one a launcher closed before the agent got to the
  // cgroup's events (a short run under load). A launcher's path holds its run's unique id, so an
  // ended launcher row is an earlier cgroup's only if the path was made again by hand later.
  static bool OfThisCgroup(const RunRecord& row, absl::Time seen);
  static constexpr absl::Duration kLateEvents = absl::Seconds(10);

  RunWatcher(std::unique_ptr<Ledger> ledger, StageResolver* stages, RunWatcherOptions options,
             RunProbeReaders readers);
  absl::Status Recover();
  // The stage `path` is a run of, or nullopt.
  std::optional<Stage> RunStage(const std::string& path);
  // What the probes held for `ids`, read by the deliverer at an rmdir.
  RunEndReadings ReadAtEnd(const std::set<uint64_t>& ids,
                           uint64_t settled_ns = RunProbeReaders::kSettledNow) const;
  // A run's figures so far: its cgroups' now, with its removed descendants' at their rmdirs.
  RunEndReadings ReadRun(const OpenRun& run) const;
  void Queue(std::function<void()> task);
  void OnMkdir(uint64_t id, const std::string& path, absl::Time seen);
  void OnRmdir(uint64_t id, std::optional<RunEndReadings> readings, MemcgAtRmdir memcg);
  // A descendant of the run whose cgroup is `owner` went: its figures, read at its rmdir, are
  // kept with the run (the trackers forget its entries before the run ends).
  void OnDescendantRmdir(uint64_t owner, uint64_t id, const RunEndReadings& readings);
  // A cgroup removed before its mkdir was handled, read at its rmdir: a descendant's readings
  // go to its run as OnDescendantRmdir's, a run's own cgroup ends as OnRmdir's.
  void OnEarlyRmdir(uint64_t id, const RunEndReadings& readings, MemcgAtRmdir memcg);
  // What the agent adds to a run it watched end.
  AgentFacts EndFacts(const RunEndReadings& readings) const;
  void OnPopulated(uint64_t id, bool populated, absl::Time at);
  // A launcher run whose cgroup holds no task: closed if its launcher is dead (orphan_runs.h).
  // `watched`: the agent watched it to its end, and adds its end facts.
  void CloseIfOrphan(uint64_t key, bool watched);
  // Every open launcher run with a dead launcher, where populated flips cannot say when to look.
  void SweepOrphans();
  // When a launcher run whose launcher died ended: its last task's exit where the kernel said,
  // else when it was last known alive.
  absl::Time LauncherRunEnd(const OpenRun& run);
  // Writes a run's end; one the ledger does not take (a full disk) is kept and written again
  // each tick, with the time and facts it had. True when written now.
  bool WriteEnd(const std::string& id, const RunEnd& end);
  void RetryEnds();
  // After a pass's commit: its ends that did not reach the ledger are written again.
  void CheckBatchEnds(bool committed);
  // Marks the run's cgroup gone: no new cgroup is a descendant of it any more.
  void Unwatch(uint64_t key, OpenRun& run);
  // Stops watching a run that has ended (by anyone), and counts it.
  void Forget(uint64_t key);
  void AddOomKill(uint64_t victim_cgroup_id, const OomVictim& victim);
  // Kills in cgroups no run holds yet, kept a while: the OOM and cgroup rings are read on
  // threads of their own, so a kill can be handled before the mkdir of its run's cgroup.
  void KeepEarlyOomKill(uint64_t victim_cgroup_id, const OomVictim& victim);
  void AddEarlyOomKills(uint64_t cgroup_id);
  void DropStaleEarlyOomKills(absl::Time now);
  void AddAnomaly(const std::string& stage, const RunAnomaly& anomaly);
  // Which ids the deliverers read at rmdir: each run's own cgroup id → its ids.
  void PublishIds(const OpenRun& run);
  void Unpublish(const OpenRun& run);
  // Finds the launcher's row, or (once kGrace has passed, or `now_or_never`) records a discovered
  // run. Returns whether the run is recorded.
  bool Record(uint64_t key, bool now_or_never);
  void AddFacts(OpenRun& run, const AgentFacts& facts);
  // `saw_end`: the agent watched the run's cgroup go, so a kill it did not see did not happen.
  // The end facts are the sampler's last reading of a discovered run, with `memcg` over them.
  void CloseByAgent(uint64_t key, absl::Time end, bool saw_end, const MemcgAtRmdir& memcg = {});
  void StartSampling(const OpenRun& run);
  void WriteSamples();
  // Counts a run that has ended (by anyone) from its ledger row.
  void Count(uint64_t key);
  void CountEnded(const std::string& id);
  void SeeStage(const std::string& stage, const std::string& pipeline);
  // Each tick: the runs' series of a stage the resolver has forgotten (discovery.forget_after)
  // go too, once no run of it is open. A stage the resolver never named stays. Only after the
  // resolver's stages changed, or while a forgotten stage waits for its runs to close.
  void ForgetForgottenStages();
  std::set<std::string> named_stages_;  // stages the resolver named at some tick
  std::optional<uint64_t> stages_version_;  // the resolver's, when they were last looked at
  bool forget_waits_ = false;               // a forgotten stage had a run open then
  void Tick();
  // The run's baseline, looked up once when it is recorded, handed to options_.detectors
  // (run_watcher_expect.cc); JudgePaces tells them each tick which runs are slower than usual.
  void Expect(uint64_t key, const OpenRun& run);
  void Unexpect(uint64_t key);
  void JudgePaces(absl::Time now);
  void Loop();  // the watcher's thread: queued tasks, and Tick() every options.tick
  // Around each pass of Loop(): its writes go to the ledger in one transaction, or one for
  // each kTasksPerBatch of its queued events (about 0.5 ms each under a churn).
  static constexpr size_t kTasksPerBatch = 1000;
  void BeginBatch();
  void CommitBatch();
  // Each tick, after the pass's commit: the ends written again, and the ends launchers kept
  // beside the ledger (a full disk) recorded; `first`: their reservations read too.
  void AfterPass(bool first);
  void LookForOrphans();
  void Warn(const std::string& what, const std::string& id, const absl::Status& s) const;
  // At the start of each pass, before it looks a run up or writes one: opens the ledger again
  // when its file was removed or replaced, carrying the runs open here over, so that no write
  // goes to a removed file (run_watcher_ledger.cc).
  void KeepLedgerCurrent();
  bool ledger_lost_ = false;  // the path could not be opened again (logged once)

  const RunWatcherOptions options_;
  const RunProbeReaders readers_;
  StageResolver* const stages_;
  std::unique_ptr<Ledger> ledger_;
  std::optional<AgentPresence> presence_;  // tells launchers an agent adds its end facts
  std::unique_ptr<DiscoveredSampler> sampler_;  // null: discovered runs are not sampled
  absl::Time next_samples_write_;
  // Guards the state below; held only by the watcher's thread and Snapshot().
  mutable std::mutex mu_;
  std::map<uint64_t, OpenRun> open_;        // by its own cgroup id (or a made-up key)
  // What the passes of each tick look at, so that a tick over thousands of quiet open runs
  // costs what changed, not a walk of open_. Keys of open runs only (EraseOpen() drops them):
  // a run is put in when it may have come to need the pass, and taken out when the pass finds
  // it does not (any more).
  std::set<uint64_t> unrecorded_;  // not recorded yet: their launcher's row is looked for
  std::set<uint64_t> removed_;     // cgroup gone, waiting for their launcher to close them
  std::set<uint64_t> launcher_runs_;  // recorded launcher runs whose cgroup lives
  std::set<uint64_t> emptied_launcher_runs_;  // of those, the ones with no task in the cgroup
  absl::flat_hash_map<std::string, absl::flat_hash_set<uint64_t>> open_by_stage_;  // exact
  // Adds the run at `key` to open_ (replacing one there) and to open_by_stage_.
  OpenRun& AddOpen(uint64_t key, OpenRun run);
  void EraseOpen(uint64_t key);
  // After the run's recorded, removed or populated changed: puts it where it may now belong.
  void Reindex(uint64_t key);
  std::map<uint64_t, uint64_t> by_cgroup_;  // cgroup id (its own, descendants) → open_ key
  struct EarlyOomKill {
    absl::Time at;
    OomVictim victim;
  };
  std::map<uint64_t, std::vector<EarlyOomKill>> early_oom_kills_;  // by victim cgroup id
  static constexpr absl::Duration kEarlyOomKillKept = absl::Seconds(10);
  // The cgroup path of each open run whose cgroup lives → open_ key: a new cgroup's run is
  // found by its ancestors' paths.
  absl::flat_hash_map<std::string, uint64_t> watched_paths_;
  uint64_t next_gone_key_ = UINT64_MAX;     // keys of runs whose cgroup went while unwatched
  uint64_t closed_since_trim_ = 0;          // runs closed since the heap was last trimmed
  uint64_t closed_at_last_tick_ = 0;        // closed_since_trim_ at the last tick
  uint64_t trims_ = 0;                      // heap trims so far
  int settle_trims_ = 0;                    // trims still due after a churn stopped
  absl::Time next_sweep_;                   // populated flips missing: the next orphan sweep
  bool sweep_due_ = true;                   // the first tick, and after lost events
  struct UnwrittenEnd {
    RunEnd end;
    bool counted = false;  // its verdict was counted when a batch that was lost wrote it
  };
  std::map<std::string, UnwrittenEnd> unwritten_ends_;  // by run id: written again each tick
  std::map<std::string, RunEnd> batch_ends_;      // written in the pass not yet committed
  mutable bool pass_failed_ = false;              // a ledger call of this pass failed
  bool ledger_batch_open_ = false;
  bool first_pass_ = true;
  bool cannot_remove_warned_ = false;
  RunsSnapshot counted_;
  std::map<std::string, std::deque<EndedRun>> recent_;  // by stage, newest first
  struct ExpectedRun {
    Stage stage;
    RunExpectation expected;
    Baseline baseline;
    std::optional<absl::Time> deadline;  // its pipeline's window end, when it has one
    bool slow = false;                   // as last told to options_.detectors.pace
  };
  std::map<uint64_t, ExpectedRun> expected_;  // by open_ key: the runs with a baseline
  // Guards the queue and the published ids; never held while calling out.
  mutable std::mutex queue_mu_;
  std::deque<std::function<void()>> queue_;
  std::map<uint64_t, std::set<uint64_t>> published_;
  std::map<uint64_t, uint64_t> published_owner_;  // a published descendant → its run's cgroup
  // Descendants read at their rmdir whose OnDescendantRmdir has not run: never published again.
  std::set<uint64_t> retired_ids_;
  std::set<uint64_t> unhandled_mkdirs_;  // cgroups whose mkdir is queued
  uint64_t queued_ = 0, done_ = 0;
  std::condition_variable wake_, drained_;
  bool stop_ = false;
  bool events_lost_ = false;
  std::thread worker_;
};

}  // namespace stagewatch
