// Names cgroups as pipeline stages.
//
// A cgroup gets the stage of the deepest of its ancestors (itself included) that a stage
// matches: a configured stage by path glob or systemd unit, or the `.../stagewatch/<name>/...`
// discovery convention. At the same depth configured stages win over discovery, and among
// configured stages the first in the file wins. Anything else is `unattributed`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "stages/stage_id.h"

namespace stagewatch {

inline constexpr std::string_view kUnattributedStage = "unattributed";

struct Stage {
  StageId id = kUnattributedStageId;
  std::string name;
  std::string pipeline;
};

// Where the cgroups of no stage go.
inline Stage UnattributedStage() {
  return Stage{kUnattributedStageId, std::string(kUnattributedStage), ""};
}

// Thread-safe. The set of stages is bounded by the configuration: configured stages plus at
// most discovery.max_stages discovered names; further names resolve to `unattributed` and
// are counted in discovery_overflows() (the first one also logs a warning). A discovered
// stage none of whose cgroups is alive for discovery.forget_after is forgotten: it leaves
// KnownStages() and frees its slot; if it comes back it is discovered anew, under a new id.
// Ids are handed out in order and never reused (2^32 discoveries are beyond reach), so a
// tracker that still holds a forgotten stage's state cannot fold it into a newer stage.
class StageResolver {
 public:
  StageResolver(std::vector<StageConfig> stages, DiscoveryConfig discovery);

  // `cgroup_path` is relative to the hierarchy root and starts with "/". `memoise` false is
  // for paths that will not be asked again (removed cgroups), so that churn cannot fill the
  // memo.
  Stage Resolve(std::string_view cgroup_path, bool memoise = true);
  // The name of the stage `cgroup_path` resolves to, discovering none: a discovered name not
  // known now (never seen, or forgotten) is given as it would resolve, and takes no slot. For
  // naming cgroups in reports (a run's preemptors), which must not bring back a stage that
  // was forgotten when its cgroups went.
  std::string NameOf(std::string_view cgroup_path);
  // Drops the memoised answer for a removed cgroup's path.
  void ForgetPath(std::string_view cgroup_path);

  // Every stage that can appear in metrics so far: configured, discovered, and unattributed.
  std::vector<Stage> KnownStages() const;

  using StageIds = absl::flat_hash_set<StageId>;
  // Their ids, for dropping the state of forgotten stages: made once for each set of stages
  // and shared (asked several times a sample, 500 ids at 10,000 cgroups).
  std::shared_ptr<const StageIds> KnownStageIds() const;
  // Moves on whenever a stage is discovered or forgotten: a caller that saw the same version
  // last time has the same KnownStages().
  uint64_t stages_version() const;

  uint64_t discovery_overflows() const;

  // Called with the stages that have a live cgroup now. Forgets discovered stages absent for
  // discovery.forget_after, logging each; returns whether any was forgotten.
  bool ForgetGone(const absl::flat_hash_set<StageId>& populated, absl::Time now);

 private:
  // A resolution, memoised per path: once a name is discovered or has overflowed it stays so,
  // which keeps memoised answers valid.
  struct Resolution {
    Stage stage;
    bool overflow = false;  // counted again at every resolution
  };
  static constexpr size_t kMaxMemo = 16384;  // cleared when full

  // `discover` false: a new discovered name is resolved as it would be, but not added.
  Resolution ResolveUncached(std::string_view cgroup_path, bool discover = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The configured stage matching the ancestor made of the first `depth` components.
  const StageConfig* MatchConfigured(const std::vector<std::string_view>& components,
                                     size_t depth) const;
  Resolution Discover(std::string_view name, bool add) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After discovered_ changed: a new version, the ids made again when next asked.
  void StagesChanged() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The configured stage of that name, with its id.
  const Stage* ConfiguredByName(std::string_view name) const;
  const Stage& Configured(const StageConfig* stage) const {
    return configured_[stage - stages_.data()];
  }

  const std::vector<StageConfig> stages_;
  const std::vector<Stage> configured_;  // stages_ with their ids, in the same order
  const DiscoveryConfig discovery_;
  mutable absl::Mutex mu_;
  StageId next_id_ ABSL_GUARDED_BY(mu_);
  std::vector<Stage> discovered_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;  // of discovered_
  mutable std::shared_ptr<const StageIds> known_ids_ ABSL_GUARDED_BY(mu_);  // null: to make
  absl::flat_hash_map<StageId, absl::Time> empty_since_ ABSL_GUARDED_BY(mu_);
  bool overflow_logged_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t overflows_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Resolution> memo_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stagewatch
