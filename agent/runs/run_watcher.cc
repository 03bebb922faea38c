#include "runs/run_watcher.h"

#include <malloc.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cgroup/path_cache.h"
#include "log.h"
#include "runs/baseline_comparison.h"
#include "runs/orphan_runs.h"
#include "runs/pending_ends.h"
#include "runs/pipeline_run.h"
#include "runs/run_cgroup.h"
#include "runs/run_end_log.h"
#include "runs/run_id.h"
#include "runs/run_owner.h"
#include "runs/verdict.h"
#include "thread_name.h"

namespace stagewatch {
namespace {

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string Basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// bpf_ktime_get_ns() (CLOCK_MONOTONIC) of an event, as wall-clock time.
absl::Time EventTime(uint64_t monotonic_ns) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const absl::Time wall = absl::Now();
  if (monotonic_ns == 0) return wall;
  return wall - (absl::DurationFromTimespec(now) - absl::Nanoseconds(monotonic_ns));
}

}  // namespace

MemcgAtRmdir MemcgAtRmdir::Of(const cgroup_event& e) {
  MemcgAtRmdir m;
  if (e.kind != CGROUP_EVENT_RMDIR || e.memory_peak_pages == 0) return m;
  static const uint64_t page = sysconf(_SC_PAGESIZE);
  m.peak_bytes = e.memory_peak_pages * page;
  m.failcnt = e.memory_failcnt;
  m.limit_known = e.memory_max_pages > 0;
  // The kernel's "unlimited" is PAGE_COUNTER_MAX pages, above 2^62 bytes (as v1 shows it).
  if (m.limit_known && e.memory_max_pages < (uint64_t{1} << 62) / page) {
    m.limit_bytes = e.memory_max_pages * page;
  }
  return m;
}

absl::StatusOr<std::unique_ptr<RunWatcher>> RunWatcher::Start(std::unique_ptr<Ledger> ledger,
                                                              StageResolver* stages,
                                                              RunWatcherOptions options,
                                                              RunProbeReaders readers) {
  std::unique_ptr<RunWatcher> w(
      new RunWatcher(std::move(ledger), stages, std::move(options), std::move(readers)));
  if (absl::Status s = w->Recover(); !s.ok()) return s;
  absl::StatusOr<AgentPresence> presence = AgentPresence::Announce(w->ledger_->path());
  if (presence.ok()) {
    w->presence_ = *std::move(presence);
  } else {
    Log::Warn("launchers will not wait for the agent's facts of a run's end",
              {{"err", presence.status().message()}});
  }
  w->worker_ = std::thread([raw = w.get()] {
    NameThisThread("sw-runs");
    raw->Loop();
  });
  return w;
}

RunWatcher::RunWatcher(std::unique_ptr<Ledger> ledger, StageResolver* stages,
                       RunWatcherOptions options, RunProbeReaders readers)
    : options_(std::move(options)), readers_(std::move(readers)), stages_(stages),
      ledger_(std::move(ledger)) {
  if (options_.sampling) sampler_ = std::make_unique<DiscoveredSampler>(*options_.sampling);
  next_samples_write_ = absl::Now() + options_.write_samples_every;
  next_sweep_ = absl::Now() + options_.orphan_sweep;
}

RunWatcher::~RunWatcher() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  WriteSamples();  // what the sampler holds of runs still open
  RetryEnds();     // a last try: the next start closes those runs, when last known alive
  for (const auto& [id, unwritten] : unwritten_ends_) {
    Warn("stopping: a run's end is lost", id, absl::UnavailableError("the ledger did not take it"));
  }
}

