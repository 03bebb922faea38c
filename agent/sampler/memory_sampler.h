// Samples each stage's memory, pressure, CPU and the kernel's OOM kill counts on a fixed
// interval into one immutable Snapshot that the memory, sched and oom collectors and the
// anomaly detectors all adapt: the one reader of stages' memory limits, PSI, cpu.stat and
// oom_kill counts (runs read their own cgroups' through the same readers, cgroup/*, and take
// a limit domain's memory from this snapshot), and the only caller of the namer's refresh (its
// walks, without lifecycle events), all on the sampler's one thread.
//
// A stage's limit lives on whichever of its cgroups has one (often a run's cgroup beneath an
// unlimited stage top). Each such cgroup, and each top, is a limit domain, watched on its own;
// per stage the snapshot shows the domain closest to its limit, time any domain was near its
// limit, and events summed so that each is counted once, and lists every domain for the
// detectors, which follow each on its own.
//
// Which cgroups have a limit is learnt as they are born (the cgroup events put them in the
// namer's live set), not by reading every cgroup's limit file every sample: the per-sample
// cost follows the domains, not the whole tree.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/layout.h"
#include "cgroup/limit_watch.h"
#include "cgroup/cpu_stats.h"
#include "cgroup/cpuset.h"
#include "cgroup/memory_stats.h"
#include "cgroup/open_cgroup_files.h"
#include "cgroup/psi.h"
#include "config/config.h"
#include "sampler/memcg_faults.h"
#include "sampler/sample_snapshot.h"
#include "stages/stage_counters.h"

