// A lower bound, a target and an upper bound for a stage's limits, as a VPA recommender gives
// them, each with the evidence behind it. The target is the advisor's recommendation; the
// bounds say how far it could move before the runs seen argue against it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "runs/advisor.h"

namespace stagewatch {

template <typename T>
struct Bounded {
  T lower{}, target{}, upper{};
  std::string lower_why, target_why, upper_why;
};

struct AdviceBounds {
  Bounded<uint64_t> memory_bytes;             // the memory-max figures
  std::optional<Bounded<double>> cpu_cores;   // none without CPU samples
};

// Only for advice with enough runs.
AdviceBounds BoundsOf(const Advice& advice);
std::string BoundsText(const AdviceBounds& bounds);  // one line per bound, with its evidence
nlohmann::json BoundsToJson(const AdviceBounds& bounds);

}  // namespace stagewatch
