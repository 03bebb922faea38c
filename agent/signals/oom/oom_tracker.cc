#include "signals/oom/oom_tracker.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cgroup/proc_cgroup.h"
#include "log.h"

namespace stagewatch {
namespace {

std::string_view Comm(const char (&comm)[OOM_COMM_LEN]) {
  return std::string_view(comm, strnlen(comm, OOM_COMM_LEN));
}

// bpf_ktime_get_ns() is CLOCK_MONOTONIC; turn it into wall-clock seconds.
double EventUnixSeconds(uint64_t monotonic_ns) {
  timespec mono{}, real{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  const double now_mono = mono.tv_sec + mono.tv_nsec * 1e-9;
  const double now_real = real.tv_sec + real.tv_nsec * 1e-9;
  return now_real - (now_mono - monotonic_ns * 1e-9);
}

// Neither exited (a zombie or dead) nor gone.
bool ProcessAlive(int pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z' &&
         line[paren + 2] != 'X';
}

const char* KindName(uint16_t kind) { return kind == OOM_KIND_USERSPACE ? "userspace" : "kernel"; }

}  // namespace

OomTracker::OomTracker(CgroupPathCache* paths, StageResolver* stages, cgroup_key_hierarchy key)
    : paths_(paths), stages_(stages), key_(key) {}

std::string OomTracker::VictimCgroupPath(const oom_event& event) {
  uint64_t id = event.victim_cgroup_id;
  if (event.flags & OOM_FLAG_VICTIM_CGROUP_UNKNOWN) {
    // Only a pid: /proc names the cgroup while the victim lives. Once it has exited, /proc
    // shows the root instead, so take the cgroup of the task that ran into the limit: a
    // cgroup's OOM killer picks its victim inside that cgroup.
    if (ProcessAlive(event.victim_pid)) {
      absl::StatusOr<std::string> path = ReadProcCgroup(event.victim_pid, key_);
      if (path.ok()) return *path;
    }
    id = event.trigger_cgroup_id;
  }
  return paths_->LookupNow(id).value_or("");
}

std::pair<Stage, std::string> OomTracker::OnEvent(const oom_event& event) {
  const std::string cgroup = VictimCgroupPath(event);
  const Stage stage = cgroup.empty() ? UnattributedStage() : stages_->Resolve(cgroup);
  const double when = EventUnixSeconds(event.timestamp_ns);
  {
    absl::MutexLock lock(&mu_);
    OomStageTotals& t = totals_[stage.id];
    if (event.kind == OOM_KIND_USERSPACE) {
      t.userspace_kills++;
    } else {
      t.kernel_kills++;
      t.recent_kernel_kills.insert(
          std::upper_bound(t.recent_kernel_kills.begin(), t.recent_kernel_kills.end(), when), when);
      if (t.recent_kernel_kills.size() > kRecentKills) t.recent_kernel_kills.pop_front();
    }
    t.last_kill_unix_seconds = std::max(t.last_kill_unix_seconds, when);
    if (cgroup.empty()) unknown_cgroups_++;
  }

  static const uint64_t page = sysconf(_SC_PAGESIZE);
  const bool figures = !(event.flags & OOM_FLAG_NO_MEMORY_FIGURES);
  Log::Warn("oom kill", {
      {"pipeline_stage", stage.name},
      {"kind", KindName(event.kind)},
      {"victim_pid", event.victim_pid},
      {"victim_comm", Comm(event.victim_comm)},
      {"victim_cgroup", cgroup.empty() ? std::string("unknown") : cgroup},
      {"anon_rss_bytes", figures ? event.anon_rss_pages * page : 0},
      {"file_rss_bytes", figures ? event.file_rss_pages * page : 0},
      {"shmem_rss_bytes", figures ? event.shmem_rss_pages * page : 0},
      {"total_vm_bytes", figures ? event.total_vm_pages * page : 0},
      {"oom_score_adj", event.oom_score_adj},
      {"trigger_pid", event.trigger_pid},
      {"trigger_comm", Comm(event.trigger_comm)},
  });
  std::string summary = absl::StrFormat(
      "%s (pid %d) was OOM-killed (%s) in stage %s", std::string(Comm(event.victim_comm)),
      event.victim_pid, KindName(event.kind), stage.name);
  if (figures) {
    absl::StrAppendFormat(&summary, " with %.1f MiB anonymous and %.1f MiB file memory",
                          event.anon_rss_pages * page / 1048576.0,
                          event.file_rss_pages * page / 1048576.0);
  }
  return {stage, summary};
}

std::map<StageId, OomStageTotals> OomTracker::Totals() const {
  absl::MutexLock lock(&mu_);
  return totals_;
}

void OomTracker::KeepStages(const absl::flat_hash_set<StageId>& known) {
  absl::MutexLock lock(&mu_);
  std::erase_if(totals_, [&known](const auto& t) { return !known.contains(t.first); });
}

uint64_t OomTracker::unknown_cgroups() const {
  absl::MutexLock lock(&mu_);
  return unknown_cgroups_;
}

}  // namespace stagewatch
