// absl's hash maps keep their capacity after erases: a map that held a churn's dead cgroups
// would keep their slots for good. Given back once the map is less than 3/8 full: a rehash
// leaves a map more than 7/16 full, so one that stays the same size is never rehashed again,
// and a steady churn is rehashed only when its size halves.
#pragma once

#include <cstddef>

namespace stagewatch {

template <typename Map>
void ShrinkIfSparse(Map& map) {
  if (map.capacity() > 64 && map.size() * 8 < map.capacity() * 3) map.rehash(0);
}

}  // namespace stagewatch
