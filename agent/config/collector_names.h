// The signals a configuration may switch off (`collectors.<name>`, --collector.<name>), in the
// order the agent starts them. The configuration sits below the signals' modules, so the names
// live here, and each switchable Signal (agent/signals/) takes its name from this list.
#pragma once

#include <array>
#include <string_view>

namespace stagewatch {

inline constexpr std::string_view kOomCollector = "oom";
inline constexpr std::string_view kSchedCollector = "sched";
inline constexpr std::string_view kMemoryCollector = "memory";

inline constexpr std::array<std::string_view, 3> kSwitchableCollectors = {
    kOomCollector, kSchedCollector, kMemoryCollector};

}  // namespace stagewatch
