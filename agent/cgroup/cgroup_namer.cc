#include "cgroup/cgroup_namer.h"

#include "absl/container/flat_hash_map.h"

namespace stagewatch {

CgroupNamer::CgroupNamer(CgroupPathCache* paths, StageResolver* stages,
                         absl::Duration min_refresh_interval)
    : paths_(paths), stages_(stages), min_refresh_interval_(min_refresh_interval) {}

void CgroupNamer::Refresh() {
  absl::MutexLock lock(&mu_);
  if (absl::Now() - last_refresh_ < min_refresh_interval_) return;
  last_refresh_ = absl::Now();
  generation_++;
  live_.clear();
  for (auto& [id, path] : paths_->RescanAll()) {
    Stage stage = stages_->Resolve(path);
    remembered_[id] = {stage, generation_};
    live_.push_back({id, std::move(path), std::move(stage)});
  }
  for (auto it = remembered_.begin(); it != remembered_.end();) {
    if (it->second.generation + 2 < generation_) {
      remembered_.erase(it++);
    } else {
      ++it;
    }
  }
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
  return it != remembered_.end() && it->second.generation == generation_;
}

std::vector<NamedCgroup> CgroupNamer::Live() {
  absl::MutexLock lock(&mu_);
  return live_;
}

std::vector<NamedCgroup> CgroupNamer::StageTops() {
  std::vector<NamedCgroup> live = Live();
  absl::flat_hash_map<std::string, std::string> stage_of_path;
  for (const NamedCgroup& c : live) stage_of_path[c.path] = c.stage.name;
  std::vector<NamedCgroup> tops;
  for (NamedCgroup& c : live) {
    if (c.stage.name == kUnattributedStage) continue;
    const size_t slash = c.path.rfind('/');
    const std::string parent = slash == 0 ? "/" : c.path.substr(0, slash);
    auto it = stage_of_path.find(parent);
    if (c.path == "/" || it == stage_of_path.end() || it->second != c.stage.name) {
      tops.push_back(std::move(c));
    }
  }
  return tops;
}

}  // namespace stagewatch