absl::Status RunWatcher::Recover() {
  std::lock_guard<std::mutex> lock(mu_);
  // The newest ended runs seed stagewatch_run_info, so a restart does not blank it.
  absl::StatusOr<std::vector<RunRecord>> ended = ledger_->List({.limit = 500});
  if (!ended.ok()) return ended.status();
  for (auto it = ended->rbegin(); it != ended->rend(); ++it) {
    if (!it->end) continue;
    SeeStage(it->start.stage, it->start.pipeline);
    std::deque<EndedRun>& q = recent_[it->start.stage];
    q.push_front({it->start.id, it->start.stage, it->start.pipeline, it->start.pipeline_run,
                  std::string(VerdictName(JudgeRun(*it, options_.runs).kind)), it->end->end});
    while (q.size() > static_cast<size_t>(options_.runs.info_per_stage)) q.pop_back();
  }
  absl::StatusOr<std::vector<RunRecord>> open =
      ledger_->List({.open_only = true, .limit = 1 << 30});
  if (!open.ok()) return open.status();
  std::vector<uint64_t> launched;  // launcher runs whose cgroup lives
  for (RunRecord& r : *open) {
    SeeStage(r.start.stage, r.start.pipeline);
    OpenRun run{.start = r.start, .recorded = true};
    std::optional<uint64_t> id = CgroupIdOfDirectory(options_.key_root + r.start.cgroup_path);
    if (id) {
      run.cgroup_id = *id;
      run.ids.insert(*id);
      by_cgroup_[*id] = *id;
      watched_paths_[run.start.cgroup_path] = *id;
      PublishIds(run);
    } else {
      run.removed = true;  // its cgroup went while no agent watched
    }
    const uint64_t key = id ? *id : next_gone_key_--;
    OpenRun& kept = AddOpen(key, std::move(run));
    if (!kept.removed) StartSampling(kept);
    if (!kept.removed && kept.start.source == RunSource::kLauncher) launched.push_back(key);
    if (kept.removed && !LauncherAlive(kept.start)) {
      CloseByAgent(key, LauncherRunEnd(kept), false);
    }
  }
  // Runs whose launcher died while no agent watched, their command ended since: closed now,
  // ended when last known alive. Those with a task left are watched on.
  for (uint64_t key : launched) {
    OpenRun& run = open_.at(key);
    absl::StatusOr<std::unique_ptr<RunCgroup>> cgroup =
        RunCgroup::Adopt(options_.layout, run.start.cgroup_path);
    run.populated = !cgroup.ok() || !(*cgroup)->HoldsNoTask();
    Reindex(key);
    if (!run.populated) CloseIfOrphan(key, false);
  }
  Log::Info("runs", {{"ledger", ledger_->path()}, {"open", absl::StrCat(open_.size())}});
  return absl::OkStatus();
}

std::optional<Stage> RunWatcher::RunStage(const std::string& path) {
  if (path.size() < 2 || Parent(path) == "/") return std::nullopt;
  const Stage stage = stages_->Resolve(path, /*memoise=*/false);
  if (stage.name == kUnattributedStage) return std::nullopt;
  const std::string parent = Parent(path);
  if (stages_->Resolve(parent).name != stage.name) return std::nullopt;  // a stage's top
  if (stages_->Resolve(Parent(parent)).name == stage.name) return std::nullopt;  // deeper
  return stage;
}

void RunWatcher::OnCgroupEvent(const cgroup_event& event) {
  const size_t len = strnlen(event.path, sizeof(event.path));
  std::string path(event.path, len);
  if (path.empty() || path[0] != '/') path = "/" + path;
  const uint64_t id = event.cgroup_id;
  if (event.kind == CGROUP_EVENT_RMDIR) {
    std::optional<std::set<uint64_t>> ids;
    std::optional<uint64_t> owner;  // when `id` is a run's descendant
    bool early = false;             // its mkdir is still queued
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      if (auto found = published_.find(id); found != published_.end()) {
        ids = found->second;
      } else if (auto up = published_owner_.find(id); up != published_owner_.end()) {
        // Read now and never again: the run's end read must not count it twice.
        owner = up->second;
        published_.at(*owner).erase(id);
        published_owner_.erase(up);
        retired_ids_.insert(id);
      } else {
        early = unhandled_mkdirs_.contains(id);
      }
    }
    if (owner) {
      Queue([this, owner = *owner, id, readings = ReadAtEnd({id}, event.at_ns)] {
        OnDescendantRmdir(owner, id, readings);
      });
      return;
    }
    std::optional<RunEndReadings> readings;
    if (ids) readings = ReadAtEnd(*ids, event.at_ns);
    // Whatever it turns out to be once its mkdir is handled, read now: the trackers may forget
    // it before then.
    if (early) readings = ReadAtEnd({id}, event.at_ns);
    Queue([this, id, readings, early, memcg = MemcgAtRmdir::Of(event)] {
      if (early) OnEarlyRmdir(id, *readings, memcg);
      else OnRmdir(id, readings, memcg);
    });
  } else if (event.kind == CGROUP_EVENT_POPULATED || event.kind == CGROUP_EVENT_UNPOPULATED) {
    const bool populated = event.kind == CGROUP_EVENT_POPULATED;
    Queue([this, id, populated, at = EventTime(event.at_ns)] { OnPopulated(id, populated, at); });
  } else if (event.kind == CGROUP_EVENT_MKDIR && len < sizeof(event.path) - 1) {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      unhandled_mkdirs_.insert(id);
    }
    Queue([this, id, path, seen = absl::Now()] {
      OnMkdir(id, path, seen);
      std::lock_guard<std::mutex> lock(queue_mu_);
      unhandled_mkdirs_.erase(id);
    });
  }
}

