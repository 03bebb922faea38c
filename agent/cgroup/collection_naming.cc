#include "cgroup/collection_naming.h"

#include <string>

namespace stagewatch {

void CollectionNaming::Begin() {
  namer_->BeginCollection();
  dead_.clear();
  unnamed_next_.clear();
}

std::optional<Stage> CollectionNaming::StageFor(uint64_t id) {
  if (std::optional<Stage> stage = namer_->StageOf(id)) {
    if (!namer_->Alive(id)) dead_.insert(id);
    return stage;
  }
  if (!unnamed_.contains(id)) {
    unnamed_next_.insert(id);
    return std::nullopt;
  }
  if (dead_.insert(id).second) unknown_++;
  return UnattributedStage();
}

void CollectionNaming::End() { unnamed_.swap(unnamed_next_); }

}  // namespace stagewatch
