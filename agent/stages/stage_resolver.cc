#include "stages/stage_resolver.h"

#include "absl/strings/ascii.h"
#include "glob.h"
#include "log.h"
#include "sparse_maps.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// Discovered names become label values and metric-facing names: [a-zA-Z_][a-zA-Z0-9_.-]*.
bool IsValidStageName(std::string_view name) {
  if (name.empty() || !(absl::ascii_isalpha(name[0]) || name[0] == '_')) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

// Configured stages take ids 1..n in file order; one named `unattributed` is that stage.
std::vector<Stage> WithIds(const std::vector<StageConfig>& stages) {
  std::vector<Stage> out;
  StageId next = kUnattributedStageId + 1;
  for (const StageConfig& stage : stages) {
    const StageId id = stage.name == kUnattributedStage ? kUnattributedStageId : next++;
    out.push_back(Stage{id, stage.name, stage.pipeline});
  }
  return out;
}

}  // namespace

StageResolver::StageResolver(std::vector<StageConfig> stages, DiscoveryConfig discovery)
    : stages_(std::move(stages)),
      configured_(WithIds(stages_)),
      discovery_(std::move(discovery)),
      next_id_(static_cast<StageId>(stages_.size()) + 1) {}

Stage StageResolver::Resolve(std::string_view cgroup_path, bool memoise) {
  absl::MutexLock lock(&mu_);
  auto it = memo_.find(std::string(cgroup_path));
  if (it == memo_.end() && !memoise) {
    Resolution once = ResolveUncached(cgroup_path);
    if (once.overflow) ++overflows_;
    return once.stage;
  }
  if (it == memo_.end()) {
    if (memo_.size() >= kMaxMemo) memo_.clear();
    it = memo_.emplace(std::string(cgroup_path), ResolveUncached(cgroup_path)).first;
  }
  if (it->second.overflow) ++overflows_;
  return it->second.stage;
}

std::string StageResolver::NameOf(std::string_view cgroup_path) {
  absl::MutexLock lock(&mu_);
  if (auto it = memo_.find(std::string(cgroup_path)); it != memo_.end()) {
    return it->second.stage.name;
  }
  return ResolveUncached(cgroup_path, /*discover=*/false).stage.name;
}

void StageResolver::ForgetPath(std::string_view cgroup_path) {
  absl::MutexLock lock(&mu_);
  memo_.erase(std::string(cgroup_path));
  ShrinkIfSparse(memo_);  // the slots a churn's paths took
}

StageResolver::Resolution StageResolver::ResolveUncached(std::string_view cgroup_path,
                                                          bool discover) {
  const std::vector<std::string_view> components = SplitNonEmpty(cgroup_path, '/');
  // Deepest ancestor first (the cgroup itself), up to the root (depth 0).
  for (size_t depth = components.size() + 1; depth-- > 0;) {
    if (const StageConfig* stage = MatchConfigured(components, depth)) {
      return Resolution{Configured(stage), false};
    }
    if (discovery_.enabled && depth >= 2 && components[depth - 2] == discovery_.directory) {
      return Discover(components[depth - 1], discover);
    }
  }
  return Resolution{UnattributedStage(), false};
}

const StageConfig* StageResolver::MatchConfigured(const std::vector<std::string_view>& components,
                                                  size_t depth) const {
  std::string ancestor = "/";
  for (size_t i = 0; i < depth; ++i) {
    if (i > 0) ancestor.push_back('/');
    ancestor.append(components[i]);
  }
  for (const StageConfig& stage : stages_) {
    for (const std::string& glob : stage.cgroup_paths) {
      if (GlobMatchPath(glob, ancestor)) return &stage;
    }
    if (depth == 0) continue;
    for (const std::string& glob : stage.systemd_units) {
      if (GlobMatchComponent(glob, components[depth - 1])) return &stage;
    }
  }
  return nullptr;
}

