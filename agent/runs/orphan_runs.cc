#include "runs/orphan_runs.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cgroup/cgroup_subtree.h"
#include "runs/agent_presence.h"
#include "runs/pending_ends.h"
#include "runs/run_cgroup.h"
#include "runs/run_facts.h"
#include "runs/run_id.h"
#include "units.h"

namespace stagewatch {
namespace {

// A wall clock stepped forward after the run began makes its start look earlier than it was,
// and a live launcher younger than it: within this margin it is still taken for the launcher.
// A pid reused within a second of a run's start by a process started after it is all it misses.
constexpr absl::Duration kStartMargin = absl::Seconds(1);

absl::Duration SinceBoot() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return absl::DurationFromTimespec(ts);
}

// Whether the run can be closed now: its launcher is dead, and its cgroup is gone or empty.
bool Closable(const CgroupLayout& layout, const RunStart& start) {
  if (start.source != RunSource::kLauncher || LauncherAlive(start)) return false;
  absl::StatusOr<std::unique_ptr<RunCgroup>> cgroup = RunCgroup::Adopt(layout, start.cgroup_path);
  if (absl::IsNotFound(cgroup.status())) return true;
  return cgroup.ok() && (*cgroup)->HoldsNoTask();
}

// Closes one run of a dead launcher: true when it is ended now.
bool CloseOrphan(Ledger& ledger, const CgroupLayout& layout, const RunStart& start,
                 std::ostream& log) {
  if (!Closable(layout, start)) return false;
  absl::StatusOr<OrphanEnd> orphan =
      FinishOrphanCgroup(layout, start, LastKnownAlive(ledger, start), RunCloser::kLauncher);
  if (!orphan.ok()) return false;
  const RunEnd& end = orphan->end;
  absl::Status s = ledger.EndRun(start.id, end);
  if (absl::IsFailedPrecondition(s) || absl::IsNotFound(s)) return false;  // closed meanwhile
  if (!s.ok()) {
    absl::StatusOr<std::string> kept = KeepPendingEnd(ledger.path(), start.id, end);
    log << absl::StrFormat("stagewatch: run %s of a dead launcher ended, but %s; %s\n", start.id,
                           s.message(),
                           kept.ok() ? absl::StrCat("its end is kept in ", *kept,
                                                    " until the ledger takes it")
                                     : absl::StrCat("its end is lost: ", kept.status().message()));
    return false;
  }
  DropPendingEnd(ledger.path(), start.id);
  log << absl::StrFormat(
      "stagewatch: closed run %s of stage %s: its launcher (pid %d) died and its cgroup is "
      "empty; ended %s, when last known alive (wall %s)\n",
      start.id, start.stage, start.launcher_pid.value_or(0), FormatRfc3339(end.end),
      FormatSeconds(absl::ToDoubleSeconds(end.end - start.start)));
  if (!orphan->removed.ok()) log << "stagewatch: " << orphan->removed.message() << "\n";
  return true;
}

std::vector<RunRecord> OpenLauncherRuns(Ledger& ledger, const std::string& stage) {
  absl::StatusOr<std::vector<RunRecord>> open =
      ledger.List({.stage = stage, .open_only = true, .limit = 1 << 30});
  if (!open.ok()) return {};
  std::erase_if(*open, [](const RunRecord& r) { return r.start.source != RunSource::kLauncher; });
  return *std::move(open);
}

}  // namespace

bool LauncherAlive(const RunStart& start, const std::string& proc) {
  if (!start.launcher_pid || *start.launcher_pid <= 0) return false;
  std::ifstream stat(absl::StrCat(proc, "/", *start.launcher_pid, "/stat"));
  std::string line;
  if (!std::getline(stat, line)) return false;
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so fields count from the
  // last ')'. A zombie launcher is dead: its parent has not reaped it yet.
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  std::istringstream fields(line.substr(paren + 2));
  std::string state;
  fields >> state;
  if (state == "Z" || state == "X") return false;
  // starttime, field 22: clock ticks after boot (CLOCK_BOOTTIME).
  std::string skipped;
  for (int field = 4; field < 22; ++field) fields >> skipped;
  uint64_t ticks = 0;
  if (!(fields >> ticks)) return true;  // unreadable: do not take a live launcher for dead
  const absl::Duration started = absl::Seconds(double(ticks) / double(sysconf(_SC_CLK_TCK)));
  const absl::Duration run_started = SinceBoot() - (absl::Now() - start.start);
  return started <= run_started + kStartMargin;
}