void RunWatcher::OnEventsLost() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    events_lost_ = true;
  }
  wake_.notify_all();
}

RunEndReadings RunWatcher::ReadAtEnd(const std::set<uint64_t>& ids,
                                     uint64_t settled_ns) const {
  RunEndReadings r;
  const RunProbeReaders& read = readers_;
  if (read.run_queue_wait_seconds) r.run_queue_wait_seconds = read.run_queue_wait_seconds(ids);
  if (read.run_queue_throttled_seconds) {
    r.run_queue_throttled_seconds = read.run_queue_throttled_seconds(ids);
  }
  if (read.reclaim_stall_seconds) r.reclaim_stall_seconds = read.reclaim_stall_seconds(ids);
  if (read.preemptions) r.preemptions = read.preemptions(ids, settled_ns);
  if (read.migrations) r.migrations = read.migrations(ids);
  if (read.cpu_seconds_by_node) r.cpu_seconds_by_node = read.cpu_seconds_by_node(ids);
  return r;
}

RunEndReadings RunWatcher::ReadRun(const OpenRun& run) const {
  RunEndReadings r = run.retired;
  AddReadings(r, ReadAtEnd(run.ids));
  return r;
}

void RunWatcher::Queue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    queue_.push_back(std::move(task));
    queued_++;
  }
  wake_.notify_all();
}

void RunWatcher::Flush() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  const uint64_t target = queued_;
  drained_.wait(lock, [&] { return done_ >= target || stop_; });
}

void RunWatcher::PublishIds(const OpenRun& run) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  std::set<uint64_t>& ids = published_[run.cgroup_id];
  for (uint64_t id : run.ids) {
    if (retired_ids_.contains(id) || !ids.insert(id).second || id == run.cgroup_id) continue;
    published_owner_[id] = run.cgroup_id;
  }
}

void RunWatcher::Unpublish(const OpenRun& run) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  for (uint64_t id : run.ids) published_owner_.erase(id);
  published_.erase(run.cgroup_id);
}

void RunWatcher::OnMkdir(uint64_t id, const std::string& path, absl::Time seen) {
  // A descendant of a watched run: its ancestors are looked up, not every open run (a storm
  // of 10,000 mkdirs beside 10,000 open runs took the watcher's thread for minutes).
  for (std::string ancestor = Parent(path); ancestor != "/"; ancestor = Parent(ancestor)) {
    auto watched = watched_paths_.find(ancestor);
    if (watched == watched_paths_.end()) continue;
    OpenRun& run = open_.at(watched->second);
    run.ids.insert(id);
    by_cgroup_[id] = watched->second;
    PublishIds(run);
    AddEarlyOomKills(id);
    return;
  }
  std::optional<Stage> stage = RunStage(path);
  if (!stage) return;
  // A run found open at startup before its cgroup was made: watched from here on. Such runs
  // are removed ones (their cgroup was gone at startup).
  std::vector<uint64_t> made_again;
  for (uint64_t key : removed_) {
    const OpenRun& gone = open_.at(key);
    if (gone.cgroup_id == 0 && gone.start.cgroup_path == path) made_again.push_back(key);
  }
  for (uint64_t key : made_again) EraseOpen(key);
  SeeStage(stage->name, stage->pipeline);
  by_cgroup_[id] = id;
  watched_paths_[path] = id;
  OpenRun& run = AddOpen(id, OpenRun{
      .start = {.stage = stage->name, .pipeline = stage->pipeline,
                .pipeline_run = DiscoveredPipelineRun(options_.pipelines, stage->pipeline, seen,
                                                      options_.zone),
                .source = RunSource::kDiscovered, .cgroup_path = path, .start = seen,
                .host = HostName()},
      .cgroup_id = id,
      .ids = {id}});
  PublishIds(run);
  Record(id, false);
  AddEarlyOomKills(id);
}

RunWatcher::OpenRun& RunWatcher::AddOpen(uint64_t key, OpenRun run) {
  EraseOpen(key);
  OpenRun& kept = open_[key] = std::move(run);
  open_by_stage_[kept.start.stage].insert(key);
  Reindex(key);
  return kept;
}

void RunWatcher::EraseOpen(uint64_t key) {
  auto found = open_.find(key);
  if (found == open_.end()) return;
  if (auto stage = open_by_stage_.find(found->second.start.stage);
      stage != open_by_stage_.end()) {
    stage->second.erase(key);
    if (stage->second.empty()) open_by_stage_.erase(stage);
  }
  unrecorded_.erase(key);
  removed_.erase(key);
  launcher_runs_.erase(key);
  emptied_launcher_runs_.erase(key);
  open_.erase(found);
}

void RunWatcher::Reindex(uint64_t key) {
  const OpenRun& run = open_.at(key);
  const auto put = [key](std::set<uint64_t>& set, bool in) {
    if (in) {
      set.insert(key);
    } else {
      set.erase(key);
    }
  };
  put(unrecorded_, !run.recorded && !run.removed);
  put(removed_, run.removed);
  const bool launcher = run.recorded && !run.removed && run.start.source == RunSource::kLauncher;
  put(launcher_runs_, launcher);
  put(emptied_launcher_runs_, launcher && !run.populated);
}

bool RunWatcher::OfThisCgroup(const RunRecord& row, absl::Time seen) {
  if (!row.end) return true;
  return row.start.source == RunSource::kLauncher && row.end->end >= seen - kLateEvents;
}

bool RunWatcher::Record(uint64_t key, bool now_or_never) {
  OpenRun& run = open_.at(key);
  if (run.recorded) return true;
  const std::string& path = run.start.cgroup_path;
  absl::StatusOr<std::optional<RunRecord>> launched = ledger_->FindNewestByCgroup(path);
  if (!launched.ok()) {
    Warn("cannot look a run up", path, launched.status());
    return false;
  }
  if (*launched && OfThisCgroup(**launched, run.start.start)) {
    if ((*launched)->start.stage != run.start.stage) {  // its launcher named its stage
      auto stage = open_by_stage_.find(run.start.stage);
      stage->second.erase(key);
      if (stage->second.empty()) open_by_stage_.erase(stage);
      open_by_stage_[(*launched)->start.stage].insert(key);
    }
    run.start = (*launched)->start;
  } else if (now_or_never || absl::Now() - run.start.start >= kGrace) {
    RunStart& start = run.start;
    start.id = Basename(path);
    absl::StatusOr<std::optional<RunRecord>> taken = ledger_->Get(start.id);
    if (!CheckRunId(start.id).ok() || !taken.ok() || *taken) start.id = NewRunId(start.start);
    // Its limits as its files hold them now: the row has them if it dies before a sample.
    if (options_.sampling) start.limits = ReadRunLimits(options_.sampling->layout, path);
    if (absl::Status s = ledger_->BeginRun(start); !s.ok()) {
      Warn("cannot record a run", start.id, s);
      return false;
    }
    Log::Info("run started", {{"run_id", start.id}, {"pipeline_stage", start.stage},
                              {"cgroup", path}, {"source", "discovered"}});
  } else {
    return false;
  }
  run.recorded = true;
  Reindex(key);
  if (!run.removed) {
    StartSampling(run);
    Expect(run.cgroup_id, run);
  }
  AddFacts(run, std::exchange(run.buffered, {}));
  return true;
}

void RunWatcher::AddFacts(OpenRun& run, const AgentFacts& facts) {
  if (!run.recorded) {
    AgentFacts& b = run.buffered;
    if (facts.oom_kills_userspace) {
      b.oom_kills_userspace = b.oom_kills_userspace.value_or(0) + *facts.oom_kills_userspace;
    }
    b.oom_victims.insert(b.oom_victims.end(), facts.oom_victims.begin(), facts.oom_victims.end());
    b.anomalies.insert(b.anomalies.end(), facts.anomalies.begin(), facts.anomalies.end());
    return;
  }
  const bool any = facts.oom_kills_userspace || !facts.oom_victims.empty() ||
                   facts.reclaim_stall_seconds || facts.run_queue_wait_seconds ||
                   facts.preemptors_observed || facts.anomalies_observed ||
                   !facts.anomalies.empty();
  if (!any) return;
  if (absl::Status s = ledger_->AddAgentFacts(run.start.id, facts); !s.ok()) {
    Warn("cannot add the agent's facts to a run", run.start.id, s);
  }
}

void RunWatcher::StartSampling(const OpenRun& run) {
  // A launcher samples its own runs.
  if (!sampler_ || run.start.source != RunSource::kDiscovered) return;
  sampler_->Add(run.start.id, run.start.cgroup_path, run.cgroup_id, absl::Now());
}

void RunWatcher::WriteSamples() {
  if (!sampler_) return;
  if (absl::Status s = ledger_->AddSamplesOfRuns(sampler_->TakePoints()); !s.ok()) {
    Warn("cannot add samples to the runs", "", s);
  }
}

void RunWatcher::OnRmdir(uint64_t id, std::optional<RunEndReadings> readings,
                         MemcgAtRmdir memcg) {
  auto found = by_cgroup_.find(id);
  // No run's own cgroup (a descendant's rmdir is read as it comes: OnDescendantRmdir).
  if (found == by_cgroup_.end() || found->second != id) return;
  OpenRun& run = open_.at(id);
  Unpublish(run);
  // Born and gone before the first event was handled: read now, what is left.
  if (readings) {
    AddReadings(*readings, run.retired);
  } else {
    readings = ReadRun(run);
  }
  const bool recorded = Record(id, true);
  AddFacts(run, EndFacts(*readings));
  for (uint64_t cg : run.ids) by_cgroup_.erase(cg);
  Unwatch(id, run);
  if (!recorded) {
    EraseOpen(id);
  } else if (run.start.source == RunSource::kDiscovered) {
    CloseByAgent(id, absl::Now(), true, memcg);  // a discovered run ends with its cgroup
  } else if (!LauncherAlive(run.start)) {
    CloseByAgent(id, LauncherRunEnd(run), true, memcg);
  }
}

void RunWatcher::OnEarlyRmdir(uint64_t id, const RunEndReadings& readings, MemcgAtRmdir memcg) {
  auto found = by_cgroup_.find(id);
  if (found == by_cgroup_.end() || found->second == id) {
    OnRmdir(id, readings, memcg);  // a run's own cgroup, or no run's
    return;
  }
  const uint64_t owner = found->second;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);  // published by its mkdir a moment ago
    published_owner_.erase(id);
    if (auto ids = published_.find(owner); ids != published_.end()) ids->second.erase(id);
  }
  OnDescendantRmdir(owner, id, readings);
}

void RunWatcher::OnDescendantRmdir(uint64_t owner, uint64_t id,
                                   const RunEndReadings& readings) {
  auto found = open_.find(owner);
  if (found != open_.end() && found->second.ids.erase(id)) {
    AddReadings(found->second.retired, readings);
    by_cgroup_.erase(id);
  }
  std::lock_guard<std::mutex> lock(queue_mu_);
  retired_ids_.erase(id);
}

