// A run's verdict: was it interrupted, degraded by the machine, clean, or not watched closely
// enough to say? Computed from the ledger's facts and the `runs:` thresholds whenever asked.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/runs_config.h"
#include "runs/run_record.h"

namespace stagewatch {

enum class VerdictKind { kRunning, kClean, kUnobserved, kDegraded, kInterrupted };
std::string_view VerdictName(VerdictKind kind);  // "running", "clean", ...
std::optional<VerdictKind> ParseVerdictName(std::string_view name);  // VerdictName's inverse
// Whether the verdict can change with the `runs:` thresholds: running and interrupted never do.
bool VerdictDependsOnThresholds(VerdictKind kind);

// The version of JudgeRun's rules. Raise it with any change that can give a row another
// verdict: the ledger stores verdicts with it, and rejudges rows stored under another.
inline constexpr int kVerdictRules = 2;
// What a stored verdict was judged with: the rules and the thresholds, exact ("2:0.05/0.05/0.5":
// kVerdictRules, then degraded_fraction/normal_run_queue_wait_fraction/remote_memory_threshold).
std::string VerdictJudgedWith(const RunsConfig& config);

struct VerdictReason {
  std::string cause;              // "oom_kill", "signal", "cpu_throttling", ...
  std::optional<double> seconds;  // the figure, for time lost
  // In [0, 1]: of the run's wall time, or for figures summed over its tasks (run-queue wait,
  // reclaim stalls) of its busy task time (BusyTaskSeconds); for remote_memory, of its memory.
  std::optional<double> share;
  std::string text;               // names the figure and its share
};

struct Verdict {
  VerdictKind kind = VerdictKind::kRunning;
  std::vector<VerdictReason> reasons;  // interruptions first, then degradations, largest first
  std::vector<std::string> unobserved;  // facts only an agent sees that no agent added
  double degraded_fraction = 0;         // the threshold it was judged by
  std::string Summary() const;          // one line: "interrupted: killed by ..."
};

Verdict JudgeRun(const RunRecord& run, const RunsConfig& config);

// The run-queue wait of a run's tasks that was not throttling, in [0, the wait]: the wait less
// the part the sched probe saw its CPU group throttled, or, where the probe could not tell
// (kernels before 6.6, the wakeup-hook source), less cpu.stat's throttled time, which counts a
// throttled CPU once however many of the run's tasks waited on it. nullopt: wait not observed.
std::optional<double> QueuedNotThrottledSeconds(const RunRecord& run);

// The time a run's tasks were busy, summed over them: the largest of its wall time, its CPU
// seconds plus its run-queue wait, and its reclaim stalls. A run with one task busy at a time
// has its wall time; one with k busy at once on average, k times it.
double BusyTaskSeconds(const RunRecord& run, double wall);

// "SIGKILL", or "signal 70" for one without a name.
std::string SignalName(int signal);

}  // namespace stagewatch
