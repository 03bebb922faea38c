#include "runs/verdict.h"

#include <string.h>

#include <algorithm>
#include <charconv>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runs/run_placement.h"
#include "units.h"

namespace stagewatch {
namespace {

void AddInterruptions(const RunRecord& run, std::vector<VerdictReason>& out) {
  const RunEnd& end = *run.end;
  const uint64_t kernel = end.facts.oom_kills_kernel.value_or(0);
  const uint64_t userspace = run.agent.oom_kills_userspace.value_or(0);
  if (kernel > 0) {
    std::string limit = end.facts.memory_limit_bytes
                            ? absl::StrFormat(" at its %s memory limit",
                                              FormatBytes(*end.facts.memory_limit_bytes))
                            : "";
    std::string peak = end.facts.memory_peak_bytes
                           ? absl::StrFormat(", peak %s", FormatBytes(*end.facts.memory_peak_bytes))
                           : "";
    out.push_back({"oom_kill", std::nullopt, std::nullopt,
                   absl::StrFormat("killed by the kernel OOM killer (%d OOM kill%s%s%s)", kernel,
                                   kernel == 1 ? "" : "s", limit, peak)});
  }
  if (userspace > 0) {
    std::string killer;
    for (const OomVictim& v : run.agent.oom_victims) {
      if (v.kind == "userspace" && !v.killer.empty()) killer = " by " + v.killer;
    }
    out.push_back({"userspace_oom_kill", std::nullopt, std::nullopt,
                   absl::StrFormat("killed by a user-space OOM killer%s (%d kill%s)", killer,
                                   userspace, userspace == 1 ? "" : "s")});
  }
  if (end.signal && !end.signal_requested && kernel == 0 && userspace == 0) {
    out.push_back({"signal", std::nullopt, std::nullopt,
                   absl::StrFormat("killed by %s, which was not sent through the launcher",
                                   SignalName(*end.signal))});
  }
}

// The wall time throttling held the run back. cpu.stat's throttled time sums the run's CPUs, so
// on several CPUs it can exceed the wall time; a throttling lasts one CFS period at most.
std::optional<double> ThrottledWallSeconds(const CgroupFacts& f, double wall) {
  if (f.cpu_throttled_wall_seconds) return f.cpu_throttled_wall_seconds;
  if (!f.cpu_throttled_seconds) return std::nullopt;
  return std::min(*f.cpu_throttled_seconds, wall);
}

}  // namespace

std::optional<double> QueuedNotThrottledSeconds(const RunRecord& run) {
  const std::optional<double> wait = run.agent.run_queue_wait_seconds;
  if (!wait) return std::nullopt;
  std::optional<double> throttled = run.agent.run_queue_throttled_seconds;
  if (!throttled && run.end) throttled = run.end->facts.cpu_throttled_seconds;
  return std::clamp(*wait - throttled.value_or(0), 0.0, *wait);
}

double BusyTaskSeconds(const RunRecord& run, double wall) {
  const double cpu = run.end ? run.end->facts.cpu_seconds.value_or(0) : 0;
  const double wait = run.agent.run_queue_wait_seconds.value_or(0);
  return std::max({wall, cpu + wait, run.agent.reclaim_stall_seconds.value_or(0)});
}

namespace {

void AddDegradations(const RunRecord& run, const RunsConfig& config, double wall,
                     std::vector<VerdictReason>& out) {
  if (wall <= 0) return;
  const CgroupFacts& f = run.end->facts;
  // Throttled waits are the cpu_throttling cause's; what is left is the run queue's.
  std::optional<double> queued_beyond_normal = QueuedNotThrottledSeconds(run);
  if (queued_beyond_normal) {
    const double normal = config.normal_run_queue_wait_fraction * f.cpu_seconds.value_or(0);
    queued_beyond_normal = std::max(0.0, *queued_beyond_normal - normal);
  }
  // Figures of wall time are shares of it; figures summed over the run's tasks are shares of
  // its busy task time (BusyTaskSeconds), which is the wall time when one task is busy at once.
  const double busy = BusyTaskSeconds(run, wall);
  struct Cause {
    const char* name;
    const char* what;
    std::optional<double> seconds;
    bool task_summed;
  };
  const Cause causes[] = {
      {"cpu_throttling", "CPU throttled", ThrottledWallSeconds(f, wall), false},
      {"cpu_pressure", "stalled on CPU (pressure)", f.cpu_pressure_seconds, false},
      {"memory_pressure", "stalled on memory (pressure)", f.memory_pressure_seconds, false},
      {"reclaim_stalls", "stalled in memory reclaim", run.agent.reclaim_stall_seconds, true},
      {"run_queue_wait", "waited on the run queue beyond normal", queued_beyond_normal, true},
      {"near_memory_limit", "sat near its memory limit", f.near_limit_seconds, false},
  };
  std::vector<VerdictReason> found;
  for (const Cause& c : causes) {
    if (!c.seconds) continue;
    const bool over_tasks = c.task_summed && busy > wall;
    // Sampled and kernel figures may overrun the ledger's wall time by a sample or a period.
    const double share = std::clamp(*c.seconds / (over_tasks ? busy : wall), 0.0, 1.0);
    if (share < config.degraded_fraction) continue;
    const std::string of =
        over_tasks ? absl::StrFormat("%.0f%% of %s busy task time in %s wall time", share * 100,
                                     FormatSeconds(busy), FormatSeconds(wall))
                   : absl::StrFormat("%.0f%% of %s wall time", share * 100, FormatSeconds(wall));
    found.push_back({c.name, *c.seconds, share,
                     absl::StrFormat("%s %s%s (%s)", c.what, FormatSeconds(*c.seconds),
                                     over_tasks ? " summed over its tasks" : "", of)});
  }
  std::stable_sort(found.begin(), found.end(), [](const VerdictReason& a, const VerdictReason& b) {
    return *a.share > *b.share;
  });
  out.insert(out.end(), found.begin(), found.end());
  // Not time lost but where its memory sat: a share of its memory, after the time lost.
  if (std::optional<double> remote = RunRemoteMemoryShare(run);
      remote && *remote > config.remote_memory_threshold) {
    out.push_back({"remote_memory", std::nullopt, *remote,
                   absl::StrFormat("remote memory: %.0f%% of its memory on nodes other than "
                                   "where it ran", *remote * 100)});
  }
}

std::vector<std::string> Unobserved(const AgentFacts& a) {
  std::vector<std::string> missing;
  if (!a.run_queue_wait_seconds) missing.push_back("run_queue_wait_seconds");
  if (!a.reclaim_stall_seconds) missing.push_back("reclaim_stall_seconds");
  if (!a.oom_kills_userspace) missing.push_back("oom_kills_userspace");
  if (!a.preemptors_observed) missing.push_back("preemptors");
  if (!a.anomalies_observed) missing.push_back("anomalies");
  return missing;
}

}  // namespace

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev ? absl::StrFormat("SIG%s", abbrev) : absl::StrFormat("signal %d", signal);
}