AgentFacts RunWatcher::EndFacts(const RunEndReadings& readings) const {
  AgentFacts facts;
  if (options_.oom_observed) facts.oom_kills_userspace = 0;
  facts.run_queue_wait_seconds = readings.run_queue_wait_seconds;
  facts.run_queue_throttled_seconds = readings.run_queue_throttled_seconds;
  facts.reclaim_stall_seconds = readings.reclaim_stall_seconds;
  if (readings.preemptions && readers_.stage_of) {
    for (const auto& [preempting, n] : *readings.preemptions) {
      facts.preemptors[readers_.stage_of(preempting)] += n;
    }
    facts.preemptors_observed = true;
  }
  if (readings.migrations) {
    facts.node_migrations = readings.migrations->first;
    facts.cross_node_migrations = readings.migrations->second;
  }
  if (readings.cpu_seconds_by_node) facts.cpu_seconds_by_node = *readings.cpu_seconds_by_node;
  facts.anomalies_observed = true;  // the anomaly engine watched its stage throughout
  facts.saw_end = true;
  return facts;
}

void RunWatcher::Unwatch(uint64_t key, OpenRun& run) {
  auto watched = watched_paths_.find(run.start.cgroup_path);
  if (watched != watched_paths_.end() && watched->second == key) watched_paths_.erase(watched);
  run.removed = true;
  Reindex(key);
}

void RunWatcher::Count(uint64_t key) {
  OpenRun& run = open_.at(key);
  const std::string id = run.start.id;
  Unwatch(key, run);
  Unexpect(key);
  EraseOpen(key);
  closed_since_trim_++;
  CountEnded(id);
}

void RunWatcher::CountEnded(const std::string& id) {
  absl::StatusOr<std::optional<RunRecord>> r = ledger_->Get(id);
  if (!r.ok() || !*r || !(*r)->end) return;
  const Verdict judged = JudgeRun(**r, options_.runs);
  LogRunFinished(**r, judged);
  const std::string verdict(VerdictName(judged.kind));
  const RunStart& s = (*r)->start;
  std::optional<Slowdown> slowdown;
  if (absl::StatusOr<BaselineComparison> c = CompareRunWithBaseline(*ledger_, **r, options_.runs);
      c.ok()) {
    slowdown = c->slowdown;
  }
  AddEndedRun(counted_, **r, verdict, slowdown);
  std::deque<EndedRun>& q = recent_[s.stage];
  q.push_front({s.id, s.stage, s.pipeline, s.pipeline_run, verdict, (*r)->end->end});
  while (q.size() > static_cast<size_t>(options_.runs.info_per_stage)) q.pop_back();
}

void RunWatcher::SeeStage(const std::string& stage, const std::string& pipeline) {
  stagewatch::SeeStage(counted_, stage, pipeline);
}

void RunWatcher::ForgetForgottenStages() {
  const uint64_t version = stages_->stages_version();
  if (version == stages_version_ && !forget_waits_) return;
  stages_version_ = version;
  forget_waits_ = false;
  std::set<std::string> known;
  for (const Stage& stage : stages_->KnownStages()) known.insert(stage.name);
  std::vector<std::string> forgotten;
  for (const std::string& name : named_stages_) {
    if (!known.contains(name)) forgotten.push_back(name);
  }
  if (!forgotten.empty()) {
    for (const std::string& name : forgotten) {
      if (open_by_stage_.contains(name)) {  // its last runs close first, then it goes
        forget_waits_ = true;
        continue;
      }
      ForgetStage(counted_, name);
      recent_.erase(name);
      named_stages_.erase(name);
    }
  }
  named_stages_.insert(known.begin(), known.end());
}

void RunWatcher::OnOomKill(uint64_t victim_cgroup_id, const OomVictim& victim) {
  Queue([this, victim_cgroup_id, victim] { AddOomKill(victim_cgroup_id, victim); });
}