// A `.../<directory>/<name>` cgroup. Invalid names and names past max_stages resolve to
// `unattributed` rather than to an outer stage: the cgroup was made for a stage of its own.
StageResolver::Resolution StageResolver::Discover(std::string_view name, bool add) {
  if (!IsValidStageName(name) || name == kUnattributedStage) {
    return Resolution{UnattributedStage(), false};
  }
  if (const Stage* stage = ConfiguredByName(name)) return Resolution{*stage, false};
  for (const Stage& known : discovered_) {
    if (known.name == name) return Resolution{known, false};
  }
  if (discovery_.max_stages > 0 &&
      discovered_.size() < static_cast<size_t>(discovery_.max_stages)) {
    // Not added: named as it would be, with no id of its own.
    if (!add) {
      return Resolution{Stage{kUnattributedStageId, std::string(name), discovery_.pipeline},
                        false};
    }
    discovered_.push_back(Stage{next_id_++, std::string(name), discovery_.pipeline});
    StagesChanged();
    return Resolution{discovered_.back(), false};
  }
  if (!overflow_logged_ && add) {
    overflow_logged_ = true;
    Log::Warn("discovery.max_stages reached: stage not discovered, its cgroups count as "
              "unattributed; raise discovery.max_stages",
              {{"refused_stage", name}, {"max_stages", discovery_.max_stages}});
  }
  return Resolution{UnattributedStage(), true};
}

const Stage* StageResolver::ConfiguredByName(std::string_view name) const {
  for (const Stage& stage : configured_) {
    if (stage.name == name) return &stage;
  }
  return nullptr;
}

std::vector<Stage> StageResolver::KnownStages() const {
  absl::MutexLock lock(&mu_);
  std::vector<Stage> known;
  for (const Stage& stage : configured_) {
    if (stage.id != kUnattributedStageId) known.push_back(stage);
  }
  known.insert(known.end(), discovered_.begin(), discovered_.end());
  known.push_back(UnattributedStage());
  return known;
}

std::shared_ptr<const StageResolver::StageIds> StageResolver::KnownStageIds() const {
  absl::MutexLock lock(&mu_);
  if (known_ids_) return known_ids_;
  auto ids = std::make_shared<StageIds>();
  ids->reserve(configured_.size() + discovered_.size() + 1);
  for (const Stage& stage : configured_) ids->insert(stage.id);
  for (const Stage& stage : discovered_) ids->insert(stage.id);
  ids->insert(kUnattributedStageId);
  known_ids_ = std::move(ids);
  return known_ids_;
}

uint64_t StageResolver::stages_version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

void StageResolver::StagesChanged() {
  version_++;
  known_ids_.reset();
}

bool StageResolver::ForgetGone(const absl::flat_hash_set<StageId>& populated, absl::Time now) {
  absl::MutexLock lock(&mu_);
  bool forgot = false;
  for (auto it = discovered_.begin(); it != discovered_.end();) {
    if (populated.contains(it->id)) {
      empty_since_.erase(it->id);
      ++it;
      continue;
    }
    const absl::Time since = empty_since_.try_emplace(it->id, now).first->second;
    if (discovery_.forget_after <= absl::ZeroDuration() ||
        now - since < discovery_.forget_after) {
      ++it;
      continue;
    }
    Log::Info("forgot discovered stage: no cgroup of it for discovery.forget_after",
              {{"pipeline_stage", it->name},
               {"forget_after", absl::FormatDuration(discovery_.forget_after)}});
    empty_since_.erase(it->id);
    it = discovered_.erase(it);
    StagesChanged();
    forgot = true;
  }
  // Memoised answers may name the forgotten stage, or `unattributed` for want of a slot.
  if (forgot) memo_.clear();
  return forgot;
}

uint64_t StageResolver::discovery_overflows() const {
  absl::MutexLock lock(&mu_);
  return overflows_;
}

}  // namespace stagewatch
