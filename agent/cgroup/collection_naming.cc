#include "cgroup/collection_naming.h"

#include <string>

namespace stagewatch {

void CollectionNaming::Begin() {
  namer_->BeginCollection();
  dead_.clear();
  unnamed_next_.clear();
}

std::optional<StageId> CollectionNaming::StageFor(uint64_t id) {
  if (std::optional<CgroupNamer::IdName> name = namer_->NameOf(id)) {
    if (!name->alive) dead_.insert(id);
    return name->stage;
  }
  const uint64_t refreshes = namer_->refreshes();
  auto first_unknown = unnamed_.find(id);
  if (first_unknown == unnamed_.end()) {
    unnamed_next_.emplace(id, refreshes);
    return std::nullopt;
  }
  if (first_unknown->second == refreshes) {  // no refresh since: it may yet be named
    unnamed_next_.insert(*first_unknown);
    return std::nullopt;
  }
  if (dead_.insert(id).second) unknown_++;
  return kUnattributedStageId;
}

void CollectionNaming::End() { unnamed_.swap(unnamed_next_); }

}  // namespace stagewatch
