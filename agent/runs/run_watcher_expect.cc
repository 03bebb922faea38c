// The run watcher's part in judging runs while they run: each recorded run's baseline, looked up
// once, goes to the detectors (options_.detectors); each tick, the runs with one are judged
// for pace (detectors/run_pace.h), and a slow run's cause so far is split as a finished run's
// excess is (runs/slowdown.h), from what the probes and its cgroup hold now.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cgroup/cpu_stats.h"
#include "detectors/run_pace.h"
#include "log.h"
#include "runs/pipeline_run.h"
#include "runs/run_expectation_of.h"
#include "runs/run_watcher.h"
#include "runs/slowdown.h"

namespace stagewatch {

void RunWatcher::Expect(uint64_t key, const OpenRun& run) {
  const RunDetectorHooks& hooks = options_.detectors;
  if (!hooks.expect || key == 0 || expected_.contains(key)) return;
  const std::optional<Stage> stage = RunStage(run.start.cgroup_path);
  if (!stage) return;
  absl::StatusOr<std::vector<RunRecord>> candidates =
      ledger_->CleanRunsBefore(run.start, options_.runs.baseline_runs);
  if (!candidates.ok()) {
    Warn("cannot look a run's baseline up", run.start.id, candidates.status());
    return;
  }
  std::optional<Baseline> baseline = BaselineOf(*candidates);
  if (!baseline) return;
  absl::StatusOr<RunExpectation> expected =
      ExpectationOf(*ledger_, run.start, *candidates, *baseline);
  if (!expected.ok()) {
    Warn("cannot look a run's baseline up", run.start.id, expected.status());
    return;
  }
  ExpectedRun& e = expected_[key];
  e.stage = *stage;
  e.expected = *std::move(expected);
  e.baseline = *std::move(baseline);
  if (auto p = options_.pipelines.find(run.start.pipeline);
      p != options_.pipelines.end() && p->second.deadline) {
    e.deadline = NightDeadline(run.start.start, p->second.night_starts, *p->second.deadline,
                               options_.zone);
  }
  hooks.expect(key, e.expected);
}

void RunWatcher::Unexpect(uint64_t key) {
  if (expected_.erase(key) == 0) return;
  if (options_.detectors.forget) options_.detectors.forget(key);
}

namespace {

// "validate run r-7 is at 1.62× its usual 41 s; of the 25 s extra, 22 s waiting for CPU
// (preempted by train 12,400×), ...; 55% of its time so far went to waiting for CPU behind train"
std::string SlowSoFar(const RunStart& start, const Slowdown& slowdown, const PaceVerdict& pace,
                      std::optional<absl::Time> deadline, absl::TimeZone zone) {
  std::string out = absl::StrCat(start.stage, " run ", start.id, " is at ", slowdown.Text());
  int largest = -1;
  for (int i = 0; i < kSlowdownCauses - 1; ++i) {
    if (slowdown.seconds[i] > 0 && (largest < 0 || slowdown.seconds[i] > slowdown.seconds[largest])) {
      largest = i;
    }
  }
  const double share =
      largest >= 0 && slowdown.wall_seconds > 0 ? slowdown.seconds[largest] / slowdown.wall_seconds
                                                : 0;
  if (share >= 0.01) {
    absl::StrAppendFormat(&out, "; %.0f%% of its time so far went to %s", 100 * share,
                          SlowdownCauseText(SlowdownCause(largest)));
    if (SlowdownCause(largest) == SlowdownCause::kCpuWait && !slowdown.preemptors.empty()) {
      absl::StrAppend(&out, " behind ", slowdown.preemptors.front().first);
    }
  }
  if (pace.late && deadline) {
    absl::StrAppend(&out, "; at its pace it ends about ",
                    absl::FormatTime("%H:%M", pace.projected_end, zone), ", after pipeline ",
                    start.pipeline, "'s deadline ", absl::FormatTime("%H:%M", *deadline, zone));
  }
  return out;
}

}  // namespace

void RunWatcher::JudgePaces(absl::Time now) {
  const RunDetectorHooks& hooks = options_.detectors;
  if (!hooks.pace) return;
  for (auto& [key, e] : expected_) {
    auto open = open_.find(key);
    if (open == open_.end()) continue;
    const OpenRun& run = open->second;
    RunPace pace{.age_seconds = absl::ToDoubleSeconds(now - run.start.start)};
    absl::StatusOr<CpuCgroupStats> cpu = ReadCpuStats(options_.layout, run.start.cgroup_path);
    if (cpu.ok() && cpu->usage_ns) pace.cpu_seconds = *cpu->usage_ns * 1e-9;
    const PaceVerdict verdict = JudgePace(hooks.slow_run, e.expected, pace, e.deadline);
    if (!verdict.active() && !e.slow) continue;
    DetectorState state;
    if (verdict.active()) {
      // The run so far, as if it ended now: the same split its end will get.
      RunRecord so_far{.start = run.start};
      so_far.end = RunEnd{.end = now};
      so_far.end->facts.cpu_seconds = pace.cpu_seconds;
      so_far.agent = EndFacts(ReadRun(run));
      state = {true, SlowSoFar(run.start, SlowdownOf(so_far, e.baseline), verdict, e.deadline,
                               options_.zone)};
    }
    e.slow = state.active;
    hooks.pace(e.stage, now, key, state);
  }
}

}  // namespace stagewatch
