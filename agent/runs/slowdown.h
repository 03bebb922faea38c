// How much longer a run took than its baseline, and why: its excess wall time split by cause.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runs/baseline.h"
#include "runs/run_record.h"

namespace stagewatch {

// The causes of excess wall time, in the order they are shown; kUnexplained last.
enum class SlowdownCause {
  kCpuWait,         // waited for a CPU beyond the baseline's wait (throttling not counted)
  kCpuThrottling,   // held back by its own CPU limit beyond the baseline's
  kMemoryReclaim,   // stalled reclaiming memory beyond the baseline's
  kMemoryPressure,  // memory pressure beyond the baseline's, past the reclaim stalls
  kIoPressure,      // I/O pressure beyond the baseline's
  kCpuWork,         // more CPU time than the baseline's, over the run's parallelism
  kUnexplained,     // the excess less the causes above; negative when they add up to more
};
inline constexpr int kSlowdownCauses = 7;
std::string_view SlowdownCauseName(SlowdownCause cause);  // "cpu_wait", ... (metric labels)
std::string_view SlowdownCauseText(SlowdownCause cause);  // "waiting for CPU", ...

struct Slowdown {
  double wall_seconds = 0;
  double baseline_wall_seconds = 0;
  double ratio = 0;           // wall over the baseline's
  double excess_seconds = 0;  // wall less the baseline's; negative for a faster run
  double parallelism = 1;     // the run's tasks busy at once, on average (>= 1)
  // Seconds of wall time per cause (SlowdownCause order). Every cause but kUnexplained is >= 0,
  // and the parts sum to excess_seconds.
  std::array<double, kSlowdownCauses> seconds{};
  std::vector<std::string> unobserved;  // causes not measured in the run or its baseline
  std::vector<std::pair<std::string, uint64_t>> preemptors;  // most first

  double Of(SlowdownCause cause) const { return seconds[static_cast<int>(cause)]; }
  // "1.9× its usual 41 s; of the 37 s extra, 24 s waiting for CPU (preempted by train
  // 12,400×), 6 s memory reclaim, 2 s unexplained"
  std::string Text() const;
};

// `run` (ended) against `baseline`.
Slowdown SlowdownOf(const RunRecord& run, const Baseline& baseline);

}  // namespace stagewatch