namespace stagewatch {

// How the sampler reads cgroupfs; tests count the reads. A field left empty reads cgroupfs.
struct SampleReader {
  // Everything about one cgroup's memory, from files kept open between samples.
  std::function<absl::StatusOr<MemoryCgroupStats>(const NamedCgroup&)> stats;
  // Only its usage, asked first (kFullReadEvery). Left empty while `stats` is given, every
  // sample reads `stats`.
  std::function<absl::StatusOr<uint64_t>(const NamedCgroup&)> usage;
  // Only its own limit: memory.limit_in_bytes on v1, the lower of memory.max and memory.high
  // on v2; nullopt when unlimited. Asked of cgroups that are not domains, only on the clock
  // below (kNewCgroupChecks, kLimitRecheckSamples).
  std::function<absl::StatusOr<std::optional<uint64_t>>(const std::string&)> limit;
  // A stage top's PSI totals of "memory", "io" or "cpu" (NotFound where there is no PSI), and
  // its cpu.stat (with cpuacct.usage on v1): from files kept open between samples.
  std::function<absl::StatusOr<PsiTotals>(const NamedCgroup&, std::string_view)> pressure;
  std::function<absl::StatusOr<CpuCgroupStats>(const NamedCgroup&)> cpu;
  // Only a top's CPU time, asked first where `cpu` reads two files (v1's cpuacct.usage, beside
  // cpu.stat): a top whose time did not move keeps its last readings (kFullReadEvery). Left
  // empty on v2, whose cpu.stat holds the time, and while `cpu` is given.
  std::function<absl::StatusOr<uint64_t>(const NamedCgroup&)> cpu_time;
  // A cgroup's own oom_kill count (ReadOomKillCount), with kOomPart, on the clock below.
  std::function<absl::StatusOr<uint64_t>(const NamedCgroup&)> oom_kills;
  // With kPlacementPart, a stage top's memory.numa_stat and effective cpuset, from files kept
  // open between samples, on the clock below (kFullReadEvery).
  std::function<absl::StatusOr<NumaMemory>(const NamedCgroup&)> numa;
  std::function<absl::StatusOr<EffectiveCpuset>(const NamedCgroup&)> cpuset;
};

// Launchers (systemd, Slurm, runc, `stagewatch run`) write a cgroup's limit just after its
// mkdir, before its first task moves in: a new cgroup's limit is checked in each of its first
// few samples, so a limit written then is a domain from the sample after.
inline constexpr int kNewCgroupChecks = 5;
// A limit written later on a living cgroup (`systemctl set-property`, by hand) is told by
// inotify (cgroup/limit_watch.h) and read at the next sample, with a domain's stats in full;
// a cgroup inotify cannot watch is polled by a slower round instead: its limit is checked once
// every this many samples (within a minute at the default 1 s interval), spread so that one
// sample checks 1/60 of them. A top without memory PSI is asked for it on the same round.
inline constexpr uint64_t kLimitRecheckSamples = 60;
// A domain's usage is read every sample, its other files (memory.stat, the limit, the kernel's
// peak, the event counts) only when the usage moved since they were last read, or after this
// many samples: memory that did not move is an idle stage's, and what else it may have changed
// (a limit written, an event counted, a peak of the same height) waits at most as long.
// A top's memory.numa_stat is read with its memory.stat; its cpuset, which only an
// administrator changes, once every kFullReadEvery samples (a tenth of the tops each sample).
// A stage top whose CPU time did not move since the last sample ran no task, and is still:
// its memory can move only by a charge from outside it (a socket's receive buffers) or by
// reclaim, its pressure only by a task blocked all along. With kCpuPart, a still top's CPU
// time is its only file read in that sample; it keeps its last memory, cpu.stat and pressure
// readings, read again on its turn of the same round.
inline constexpr uint64_t kFullReadEvery = 10;
// The texts of the cpuset files read in one placement pass, by path.
using CpusetTexts = absl::flat_hash_map<std::string, absl::StatusOr<std::string>>;
// A top none of whose tasks ran since the last sample (by the sched probe, or its CPU time)
// is quiet: on its turn of the round its usage and pressure are read, its memory.stat only if
// the usage moved or after this many samples. Without a task running, what memory.stat holds
// beside the usage moves only by reclaim aging its pages (the working set); its faults and
// events need a task.
inline constexpr uint64_t kQuietFullReadEvery = 60;
// The oom_kill counts are a file per live cgroup, and they move only with kills: every
// cgroup's is read first as the agent starts (ReadOomBaseline, else the first sample), then in
// every sample within kAfterOomKill of a traced kill event, else once per kOomCountsInterval,
// which still catches kills no event reported; a victim's own at once (OnOomKill). While the
// OOM probe traces the kernel's kills (OnOomKillsTraced), a kill it did not report is one its
// ring buffer dropped: every count is read at the next sample after a drop, and otherwise only
// once per kOomCountsTracedInterval (at 10,000 cgroups the minute's reading was a tenth of an
// idle agent's CPU).
inline constexpr absl::Duration kOomCountsInterval = absl::Seconds(60);
inline constexpr absl::Duration kOomCountsTracedInterval = absl::Minutes(10);
inline constexpr absl::Duration kAfterOomKill = absl::Seconds(5);

class MemorySampler {
 public:
  // `parts`: the SnapshotParts to read; the memory part is always read (the detectors').
  MemorySampler(CgroupNamer* namer, CgroupLayout layout, MemoryConfig config,
                SampleReader reader = {}, unsigned parts = kMemoryPart | kCpuPart);
  ~MemorySampler();  // stops the thread

  // Called after each sample, on the sampler's thread (the anomaly detectors' clock).
  using Observer = std::function<void(absl::Time, const Snapshot&)>;

  // Samples every config.sample_interval on a thread of its own.
  void Start(Observer observer = nullptr);

  // One sample, now (the thread calls this; tests call it directly, from one thread at a time).
  void SampleOnce(absl::Time now);

  // The last sample, never null: what every scrape and detector adapts until the next one.
  std::shared_ptr<const Snapshot> Latest() const;

  // With kOomPart, before Start() and before the OOM probe attaches: reads every cgroup's
  // oom_kill count now, the baseline (kills counted before the agent started are not news).
  // Without it, the first sample's reading is the baseline.
  void ReadOomBaseline(absl::Time now);

