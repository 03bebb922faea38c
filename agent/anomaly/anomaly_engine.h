// Runs the detectors per stage on the samples the agent already collects, and reports each
// change of state once.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "anomaly/anomaly_rule.h"
#include "config/anomaly_config.h"
#include "detectors/limit_eta.h"
#include "detectors/memory_climb.h"
#include "detectors/pressure_spike.h"
#include "detectors/rate_baseline.h"
#include "detectors/run_expectation.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

struct AnomalyChange {
  Stage stage;
  AnomalyRule rule;
  bool active;
  std::string summary;  // figures, for logs and pages
  absl::Time at;
};

// One limit domain of a stage in a memory sample: a top cgroup, or a cgroup beneath it with a
// limit of its own. Each domain has its own climb and limit-ETA detectors.
struct MemoryDomainSample {
  uint64_t id = 0;    // the cgroup id
  std::string path;   // named in the anomaly's summary; empty: not named
  bool fresh = true;  // false: not read this time, its detectors wait for the next sample
  double working_set = 0;       // bytes
  std::optional<double> limit;  // bytes; none when the domain has no limit
};

struct StageAnomalies {
  std::array<bool, kAnomalyRules> active{};
  std::array<uint64_t, kAnomalyRules> fired{};  // times each became active
  std::optional<double> limit_eta_seconds;  // the smallest of the stage's domains
};

// A stage's run-queue waits so far, cumulative: the histogram's slots with `above` last
// (bpf/histogram.h), their sum, and of them new tasks' first waits (fork to first slice).
struct RunqWaits {
  std::vector<uint64_t> slots;
  uint64_t sum_ns = 0;
  uint64_t first_waits = 0, first_wait_ns = 0;
};

// What a cpu_starvation summary adds: of the waits between two readings, how many (and how
// much of their time) were new tasks' first.
std::string FirstWaitsNote(const RunqWaits& older, const RunqWaits& newer);

// Thread-safe. Feed each series in time order; `on_change` runs on the feeding thread,
// outside the engine's lock.
class AnomalyEngine {
 public:
  AnomalyEngine(AnomalyConfig config, std::function<void(const AnomalyChange&)> on_change);

  // Every limit domain the stage has now; memory PSI "full" total in seconds, when known. A
  // domain missing from `domains` is gone, and its detectors with it. The stage's climb and
  // limit-ETA anomalies are active while any of its domains' are.
  void OnMemory(const Stage& stage, absl::Time t, const std::vector<MemoryDomainSample>& domains,
                std::optional<double> psi_full_seconds);
  // A stage of one domain: working set and limit in bytes.
  void OnMemory(const Stage& stage, absl::Time t, double working_set,
                std::optional<double> limit, std::optional<double> psi_full_seconds) {
    OnMemory(stage, t, {{.working_set = working_set, .limit = limit}}, psi_full_seconds);
  }
  void OnMajorFaults(const Stage& stage, absl::Time t, uint64_t total);
  // p99 over runq_window is derived; a firing's summary says how much of the window's waiting
  // was new tasks' first waits (a fork storm's start-up) rather than waits behind running work.
  void OnRunqLatency(const Stage& stage, absl::Time t, RunqWaits waits);
  void OnOomKill(const Stage& stage, absl::Time t, const std::string& summary);
  // A run's cgroup `cgroup_id` (a limit domain of its stage, or not yet) is judged against its
  // stage's usual runs from now on (LimitEtaDetector::Expect); ForgetRun when it has ended.
  void ExpectRun(uint64_t cgroup_id, const RunExpectation& expected);
  void ForgetRun(uint64_t cgroup_id);
  // Whether the run of `cgroup_id` is slower than usual (detectors/run_pace.h), with the cause
  // so far; the stage's slow-run anomaly is active while any of its runs' is.
  void OnRunPace(const Stage& stage, absl::Time t, uint64_t cgroup_id,
                 const DetectorState& state);
  // Ends OOM-kill anomalies whose hold has passed.
  void Tick(absl::Time t);
  // Drops the state of stages not in `known` (forgotten ones).
  void KeepStages(const absl::flat_hash_set<StageId>& known);

  std::map<StageId, StageAnomalies> Snapshot() const;
  const AnomalyConfig& config() const { return config_; }

 private:
  struct DomainDetectors {
    std::string path;
    MemoryClimbDetector climb;
    LimitEtaDetector eta;
  };
  struct PerStage {
    Stage stage;
    std::map<uint64_t, DomainDetectors> domains;  // by cgroup id
    PressureSpikeDetector pressure;
    RateBaselineDetector faults;
    RateBaselineDetector starvation;
    std::deque<std::pair<absl::Time, RunqWaits>> runq;  // cumulative, in window
    std::optional<absl::Time> oom_until;
    std::map<uint64_t, std::string> slow_runs;  // by cgroup id: the summary of each slow run
    StageAnomalies view;
  };

  PerStage& StageState(const Stage& stage) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the detector's state and queues a change when it flipped.
  void Note(PerStage& s, AnomalyRule rule, bool enabled, const DetectorState& state,
            absl::Time t, std::vector<AnomalyChange>* changes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stage's state of a memory rule: active while a domain's is, with that domain's summary.
  static DetectorState AnyDomain(const PerStage& s, AnomalyRule rule);
  static DetectorState AnySlowRun(const PerStage& s);
  void Report(const std::vector<AnomalyChange>& changes);

  const AnomalyConfig config_;
  const std::function<void(const AnomalyChange&)> on_change_;
  mutable absl::Mutex mu_;
  std::map<StageId, PerStage> stages_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, RunExpectation> expected_ ABSL_GUARDED_BY(mu_);  // by run cgroup id
};

// The q-quantile's bucket edge, in seconds, of the increase between two cumulative log2
// histograms (bpf/histogram.h slots); none when nothing was added.
std::optional<double> Log2HistogramQuantile(const std::vector<uint64_t>& older,
                                            const std::vector<uint64_t>& newer, double q);

}  // namespace stagewatch