void RunWatcher::AddOomKill(uint64_t victim_cgroup_id, const OomVictim& victim) {
  auto found = by_cgroup_.find(victim_cgroup_id);
  if (found == by_cgroup_.end()) {
    KeepEarlyOomKill(victim_cgroup_id, victim);
    return;
  }
  OpenRun& run = open_.at(found->second);
  AgentFacts facts;
  facts.oom_victims.push_back(victim);
  if (victim.kind == "userspace") {
    facts.oom_kills_userspace = 1;
  } else {
    run.kernel_kills++;
  }
  AddFacts(run, facts);
}

void RunWatcher::KeepEarlyOomKill(uint64_t victim_cgroup_id, const OomVictim& victim) {
  std::vector<EarlyOomKill>& kills = early_oom_kills_[victim_cgroup_id];
  // A cgroup killed in over and over, no run's: the last few will do.
  constexpr size_t kKeptPerCgroup = 16;
  if (kills.size() == kKeptPerCgroup) kills.erase(kills.begin());
  kills.push_back({absl::Now(), victim});
}

void RunWatcher::AddEarlyOomKills(uint64_t cgroup_id) {
  auto found = early_oom_kills_.find(cgroup_id);
  if (found == early_oom_kills_.end()) return;
  const std::vector<EarlyOomKill> kills = std::move(found->second);
  early_oom_kills_.erase(found);
  for (const EarlyOomKill& kill : kills) AddOomKill(cgroup_id, kill.victim);
}

void RunWatcher::DropStaleEarlyOomKills(absl::Time now) {
  for (auto it = early_oom_kills_.begin(); it != early_oom_kills_.end();) {
    std::erase_if(it->second,
                  [now](const EarlyOomKill& k) { return now - k.at > kEarlyOomKillKept; });
    it = it->second.empty() ? early_oom_kills_.erase(it) : std::next(it);
  }
}

void RunWatcher::OnAnomaly(const std::string& stage, const RunAnomaly& anomaly) {
  Queue([this, stage, anomaly] { AddAnomaly(stage, anomaly); });
}

void RunWatcher::AddAnomaly(const std::string& stage, const RunAnomaly& anomaly) {
  auto of_stage = open_by_stage_.find(stage);
  if (of_stage == open_by_stage_.end()) return;
  for (uint64_t key : of_stage->second) {
    OpenRun& run = open_.at(key);
    if (run.removed) continue;
    AgentFacts facts;
    facts.anomalies.push_back(anomaly);
    AddFacts(run, facts);
  }
}

void RunWatcher::Tick() {
  // The runs waiting for a row or a close only: a tick over quiet runs does not walk open_.
  for (uint64_t key : std::vector<uint64_t>(unrecorded_.begin(), unrecorded_.end())) {
    Record(key, false);
  }
  for (uint64_t key : std::vector<uint64_t>(removed_.begin(), removed_.end())) {
    absl::StatusOr<std::optional<RunRecord>> r = ledger_->Get(open_.at(key).start.id);
    if (!r.ok()) continue;
    if (!*r || (*r)->end) {
      Count(key);  // its launcher closed it
    } else if (!LauncherAlive(open_.at(key).start)) {
      OpenRun& run = open_.at(key);
      // cgroup_id 0: its cgroup went while no agent watched
      CloseByAgent(key, LauncherRunEnd(run), run.cgroup_id != 0);
    }
  }
  LookForOrphans();
  DropStaleEarlyOomKills(absl::Now());
  JudgePaces(absl::Now());
  ForgetForgottenStages();
  // After the records above, so a run recorded now gets its first sample now.
  const absl::Time now = absl::Now();
  if (sampler_) sampler_->Sample(now);
  const bool write = now >= next_samples_write_;
  if (write) {
    WriteSamples();
    next_samples_write_ = now + options_.write_samples_every;
  }
  // What closed runs freed (their rows' SQLite work, events, samples) is spread over the
  // threads' malloc arenas, which keep it; give it back to the OS at each samples write while
  // runs close, at the first tick none closed in (a churn has stopped), and at the next
  // kSettleTrims samples writes: the last pass's queue, and the paths and names the path cache
  // and the namer keep for a churn's late events (10 s, two scrapes), are freed after it.
  const bool quiet = closed_since_trim_ == closed_at_last_tick_;
  if (closed_since_trim_ > 0 && (write || quiet)) {
    malloc_trim(0);
    closed_since_trim_ = 0;
    settle_trims_ = kSettleTrims;
    trims_++;
  } else if (write && settle_trims_ > 0) {
    malloc_trim(0);
    settle_trims_--;
    trims_++;
  }
  closed_at_last_tick_ = closed_since_trim_;
}

