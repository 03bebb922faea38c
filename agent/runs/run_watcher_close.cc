// RunWatcher's part in runs whose launcher died: a run is closed when its cgroup empties (the
// kernel's populated flip) or, where that is not seen, by a look at its launcher every few
// seconds; an end the ledger cannot take now is kept and written again each second.
#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "log.h"
#include "runs/orphan_runs.h"
#include "runs/pending_ends.h"
#include "runs/run_watcher.h"

namespace stagewatch {

void RunWatcher::OnPopulated(uint64_t id, bool populated, absl::Time at) {
  // A run's own cgroup flips with its descendants': theirs say nothing more.
  auto found = by_cgroup_.find(id);
  if (found == by_cgroup_.end() || found->second != id) return;
  OpenRun& run = open_.at(id);
  run.populated = populated;
  Reindex(id);
  run.emptied_at.reset();
  if (populated) return;
  run.emptied_at = at;
  CloseIfOrphan(id, true);
}

void RunWatcher::CloseIfOrphan(uint64_t key, bool watched) {
  OpenRun& run = open_.at(key);
  if (run.removed || run.populated || !Record(key, false) ||
      run.start.source != RunSource::kLauncher || LauncherAlive(run.start)) {
    return;
  }
  // The probes' figures of its cgroups, read before the cgroups go (as at an rmdir).
  const RunEndReadings readings = ReadRun(run);
  absl::StatusOr<OrphanEnd> orphan = FinishOrphanCgroup(options_.layout, run.start,
                                                        LauncherRunEnd(run), RunCloser::kAgent);
  if (!orphan.ok()) {
    // Its command runs on (a flip this agent missed, or a sweep): its unpopulated flip comes
    // when it ends, or the next sweep looks again. So does one whose cgroup cannot be read.
    run.populated = true;
    Reindex(key);
    if (absl::IsFailedPrecondition(orphan.status())) return;
    return Warn("cannot close a run whose launcher died", run.start.id, orphan.status());
  }
  if (!orphan->removed.ok() && !std::exchange(cannot_remove_warned_, true)) {
    Log::Warn("cannot remove the empty cgroups of a run whose launcher died (an agent whose "
              "cgroupfs is read-only never can): the next `stagewatch run` of the stage in the "
              "same parent cgroup removes them",
              {{"run", run.start.id}, {"err", orphan->removed.message()}});
  }
  if (watched) AddFacts(run, EndFacts(readings));
  const std::string id = run.start.id;
  if (WriteEnd(id, orphan->end)) {
    Log::Info("run ended", {{"run_id", id}, {"closed_by", "agent"}, {"launcher", "dead"}});
  }
  DropPendingEnd(ledger_->path(), id);  // the dead launcher's reservation
  Forget(key);
}

void RunWatcher::SweepOrphans() {
  for (uint64_t key : std::vector<uint64_t>(launcher_runs_.begin(), launcher_runs_.end())) {
    OpenRun& run = open_.at(key);
    if (LauncherAlive(run.start)) continue;
    run.populated = false;  // to be read: CloseIfOrphan finds out
    Reindex(key);
    CloseIfOrphan(key, true);
  }
}

absl::Time RunWatcher::LauncherRunEnd(const OpenRun& run) {
  if (run.emptied_at) return *run.emptied_at;
  return LastKnownAlive(*ledger_, run.start);
}

bool RunWatcher::WriteEnd(const std::string& id, const RunEnd& end) {
  absl::Status s = ledger_->EndRun(id, end);
  if (s.ok()) {
    if (ledger_batch_open_) batch_ends_[id] = end;
    return true;
  }
  if (absl::IsFailedPrecondition(s)) return false;  // its launcher closed it just before
  if (absl::IsNotFound(s)) {
    Warn("cannot close a run", id, s);
    return false;
  }
  Warn("cannot close a run: its end is kept and written again each second", id, s);
  unwritten_ends_[id] = {end};
  return false;
}

void RunWatcher::RetryEnds() {
  for (auto it = unwritten_ends_.begin(); it != unwritten_ends_.end();) {
    absl::Status s = ledger_->EndRun(it->first, it->second.end);
    if (!s.ok() && !absl::IsFailedPrecondition(s) && !absl::IsNotFound(s)) {
      ++it;
      continue;
    }
    if (s.ok()) {
      Log::Info("run ended", {{"run_id", it->first}, {"closed_by", "agent"}, {"late", "true"}});
      if (!it->second.counted) CountEnded(it->first);
    }
    it = unwritten_ends_.erase(it);
  }
}

void RunWatcher::CheckBatchEnds(bool committed) {
  // SQLite rolls a transaction back by itself on a full disk: a pass whose commit or any
  // write failed may have lost ends its writes took (they returned OK within the batch).
  if (!committed || pass_failed_) {
    for (const auto& [id, end] : batch_ends_) {
      absl::StatusOr<std::optional<RunRecord>> row = ledger_->Get(id);
      if (!row.ok() || (*row && !(*row)->end)) unwritten_ends_[id] = {end, /*counted=*/true};
    }
  }
  batch_ends_.clear();
  pass_failed_ = false;
}

void RunWatcher::Forget(uint64_t key) {
  OpenRun& run = open_.at(key);
  Unpublish(run);
  for (uint64_t cg : run.ids) by_cgroup_.erase(cg);
  Count(key);
}

void RunWatcher::CloseByAgent(uint64_t key, absl::Time end_time, bool saw_end,
                              const MemcgAtRmdir& memcg) {
  OpenRun& run = open_.at(key);
  RunEnd end{.end = std::max(end_time, run.start.start), .closed_by = RunCloser::kAgent};
  const std::string id = run.start.id;
  if (sampler_) {
    std::vector<RunSample> points;
    if (std::optional<CgroupFacts> sampled = sampler_->Remove(id, points)) end.facts = *sampled;
    if (absl::Status s = ledger_->AddSamples(id, points); !s.ok()) {
      Warn("cannot add samples to a run", id, s);
    }
  }
  // The kernel's own figures at rmdir are exact; the last sample's may be a sample old.
  if (memcg.peak_bytes) end.facts.memory_peak_bytes = memcg.peak_bytes;
  if (memcg.failcnt) end.facts.memory_failcnt = memcg.failcnt;
  if (memcg.limit_known) end.facts.memory_limit_bytes = memcg.limit_bytes;
  if (options_.oom_observed && saw_end) end.facts.oom_kills_kernel = run.kernel_kills;
  if (WriteEnd(id, end)) Log::Info("run ended", {{"run_id", id}, {"closed_by", "agent"}});
  if (run.start.source == RunSource::kLauncher) DropPendingEnd(ledger_->path(), id);
  Count(key);  // closed now, or by its launcher just before
}

void RunWatcher::LookForOrphans() {
  const absl::Time now = absl::Now();
  bool lost = false;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    lost = std::exchange(events_lost_, false);
  }
  // Once after the start (flips may have come before the watcher was connected), after lost
  // events, and where no flips come, every orphan_sweep.
  if (sweep_due_ || lost || (!options_.populated_events && now >= next_sweep_)) {
    sweep_due_ = false;
    next_sweep_ = now + options_.orphan_sweep;
    return SweepOrphans();
  }
  if (!options_.populated_events) return;
  // Only launcher runs without a task in their cgroup, not yet or any more: a launcher dies
  // before its command joins the cgroup, or after its command ended and before it closed the
  // run. A moment in a run's life; the runs with tasks wait for their unpopulated flip.
  const std::vector<uint64_t> empty(emptied_launcher_runs_.begin(),
                                    emptied_launcher_runs_.end());
  for (uint64_t key : empty) CloseIfOrphan(key, true);
}

}  // namespace stagewatch
