// Names the cgroup ids found in BPF maps at collect time: id → path → stage.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cgroup/path_cache.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

struct NamedCgroup {
  uint64_t id = 0;
  std::string path;
  Stage stage;
};

// Thread-safe. A cgroup stays nameable for a few collections after it dies (kKeptCollections,
// counted by BeginCollection()), so that its last counts, and any the kernel adds while its
// last task goes, are folded into its own stage rather than `unattributed`. With lifecycle
// events that includes cgroups born and removed between two refreshes. Memory is bounded by
// the live tree plus at most kMaxDead dead cgroups (a stage and a few words each); their
// map's slots are given back once they expire.
class CgroupNamer {
 public:
  // Three trackers collect (sched and placement every 2.5 s, memory every 5 s): six
  // collections, about 6 s, give the first two two collections each after a death and the
  // memory tracker at least one.
  static constexpr uint64_t kKeptCollections = 6;
  // A churn's dead must stay named until the trackers have collected: 65,536 covers 10,000
  // cgroups a second, about 6 MiB while a churn that fast lasts.
  static constexpr size_t kMaxDead = 65536;

  CgroupNamer(CgroupPathCache* paths, StageResolver* stages,
              absl::Duration min_refresh_interval = absl::Seconds(1),
              std::function<absl::Time()> now = [] { return absl::Now(); });

  // Brings the names up to date: by walks at most once per min_refresh_interval, with
  // lifecycle events whenever the cache changed. Then lets the resolver forget discovered
  // stages that have had no cgroup for discovery.forget_after. In the agent only the memory
  // sampler calls it, on its own clock: a walk never runs on the scrape thread.
  void Refresh();

  // One tracker's collection begins: ages the names of dead cgroups. It does not refresh: a
  // collection names what the last Refresh() found (an id born since is deferred, see
  // CollectionNaming::StageFor).
  void BeginCollection();

  // The stage of `id`; nullopt if it was never seen, or died more than a few collections ago.
  std::optional<Stage> StageOf(uint64_t id);
  // Whether `id` is alive as of the last refresh.
  bool Alive(uint64_t id);
  // Both at once, for a collection's every map entry: its stage's id, and whether it is alive.
  struct IdName {
    StageId stage;
    bool alive;
  };
  std::optional<IdName> NameOf(uint64_t id);

  // `id` named from the path cache now, born since the last refresh or not (the cache walks
  // on a miss without lifecycle events); nullopt if no cgroup has that id. For rare events
  // (OOM kills), as CgroupPathCache::LookupNow.
  std::optional<NamedCgroup> LookupNow(uint64_t id);
  // The stage name of `id` from the path cache now, as LookupNow, discovering no stage
  // (StageResolver::NameOf): a removed cgroup named in a report long after its stage was
  // forgotten must not bring that stage back; nullopt if no cgroup has that id.
  std::optional<std::string> StageNameNow(uint64_t id);

  // Every live cgroup, for collectors that read cgroupfs files. The same object until the
  // names change, so a caller can tell that nothing did.
  std::shared_ptr<const std::vector<NamedCgroup>> Live();

  // The outermost cgroups of each named stage (not `unattributed`): those whose parent is in
  // another stage. Their hierarchical cgroupfs counters cover the whole stage once. Found
  // when the names change, not at each call (the sampler asks every second, two collectors
  // at each scrape).
  std::vector<NamedCgroup> StageTops();

  StageResolver* stages() const { return stages_; }

  // How many times Refresh() brought the names up to date (a walk, or the queued events).
  uint64_t refreshes() const { return refreshes_.load(); }

  // What the namer holds, for tests of its bounds.
  struct Held {
    size_t remembered = 0;           // live and dead cgroups named
    size_t remembered_capacity = 0;  // slots of their map
    size_t dead = 0;
  };
  Held held();

 private:
  struct Remembered {
    Stage stage;
    bool alive = true;
    uint64_t died_at = 0;  // collections_ when it was found dead
  };

  void RebuildLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BuryLocked(uint64_t id, Stage stage) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FindStageTopsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  CgroupPathCache* const paths_;
  StageResolver* const stages_;
  const absl::Duration min_refresh_interval_;
  const std::function<absl::Time()> now_;
  std::atomic<uint64_t> refreshes_{0};
  absl::Mutex mu_;
  absl::Time last_refresh_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t seen_version_ ABSL_GUARDED_BY(mu_) = std::numeric_limits<uint64_t>::max();
  uint64_t removed_cursor_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t collections_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<const std::vector<NamedCgroup>> live_ ABSL_GUARDED_BY(mu_) =
      std::make_shared<const std::vector<NamedCgroup>>();
  // Kept with live_: the stage tops, and the stages that have a live cgroup.
  std::vector<NamedCgroup> tops_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<StageId> populated_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Remembered> remembered_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> dead_order_ ABSL_GUARDED_BY(mu_);  // oldest death first
};

}  // namespace stagewatch
