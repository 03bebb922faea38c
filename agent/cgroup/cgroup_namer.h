// Names the cgroup ids found in BPF maps at collect time: id → path → stage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
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

// Thread-safe. A cgroup stays nameable for two walks after it disappears, so that one removed
// between two collections still has its last counts folded into its own stage, not
// `unattributed`. Memory is bounded by the live tree plus what died in the last two walks.
class CgroupNamer {
 public:
  CgroupNamer(CgroupPathCache* paths, StageResolver* stages,
              absl::Duration min_refresh_interval = absl::Seconds(1));

  // Walks the hierarchy, at most once per min_refresh_interval.
  void Refresh();

  // The stage of `id`; nullopt if no recent walk saw it.
  std::optional<Stage> StageOf(uint64_t id);
  // Whether `id` was present at the last walk.
  bool Alive(uint64_t id);

  // Every cgroup of the last walk, for collectors that read cgroupfs files.
  std::vector<NamedCgroup> Live();

  // The outermost cgroups of each named stage (not `unattributed`): those whose parent is in
  // another stage. Their hierarchical cgroupfs counters cover the whole stage once.
  std::vector<NamedCgroup> StageTops();

  StageResolver* stages() const { return stages_; }

 private:
  struct Remembered {
    Stage stage;
    uint64_t generation;  // the last walk that saw it
  };

  CgroupPathCache* const paths_;
  StageResolver* const stages_;
  const absl::Duration min_refresh_interval_;
  absl::Mutex mu_;
  absl::Time last_refresh_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::vector<NamedCgroup> live_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, Remembered> remembered_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch
