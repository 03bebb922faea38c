#include "runs/ended_run_totals.h"

#include <algorithm>

#include "runs/verdict.h"

namespace stagewatch {

void SeeStage(RunsSnapshot& totals, const std::string& stage, const std::string& pipeline) {
  for (VerdictKind k : {VerdictKind::kClean, VerdictKind::kUnobserved, VerdictKind::kDegraded,
                        VerdictKind::kInterrupted}) {
    totals.ended.try_emplace({stage, pipeline, std::string(VerdictName(k))}, 0);
  }
  totals.durations.try_emplace({stage, pipeline});
  for (int i = 0; i < kSlowdownCauses; ++i) {
    totals.lost_seconds.try_emplace(
        {stage, pipeline, std::string(SlowdownCauseName(SlowdownCause(i)))}, 0.0);
  }
}

void ForgetStage(RunsSnapshot& totals, const std::string& stage) {
  auto of_stage = [&stage](const auto& entry) { return std::get<0>(entry.first) == stage; };
  std::erase_if(totals.ended, of_stage);
  std::erase_if(totals.durations, of_stage);
  std::erase_if(totals.lost_seconds, of_stage);
  std::erase_if(totals.recent, [&stage](const EndedRun& r) { return r.stage == stage; });
}

void AddEndedRun(RunsSnapshot& totals, const RunRecord& run, const std::string& verdict,
                 const std::optional<Slowdown>& slowdown) {
  const RunStart& s = run.start;
  SeeStage(totals, s.stage, s.pipeline);
  totals.ended[{s.stage, s.pipeline, verdict}]++;
  if (std::optional<absl::Duration> wall = run.Wall()) {
    const double seconds = std::max(0.0, absl::ToDoubleSeconds(*wall));
    RunDurations& d = totals.durations[{s.stage, s.pipeline}];
    const auto edge =
        std::lower_bound(kRunDurationEdges.begin(), kRunDurationEdges.end(), seconds);
    if (edge == kRunDurationEdges.end()) {
      d.above_last_edge++;
    } else {
      d.in_bucket[edge - kRunDurationEdges.begin()]++;
    }
    d.sum_seconds += seconds;
  }
  if (!slowdown) return;
  for (int i = 0; i < kSlowdownCauses; ++i) {
    totals.lost_seconds[{s.stage, s.pipeline, std::string(SlowdownCauseName(SlowdownCause(i)))}] +=
        std::max(0.0, slowdown->seconds[i]);
  }
}

}  // namespace stagewatch
