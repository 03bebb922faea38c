// The agent samples the runs no launcher started (discovered runs) as the launcher samples its
// own: memory usage against the limit, CPU time and PSI totals, for the same mean, p95,
// near-limit seconds, CPU seconds, throttling and time series. Bounded for hosts with
// thousands of them: at most `reads_per_second` cgroup file reads a second, spread round-robin
// over the open runs (each at most every `interval`), with files kept open. The point a sample
// adds to its run's series counts as one read (kPointCost): it costs about as much as a
// read (its ledger insert), and an idle run's sample reads only one or two files.
//
// A run whose cgroup has a limit of its own is a limit domain of the memory sampler, which
// reads its memory files (usage, limits, peak, failcnt) already: usage, peak and failcnt come
// from the sampler's latest snapshot, so that no read budget goes on files read already. What
// the snapshot does not hold (CPU, PSI, the CPU limits, v1's soft limit; on v1 also failcnt,
// which tells a removed cgroup) is read here, and memory-max too with the other limits (the
// snapshot's may be samples old, and a job scheduler resizes a job without its usage moving):
// both through the same reader, cgroup/memory_stats.h.
#pragma once

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "cgroup/layout.h"
#include "cgroup/open_cgroup_files.h"
#include "sampler/sample_snapshot.h"
#include "runs/run_cgroup_files.h"
#include "runs/run_facts.h"
#include "runs/run_record.h"

namespace stagewatch {

inline constexpr int kPointCost = 1;  // in reads
// The samples the open runs' series keep for their p95s, shared (4 MiB): each run keeps its
// share, between kMinSeriesSamples and a launched run's UsageSeries::kMaxSamples. Without it
// 10,000 long-lived runs would come to keep 4,096 each (640 MiB).
inline constexpr size_t kSeriesSamples = 262'144;
inline constexpr size_t kMinSeriesSamples = 64;

struct DiscoveredSamplerOptions {
  CgroupLayout layout;
  absl::Duration interval = absl::Seconds(1);  // memory.sample_interval
  double near_limit_fraction = 0.9;            // memory.near_limit_fraction
  int reads_per_second = 100;                  // runs.sample_reads_per_second
  // The memory sampler's latest snapshot (empty, or returning null: none). A run's memory
  // comes from it when its cgroup is a domain there, read that sample, and the snapshot was
  // taken after the run's previous sample; otherwise the run's own files are read.
  std::function<std::shared_ptr<const Snapshot>()> latest_snapshot;
  size_t series_samples = kSeriesSamples;  // shared by the runs' series (smaller in tests)
};

// Not thread-safe: the run watcher's thread calls it.
class DiscoveredSampler {
 public:
  explicit DiscoveredSampler(DiscoveredSamplerOptions options);

  // `cgroup_id`: the run's cgroup's, to find it among the snapshot's domains (0: never found).
  void Add(const std::string& run_id, const std::string& cgroup_path, uint64_t cgroup_id,
           absl::Time now);
  // Samples the runs whose turn it is, within the reads accrued since the last call (at most
  // a second's worth).
  void Sample(absl::Time now);
  // The points sampled since the last call, by run: written to the ledger in one transaction.
  std::map<std::string, std::vector<RunSample>> TakePoints();
  // Stops sampling the run. Its facts as of its last sample (nullopt if it never got one),
  // and in `points` its points not taken yet.
  std::optional<CgroupFacts> Remove(const std::string& run_id, std::vector<RunSample>& points);

  size_t runs() const { return runs_.size(); }
  // The samples each run's series keeps for its p95s, as many runs as are open now share them.
  size_t series_samples() const;
  // The samples every run's series keeps now, summed (a pass over the runs: for benches and
  // tests).
  size_t kept_samples() const;
  uint64_t reads() const { return reads_; }  // file reads so far
  // Samples whose memory came from the memory sampler's snapshot.
  uint64_t from_snapshot() const { return from_snapshot_; }

 private:
  struct Sampled;
  using Runs = std::map<std::string, Sampled>;
  struct Sampled {
    std::unique_ptr<RunCgroupFiles> files;
    uint64_t cgroup_id = 0;
    RunUsage usage;
    std::optional<RunCgroupReading> last;
    NumaMemory memory_by_node_peak;  // the reading's that held the most
    absl::Time next;  // due at
    std::vector<RunSample> points;
    std::list<Runs::iterator>::iterator turn;  // its place in turn_
  };

  // The run's memory in the latest snapshot, if it may be used for a sample of it now.
  std::optional<SampledMemory> FromSnapshot(const Sampled& run) const;
  // Asks for the latest snapshot and copies its domains when it is a new one.
  void RefreshSnapshot();

  const DiscoveredSamplerOptions options_;
  OpenCgroupFiles open_files_;  // every run's; before runs_, whose files it holds
  Runs runs_;
  // Round-robin order of the runs: a turn moves a node to the back, and a run leaves from its
  // place, with no lookup, copy or allocation (10,000 runs close at once in a removal storm).
  std::list<Runs::iterator> turn_;
  // Runs with points not taken yet: TakePoints() looks at these, not every run.
  absl::flat_hash_set<std::string> with_points_;
  double credit_ = 0;             // reads (and points) that may be made now
  std::optional<absl::Time> last_sample_;
  uint64_t reads_ = 0, from_snapshot_ = 0;
  // The latest snapshot's sampled domains, copied (the snapshot is not held: the sampler's
  // thread, which made it, frees it), by cgroup id, and when it was taken.
  std::vector<std::pair<uint64_t, SampledMemory>> domains_;
  std::optional<absl::Time> snapshot_taken_;
};

}  // namespace stagewatch