  // The OOM probe traced a kill in cgroup `victim` (0: unknown), from any thread. No file is
  // read here: the sampler's thread wakes and reads the victim's own oom_kill count (the
  // kernel raises it before the event), and the counts of every cgroup in each sample until
  // kAfterOomKill has passed.
  void OnOomKill(absl::Time at, uint64_t victim);
  // Before Start(): the OOM probe traces the kernel's kills, and `dropped` returns how many
  // kill events its ring buffer dropped so far.
  void OnOomKillsTraced(std::function<uint64_t()> dropped);
  // Before Start(): the sched probe traces switches, and `ran` returns the cgroups a task of
  // which ran since its last call (nullopt: it cannot tell). A top none of whose cgroups ran
  // is read only on its turn of the round, as a top whose CPU time did not move.
  void OnTasksRanTraced(std::function<std::optional<std::vector<uint64_t>>()> ran);
  // Reads the oom_kill count of the victims OnOomKill named since the last call (every live
  // cgroup's if one was unknown) into a new snapshot (the thread calls it when woken by a
  // kill; tests call it directly, from the thread that calls SampleOnce).
  void ReadVictims(absl::Time now);

  // Limited cgroups left untracked because memory.max_limit_domains was reached.
  uint64_t domain_overflows() const { return overflows_.load(); }
  // Domains skipped for one sample because a file vanished or could not be parsed.
  uint64_t domain_skips() const { return skips_.load(); }

 private:
  struct Domain {
    const NamedCgroup* cgroup;  // in tops_ or the sample's live list, both kept through it
    bool top = false;
    // Shared with full_reads_ while kept. None: could not be read, sits the sample out.
    std::shared_ptr<const MemoryCgroupStats> stats;
    std::optional<uint64_t> limit;  // the lower of the hard and the soft limit
  };
  // The namer's stage tops, asked again only when its live cgroups (or their stages) changed.
  const std::vector<NamedCgroup>& Tops(const std::shared_ptr<const std::vector<NamedCgroup>>& live);
  // Whether `id` is due in this sample's share of the slower round.
  bool InRound(uint64_t id) const {
    return id % kLimitRecheckSamples == samples_ % kLimitRecheckSamples;
  }
  // Whether a limit file of `id` was written since the last sample, as far as it is watched.
  bool Written(uint64_t id) const { return written_.all || written_.ids.contains(id); }
  // Checks the limits of the cgroups due a check (new ones, and this sample's share of the
  // round), and forgets what was known of cgroups that are gone.
  void FindLimited(const std::shared_ptr<const std::vector<NamedCgroup>>& live,
                   const absl::flat_hash_set<uint64_t>& tops);
  // Into domains_, whose room is kept from sample to sample.
  void ReadDomains(const std::shared_ptr<const std::vector<NamedCgroup>>& live,
                   const std::vector<NamedCgroup>& tops);
  // One domain's stats: its last full reading while its usage has not moved (kFullReadEvery),
  // unless `full`; with no read at all while `still` (a still top's).
  Domain ReadDomain(const NamedCgroup& c, bool top, bool full, bool still,
                    uint64_t full_read_every = kFullReadEvery);
  // With kCpuPart, every top's CPU time into top_readings_ (its cpu.stat too, unless still),
  // and whether it is still; a cpu.stat that could not be read into `next`.
  void ReadTopsCpu(const std::vector<NamedCgroup>& tops, Snapshot* next);
  // ran_tops_ from the sched probe's cgroups that ran; ran_known_ when it could tell.
  void FindTopsThatRan();
  // Pressure of every top (a still one's kept) and its cpu.stat with kCpuPart, folded per
  // stage into `next`; also memory PSI "full" seconds per stage, for the detectors.
  StageMap<std::optional<double>> ReadTops(const std::vector<NamedCgroup>& tops, Snapshot* next);
  struct TopPressure;
  TopPressure ReadTopPressure(const NamedCgroup& top, const TopPressure& last);
  void Fold(absl::Time now, const std::vector<Domain>& domains);
  // With kPlacementPart: each top's memory.numa_stat (when its memory.stat was read in full
  // this sample) and cpuset (when due), folded per stage into `next`.
  void ReadPlacement(const std::vector<NamedCgroup>& tops, Snapshot* next);
  // One stage's domains of a sample, summed (the .cc's StageSum), into its StageMemory, whose
  // domains Fold wrote.
  struct StageSum;
  void FoldStage(absl::Time now, const Stage& stage, const StageSum& sum, StageMemory& m) const;
  // With kOomPart: reads every live cgroup's oom_kill count if due, into oom_kills_.
  void ReadOomKills(absl::Time now, const std::vector<NamedCgroup>& live);
  // Folds oom_cgroups_ into oom_kills_.
  void FoldOomKills(absl::Time now);
  // Makes `next` the latest snapshot; the one it replaces becomes spare_ if no one holds it.
  void Publish(std::shared_ptr<const Snapshot> next);
  // An empty snapshot: spare_ written over where there is one.
  std::shared_ptr<Snapshot> FreshSnapshot();
  // stages_ into a snapshot's memory, written over a spare's stage by stage when it has the
  // same stages (no allocation a stage), else copied anew.
  void CopyStages(StageMap<StageMemory>& into) const;
  // Until the next sample is due (true), a kill event (true) or the destructor (false).
  bool Wait(absl::Time due);

