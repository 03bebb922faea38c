// The cgroupfs fixture trees under tests/fixtures/cgroupfs, as layouts the readers take.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "cgroup/layout.h"

namespace stagewatch::testing {

inline const std::string kCgroupfsFixtures = std::string(STAGEWATCH_FIXTURES_DIR) + "/cgroupfs";

inline bool Contains(absl::string_view haystack, absl::string_view needle) {
  return haystack.find(needle) != absl::string_view::npos;
}

// A hybrid host keyed on the v1 memory hierarchy, with paths mirrored into cpu and cpuacct;
// PSI lives in cgroup2 whichever hierarchy the agent keys on.
inline CgroupLayout HybridFixtureLayout() {
  const std::string& root = kCgroupfsFixtures;
  CgroupLayout layout;
  layout.mode = CgroupMode::kHybrid;
  layout.key = CGROUP_KEY_V1_MEMORY;
  layout.key_root = root + "/v1/memory";
  layout.v1_memory_root = layout.key_root;
  layout.v2_root = root + "/v1/unified";
  layout.v1_roots = {{"memory", root + "/v1/memory"},
                     {"cpu", root + "/v1/cpu"},
                     {"cpuacct", root + "/v1/cpuacct"}};
  return layout;
}

inline CgroupLayout V2FixtureLayout() {
  CgroupLayout layout;
  layout.mode = CgroupMode::kV2;
  layout.key = CGROUP_KEY_DEFAULT;
  layout.key_root = kCgroupfsFixtures + "/v2";
  layout.v2_root = layout.key_root;
  layout.v2_has_memory = true;
  return layout;
}

}  // namespace stagewatch::testing
