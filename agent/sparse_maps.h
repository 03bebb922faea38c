// absl's hash maps keep their capacity after erases: a map that held a churn's dead cgroups
// would keep their slots for good. Given back once the map is a quarter full (a steady churn
// stays above that, and is not rehashed each time).
#pragma once

#include <cstddef>

namespace stagewatch {

template <typename Map>
void ShrinkIfSparse(Map& map) {
  if (map.capacity() > 64 && map.size() * 4 < map.capacity()) map.rehash(0);
}

}  // namespace stagewatch