std::string_view VerdictName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kRunning: return "running";
    case VerdictKind::kClean: return "clean";
    case VerdictKind::kUnobserved: return "unobserved";
    case VerdictKind::kDegraded: return "degraded";
    case VerdictKind::kInterrupted: return "interrupted";
  }
  return "unknown";
}

std::optional<VerdictKind> ParseVerdictName(std::string_view name) {
  for (VerdictKind k : {VerdictKind::kRunning, VerdictKind::kClean, VerdictKind::kUnobserved,
                        VerdictKind::kDegraded, VerdictKind::kInterrupted}) {
    if (VerdictName(k) == name) return k;
  }
  return std::nullopt;
}

bool VerdictDependsOnThresholds(VerdictKind kind) {
  // JudgeRun: not ended is running; an interruption (AddInterruptions) reads no threshold.
  return kind != VerdictKind::kRunning && kind != VerdictKind::kInterrupted;
}

std::string VerdictJudgedWith(const RunsConfig& config) {
  // The shortest text that reads back as the same double: equal text, equal thresholds.
  return absl::StrFormat("%d:%s/%s/%s", kVerdictRules, FormatExact(config.degraded_fraction),
                         FormatExact(config.normal_run_queue_wait_fraction),
                         FormatExact(config.remote_memory_threshold));
}

Verdict JudgeRun(const RunRecord& run, const RunsConfig& config) {
  Verdict v;
  v.degraded_fraction = config.degraded_fraction;
  if (!run.end) return v;
  v.unobserved = Unobserved(run.agent);
  AddInterruptions(run, v.reasons);
  const bool interrupted = !v.reasons.empty();
  const size_t before = v.reasons.size();
  AddDegradations(run, config, absl::ToDoubleSeconds(*run.Wall()), v.reasons);
  if (interrupted) {
    v.kind = VerdictKind::kInterrupted;
  } else if (v.reasons.size() > before) {
    v.kind = VerdictKind::kDegraded;
  } else {
    v.kind = v.unobserved.empty() ? VerdictKind::kClean : VerdictKind::kUnobserved;
  }
  return v;
}

std::string Verdict::Summary() const {
  const std::string name(VerdictName(kind));
  switch (kind) {
    case VerdictKind::kRunning:
      return "running: not ended yet";
    case VerdictKind::kClean:
      return absl::StrFormat("clean: no OOM kill, no unrequested signal, and no cause took %.0f%% "
                             "of its wall time", degraded_fraction * 100);
    case VerdictKind::kUnobserved:
      return absl::StrFormat("unobserved: nothing wrong in what cgroupfs told, but no agent "
                             "watched it (unknown: %s)", absl::StrJoin(unobserved, ", "));
    case VerdictKind::kDegraded:
    case VerdictKind::kInterrupted: {
      std::vector<std::string> texts;
      for (const VerdictReason& r : reasons) texts.push_back(r.text);
      return absl::StrFormat("%s: %s", name, absl::StrJoin(texts, "; "));
    }
  }
  return name;
}

}  // namespace stagewatch