void RunWatcher::Loop() {
  std::unique_lock<std::mutex> queue_lock(queue_mu_);
  absl::Time next_tick = absl::Now() + options_.tick;
  // Stopping, it still handles what is queued: runs born and gone in a churn just before a
  // shutdown are in the ledger.
  while (!stop_ || !queue_.empty()) {
    if (queue_.empty()) {
      wake_.wait_for(queue_lock, absl::ToChronoMilliseconds(next_tick - absl::Now()));
    }
    if (stop_ && queue_.empty()) break;
    std::deque<std::function<void()>> tasks;
    tasks.swap(queue_);
    const bool tick = absl::Now() >= next_tick;
    queue_lock.unlock();
    {
      std::lock_guard<std::mutex> lock(mu_);
      KeepLedgerCurrent();
      // One ledger transaction (one fsync) for the whole pass: a run born and gone before the
      // watcher got to it is begun, given its facts and ended in it, and a churn's runs share it.
      // A long queue is cut into transactions of kTasksPerBatch, so a launcher's write waits
      // for the ledger's lock a fraction of a second at most.
      const bool batch = !tasks.empty() || tick;
      if (batch) BeginBatch();
      for (size_t i = 0; i < tasks.size(); i++) {
        if (i > 0 && i % kTasksPerBatch == 0) {
          CommitBatch();
          BeginBatch();
        }
        tasks[i]();
      }
      if (tick) Tick();
      if (batch) CommitBatch();
      if (tick) AfterPass(std::exchange(first_pass_, false));
    }
    if (tick) next_tick = absl::Now() + options_.tick;
    queue_lock.lock();
    done_ += tasks.size();
    drained_.notify_all();
  }
}

void RunWatcher::BeginBatch() {
  // Unbatched, each write is its own transaction: slower, nothing lost.
  absl::Status s = ledger_->BeginBatch();
  ledger_batch_open_ = s.ok();
  if (!s.ok()) Warn("cannot batch the ledger's writes", "", s);
}

void RunWatcher::CommitBatch() {
  absl::Status s = ledger_->CommitBatch();
  if (!s.ok()) {
    Warn("cannot commit a pass of the runs' writes: lost, but for the runs' ends, which are "
         "written again (the next start closes runs left open)", "", s);
  }
  ledger_batch_open_ = false;
  CheckBatchEnds(s.ok());
}

void RunWatcher::AfterPass(bool first) {
  // Unbatched: each of these rare writes is committed when it returns.
  RetryEnds();
  PendingImport imported = ImportPendingEnds(*ledger_, first);
  for (const std::string& id : imported.recorded) {
    Log::Info("run ended", {{"run_id", id}, {"closed_by", "launcher"}, {"kept_end", "true"}});
    CountEnded(id);
  }
}

RunsSnapshot RunWatcher::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  RunsSnapshot out = counted_;
  for (const auto& [stage, q] : recent_) out.recent.insert(out.recent.end(), q.begin(), q.end());
  return out;
}

RunWatcher::Held RunWatcher::held() const {
  Held h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    h.open_runs = open_.size();
    h.cgroups = by_cgroup_.size();
    h.sampled = sampler_ ? sampler_->runs() : 0;
    h.trims = trims_;
    h.settle_trims_due = settle_trims_;
  }
  std::lock_guard<std::mutex> lock(queue_mu_);
  h.published = published_.size() + published_owner_.size() + retired_ids_.size();
  h.queued = queue_.size();
  return h;
}

void RunWatcher::Warn(const std::string& what, const std::string& id,
                      const absl::Status& s) const {
  pass_failed_ = true;
  Log::Warn(what, {{"run", id}, {"err", s.message()}});
}

}  // namespace stagewatch