absl::Time LastKnownAlive(Ledger& ledger, const RunStart& start) {
  absl::Time last = start.start;
  if (absl::StatusOr<std::vector<RunSample>> points = ledger.Samples(start.id);
      points.ok() && !points->empty()) {
    last = std::max(last, points->back().at);
  }
  return std::min(last, std::max(start.start, absl::Now()));
}

absl::StatusOr<OrphanEnd> FinishOrphanCgroup(const CgroupLayout& layout, const RunStart& start,
                                             absl::Time end, RunCloser closer) {
  OrphanEnd out;
  out.end.end = std::max(end, start.start);
  out.end.closed_by = closer;
  absl::StatusOr<std::unique_ptr<RunCgroup>> cgroup = RunCgroup::Adopt(layout, start.cgroup_path);
  if (absl::IsNotFound(cgroup.status())) return out;  // removed by someone else already
  if (!cgroup.ok()) return cgroup.status();
  if (!(*cgroup)->HoldsNoTask()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("a task is left in the cgroup of run %s", start.id));
  }
  std::vector<std::string> problems;  // a figure that cannot be read stays unknown
  out.end.facts = ReadCgroupFacts((*cgroup)->reader_layout(), problems);
  out.removed = (*cgroup)->Remove();
  return out;
}

int CloseRunsOfDeadLaunchers(Ledger& ledger, const CgroupLayout& layout, const std::string& stage,
                             std::ostream& log) {
  int closed = 0;
  for (const RunRecord& r : OpenLauncherRuns(ledger, stage)) {
    closed += CloseOrphan(ledger, layout, r.start, log);
  }
  return closed;
}

void TidyStageCgroups(Ledger& ledger, const CgroupLayout& layout, const std::string& stage_path,
                      const std::string& own_id, std::ostream& log) {
  const bool agent = AgentPresence::Announced(ledger.path());
  const std::string stage_dir = KeyedDir(layout, stage_path);
  std::vector<std::string> ids;
  for (const std::string& child : ChildCgroups(stage_dir)) {
    std::string id = child.substr(stage_dir.size() + 1);
    if (id != own_id && CheckRunId(id).ok()) ids.push_back(std::move(id));
  }
  for (const std::string& id : ids) {
    // Most are runs going on: one read of their cgroup.procs tells, before the ledger is asked.
    absl::StatusOr<std::vector<pid_t>> tasks = ProcessesInSubtree(stage_dir + "/" + id);
    if (!tasks.ok() || !tasks->empty()) continue;
    absl::StatusOr<std::optional<RunRecord>> row = ledger.Get(id);
    // Only a launcher's cgroups, of the run the ledger knows at that path (not a cgroup a
    // launcher made a moment ago and has not recorded yet, nor a job scheduler's).
    if (!row.ok() || !*row) continue;
    const RunStart& start = (*row)->start;
    if (start.source != RunSource::kLauncher || start.cgroup_path != stage_path + "/" + id) {
      continue;
    }
    if (!(*row)->end) {
      if (!agent) CloseOrphan(ledger, layout, start, log);  // an agent closes it, exactly
      continue;
    }
    absl::StatusOr<std::unique_ptr<RunCgroup>> left = RunCgroup::Adopt(layout, start.cgroup_path);
    if (left.ok() && (*left)->HoldsNoTask()) (*left)->Remove().IgnoreError();
  }
}

void TidyLedgerForListing(const std::string& ledger_path, const RunsConfig& judging,
                          const std::string& stage,
                          std::ostream& log) {
  std::error_code ec;
  if (!std::filesystem::exists(ledger_path, ec)) return;
  // Read first: a listing opens the ledger for writing only when there is something to write.
  const bool kept = HasKeptEnds(ledger_path);
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  bool orphans = false;
  if (layout.ok() && !AgentPresence::Announced(ledger_path)) {
    if (absl::StatusOr<std::unique_ptr<Ledger>> reader = Ledger::OpenForReading(ledger_path, judging);
        reader.ok()) {
      for (const RunRecord& r : OpenLauncherRuns(**reader, stage)) {
        orphans = orphans || Closable(*layout, r.start);
      }
    }
  }
  if (!kept && !orphans) return;
  absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_path, judging);
  if (!ledger.ok()) return;  // this user may only read it: list as it is
  const PendingImport imported = ImportPendingEnds(**ledger, true);
  for (const std::string& id : imported.recorded) {
    log << absl::StrFormat("stagewatch: recorded the end of run %s, kept while the ledger could "
                           "not take it\n", id);
  }
  for (const std::string& problem : imported.problems) {
    log << "stagewatch: a kept run end is not recorded yet: " << problem << "\n";
  }
  if (orphans) CloseRunsOfDeadLaunchers(**ledger, *layout, stage, log);
}

}  // namespace stagewatch