  CgroupNamer* const namer_;
  const CgroupLayout layout_;
  const MemoryConfig config_;
  const unsigned parts_;
  OpenCgroupFiles files_;  // before reader_, whose cgroupfs fields use it
  // The cpuset files read in this sample's placement pass, by path: tops without a cpuset of
  // their own (most, where only the root has one) share their nearest ancestor's, read once a
  // pass rather than once a top. Before reader_, whose cpuset field uses it.
  CpusetTexts cpuset_texts_;
  // The host's NUMA nodes (kPlacementPart), before reader_, whose cpuset field uses it.
  const absl::StatusOr<std::shared_ptr<const NumaTopology>> topology_;
  // Watches the limit files where `reader_` reads them from cgroupfs (not a test's reader).
  const std::unique_ptr<LimitWatch> limit_watch_;
  const SampleReader reader_;
  std::atomic<uint64_t> overflows_{0}, skips_{0};
  // Only SampleOnce touches these.
  uint64_t samples_ = 0;
  // The known stages as of this sample, and whether they changed since the last.
  std::shared_ptr<const StageResolver::StageIds> known_;
  bool stages_changed_ = true;
  // The namer's live cgroups as of the last sample, and each by id.
  std::shared_ptr<const std::vector<NamedCgroup>> seen_list_;
  absl::flat_hash_map<uint64_t, const NamedCgroup*> seen_;  // into seen_list_
  absl::flat_hash_set<uint64_t> unwatched_;  // live cgroups LimitWatch could not watch
  std::vector<uint64_t> due_limit_checks_;   // of a sample, its room kept for the next
  absl::flat_hash_map<uint64_t, int> new_checks_;  // new cgroups: limit checks left
  LimitWatch::Written written_;  // the limits written since the last sample
  absl::flat_hash_set<uint64_t> limited_;          // cgroups beneath a top with a limit
  // Tops without a memory.pressure file (on a hybrid host, a path only the v1 memory hierarchy
  // has): asked again on the slower round, not every sample.
  absl::flat_hash_set<uint64_t> no_psi_;
  struct TopPressure {
    bool has_psi = false;
    PsiTotals memory, io, cpu;
  };
  // Each top's pressure totals and cpu.stat (with kCpuPart) as last read: kept while it is
  // still.
  struct TopReading {
    TopPressure pressure;
    CpuCgroupStats cpu;
    bool sampled = false;  // its pressure was read at least once
    bool still = false;    // in this sample
    bool quiet = false;    // no task of it ran since the last sample (still, or on its round)
  };
  absl::flat_hash_map<uint64_t, TopReading> top_readings_;
  std::shared_ptr<const std::vector<NamedCgroup>> tops_live_;  // what tops_ was found for
  std::vector<NamedCgroup> tops_;
  // Found with tops_: their ids, those nested in another or enclosing one (read in full), and
  // all of them shallower first.
  absl::flat_hash_set<uint64_t> top_ids_;
  absl::flat_hash_set<uint64_t> nested_tops_;
  std::vector<const NamedCgroup*> tops_by_depth_;
  // With tasks_ran_, also found with tops_: each live cgroup by id (in tops_live_), each top
  // by path (in tops_). Then per sample, the tops beneath which a task ran.
  std::function<std::optional<std::vector<uint64_t>>()> tasks_ran_;
  absl::flat_hash_map<uint64_t, const NamedCgroup*> live_by_id_;
  absl::flat_hash_map<std::string_view, uint64_t> top_by_path_;
  absl::flat_hash_set<uint64_t> ran_tops_;
  bool ran_known_ = false;
  uint64_t samples_a_stage_ran_ = 0;  // Snapshot::samples_a_stage_ran
  struct FullRead {
    std::shared_ptr<const MemoryCgroupStats> stats;
    uint64_t sample = 0;  // samples_ when read
  };
  absl::flat_hash_map<uint64_t, FullRead> full_reads_;  // by domain, the last of each
  std::vector<Domain> domains_;                // of this sample
  absl::flat_hash_set<uint64_t> domain_ids_;  // of the last sample
  struct TopPlacement {  // the last reading of each, and when the cpuset was
    std::optional<absl::StatusOr<NumaMemory>> numa;
    std::optional<absl::StatusOr<EffectiveCpuset>> cpuset;
  };
  absl::flat_hash_map<uint64_t, TopPlacement> placements_;  // by top
  StageMap<std::shared_ptr<const StagePlacement>> placement_;  // the last snapshot's
  std::shared_ptr<const std::vector<NamedCgroup>> placement_tops_;  // the tops_live_ it had
  std::vector<StageId> placement_changed_;  // of a sample, its room kept
  StageMap<StageMemory> stages_;
  std::vector<std::pair<StageId, size_t>> domains_by_stage_;  // Fold's, its room kept
  std::vector<CgroupCounterSample> event_samples_;            // likewise
  // The cgroups whose memory.events count, sorted: the last sample's, this one's, and those
  // that left between them (retired).
  std::vector<uint64_t> event_cgroups_, event_cgroups_next_, gone_event_cgroups_;
  StageCounters events_;    // kMemoryEvents per domain
  StageCounters pressure_;  // memory some, memory full, io some, io full (µs) per top
  StageCounters cpu_;       // usage, periods, throttled periods, throttled ns, PSI some, full
  MemcgFaults memcg_faults_;  // unless memory.fault_source is bpf
  std::vector<TopFaultReading> fault_readings_;  // its input, kept for its strings' room
  // pressure_'s and cpu_'s input, kept for their values' room
  std::vector<CgroupCounterSample> top_pressure_samples_, top_cpu_samples_;
  std::shared_ptr<const std::vector<NamedCgroup>> counted_tops_;  // the tops_live_ they had
  struct OomCount {
    NamedCgroup cgroup;
    uint64_t kills = 0;
  };
  // Every live cgroup's oom_kill count as last read (a victim's at its kill, the others at the
  // last full reading), and their totals from the first reading on.
  absl::flat_hash_map<uint64_t, OomCount> oom_cgroups_;
  StageCounters oom_counts_{1, /*count_from_first_snapshot=*/true};
  StageMap<uint64_t> oom_kills_;  // oom_counts_'s totals as of oom_kills_read_
  absl::Time oom_kills_read_ = absl::InfinitePast();
  absl::Time oom_all_read_ = absl::InfinitePast();  // the last reading of every cgroup's
  std::function<uint64_t()> oom_events_dropped_;  // set while kills are traced
  uint64_t oom_drops_seen_ = 0;                   // as of oom_all_read_
  std::atomic<int64_t> last_oom_kill_ns_{std::numeric_limits<int64_t>::min()};
  // What wakes the thread between samples.
  absl::Mutex wake_mu_;
  std::vector<uint64_t> victims_ ABSL_GUARDED_BY(wake_mu_);  // killed in since ReadVictims()
  bool stopping_ ABSL_GUARDED_BY(wake_mu_) = false;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Snapshot> latest_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Snapshot> spare_;  // the sampler's thread's only
  Observer observer_;
  std::thread thread_;
};

}  // namespace stagewatch
