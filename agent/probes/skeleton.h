// RAII ownership of bpftool-generated skeletons: destroyed (programs detached, maps freed)
// exactly once, by the destructor.
#pragma once

#include <memory>

namespace stagewatch {

template <typename Skel, void (*Destroy)(Skel*)>
struct SkeletonDeleter {
  void operator()(Skel* skel) const { Destroy(skel); }
};

template <typename Skel, void (*Destroy)(Skel*)>
using SkeletonPtr = std::unique_ptr<Skel, SkeletonDeleter<Skel, Destroy>>;

}  // namespace stagewatch
