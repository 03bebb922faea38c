// Names the cgroup ids read from BPF maps during one collection, and says which ids died.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "cgroup/cgroup_namer.h"

namespace stagewatch {

// Not thread-safe: one collection at a time (the trackers hold their own lock).
class CollectionNaming {
 public:
  explicit CollectionNaming(CgroupNamer* namer) : namer_(namer) {}

  // Starts a collection with the names of the last refresh (see CgroupNamer::BeginCollection).
  void Begin();

  // The stage to fold `id` into, or nullopt to skip it this time: an id the last refresh did
  // not see was most likely born since, and a collection after the next refresh names it.
  // Still unknown then, it died unseen: it goes to `unattributed` and is counted in unknown().
  std::optional<StageId> StageFor(uint64_t id);

  // Ids whose map entries should be deleted once this collection has folded them in.
  const std::set<uint64_t>& dead() const { return dead_; }

  // Ends the collection.
  void End();

  uint64_t unknown() const { return unknown_; }

  StageResolver* stages() const { return namer_->stages(); }

 private:
  CgroupNamer* const namer_;
  std::set<uint64_t> dead_;
  // Unknown ids, each with the namer's refresh count when it was first unknown: from the
  // previous collection, and from this one.
  std::map<uint64_t, uint64_t> unnamed_, unnamed_next_;
  uint64_t unknown_ = 0;
};

}  // namespace stagewatch
