// The stages known at one moment, in KnownStages() order and by id: built once per scrape or
// feed, so that ids become names (and labels) in one place.
#pragma once

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "stages/stage_resolver.h"

namespace stagewatch {

class StageDirectory {
 public:
  explicit StageDirectory(std::vector<Stage> known) : known_(std::move(known)) {
    for (size_t i = 0; i < known_.size(); i++) index_[known_[i].id] = i;
  }
  explicit StageDirectory(const StageResolver& resolver)
      : StageDirectory(resolver.KnownStages()) {}

  const std::vector<Stage>& all() const { return known_; }
  // Null for an id no longer known (a stage forgotten since its state was read).
  const Stage* Find(StageId id) const {
    auto it = index_.find(id);
    return it == index_.end() ? nullptr : &known_[it->second];
  }
  absl::flat_hash_set<StageId> ids() const {
    absl::flat_hash_set<StageId> ids;
    for (const Stage& s : known_) ids.insert(s.id);
    return ids;
  }

 private:
  std::vector<Stage> known_;
  absl::flat_hash_map<StageId, size_t> index_;
};

}  // namespace stagewatch
