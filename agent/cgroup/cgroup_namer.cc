#include "cgroup/cgroup_namer.h"

#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "sparse_maps.h"

namespace stagewatch {

CgroupNamer::CgroupNamer(CgroupPathCache* paths, StageResolver* stages,
                         absl::Duration min_refresh_interval, std::function<absl::Time()> now)
    : paths_(paths), stages_(stages), min_refresh_interval_(min_refresh_interval),
      now_(std::move(now)) {}

void CgroupNamer::Refresh() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = now_();
  if (paths_->uses_events()) {
    paths_->ApplyQueued();
    if (paths_->version() != seen_version_) RebuildLocked();
    refreshes_++;
  } else if (now - last_refresh_ >= min_refresh_interval_) {
    last_refresh_ = now;
    RebuildLocked();  // a walk
    refreshes_++;
  }
  if (stages_->ForgetGone(populated_, now)) {
    // Freed slots may now name cgroups that overflowed; resolve everything again.
    RebuildLocked();
  }
}

void CgroupNamer::BeginCollection() {
  absl::MutexLock lock(&mu_);
  collections_++;
  ExpireLocked();
}

void CgroupNamer::RebuildLocked() {
  seen_version_ = paths_->version();
  std::vector<std::pair<uint64_t, std::string>> current = paths_->Current();
  absl::flat_hash_set<uint64_t> alive;
  std::vector<NamedCgroup> live;
  live.reserve(current.size());
  for (auto& [id, path] : current) {
    Stage stage = stages_->Resolve(path);
    remembered_[id] = {stage, true, 0};
    alive.insert(id);
    live.push_back({id, std::move(path), std::move(stage)});
  }
  const std::shared_ptr<const std::vector<NamedCgroup>> previous =
      std::exchange(live_, std::make_shared<const std::vector<NamedCgroup>>(std::move(live)));
  FindStageTopsLocked();
  // Removed since the last refresh, seen alive or not (born and gone in between).
  for (RemovedCgroup& r : paths_->RemovedSince(&removed_cursor_)) {
    if (alive.contains(r.id)) continue;
    auto it = remembered_.find(r.id);
    if (it == remembered_.end()) {
      BuryLocked(r.id, stages_->Resolve(r.path, /*memoise=*/false));
    } else if (it->second.alive) {
      BuryLocked(r.id, it->second.stage);
      stages_->ForgetPath(r.path);
    }
  }
  // Walks report deaths only by absence.
  std::vector<std::pair<uint64_t, Stage>> vanished;
  for (const auto& [id, r] : remembered_) {
    if (r.alive && !alive.contains(id)) vanished.push_back({id, r.stage});
  }
  if (!vanished.empty()) {
    // Their paths leave the resolver's memo too, as the removals' do above.
    absl::flat_hash_set<uint64_t> gone;
    for (auto& [id, stage] : vanished) {
      gone.insert(id);
      BuryLocked(id, std::move(stage));
    }
    for (const NamedCgroup& c : *previous) {
      if (gone.contains(c.id)) stages_->ForgetPath(c.path);
    }
  }
  ExpireLocked();
}

void CgroupNamer::BuryLocked(uint64_t id, Stage stage) {
  remembered_[id] = {std::move(stage), false, collections_};
  dead_order_.push_back(id);
}

void CgroupNamer::ExpireLocked() {
  const size_t before = dead_order_.size();
  while (!dead_order_.empty()) {
    auto it = remembered_.find(dead_order_.front());
    const bool stale = it == remembered_.end() || it->second.alive;  // re-made since
    if (!stale && dead_order_.size() <= kMaxDead &&
        it->second.died_at + kKeptCollections > collections_) {
      break;
    }
    if (!stale) remembered_.erase(it);
    dead_order_.pop_front();
  }
  if (dead_order_.size() < before) {
    ShrinkIfSparse(remembered_);  // the slots a churn's dead cgroups took
    if (dead_order_.empty()) dead_order_.shrink_to_fit();
  }
}

CgroupNamer::Held CgroupNamer::held() {
  absl::MutexLock lock(&mu_);
  return {remembered_.size(), remembered_.capacity(), dead_order_.size()};
}

std::optional<Stage> CgroupNamer::StageOf(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = remembered_.find(id);
  if (it == remembered_.end()) return std::nullopt;
  return it->second.stage;
}

bool CgroupNamer::Alive(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = remembered_.find(id);
  return it != remembered_.end() && it->second.alive;
}

std::optional<CgroupNamer::IdName> CgroupNamer::NameOf(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = remembered_.find(id);
  if (it == remembered_.end()) return std::nullopt;
  return IdName{it->second.stage.id, it->second.alive};
}

std::optional<NamedCgroup> CgroupNamer::LookupNow(uint64_t id) {
  std::optional<std::string> path = paths_->LookupNow(id);
  if (!path) return std::nullopt;
  Stage stage = stages_->Resolve(*path);
  return NamedCgroup{id, *std::move(path), std::move(stage)};
}

std::optional<std::string> CgroupNamer::StageNameNow(uint64_t id) {
  std::optional<std::string> path = paths_->LookupNow(id);
  if (!path) return std::nullopt;
  return stages_->NameOf(*path);
}

std::shared_ptr<const std::vector<NamedCgroup>> CgroupNamer::Live() {
  absl::MutexLock lock(&mu_);
  return live_;
}

std::vector<NamedCgroup> CgroupNamer::StageTops() {
  absl::MutexLock lock(&mu_);
  return tops_;
}

void CgroupNamer::FindStageTopsLocked() {
  absl::flat_hash_map<std::string_view, StageId> stage_of_path;
  populated_.clear();
  for (const NamedCgroup& c : *live_) {
    stage_of_path[c.path] = c.stage.id;
    populated_.insert(c.stage.id);
  }
  tops_.clear();
  for (const NamedCgroup& c : *live_) {
    if (c.stage.id == kUnattributedStageId) continue;
    const size_t slash = c.path.rfind('/');
    const std::string_view parent =
        slash == 0 ? std::string_view("/") : std::string_view(c.path).substr(0, slash);
    auto it = stage_of_path.find(parent);
    if (c.path == "/" || it == stage_of_path.end() || it->second != c.stage.id) {
      tops_.push_back(c);
    }
  }
}

}  // namespace stagewatch
