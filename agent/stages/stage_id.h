// A stage as the agent carries it between modules: a small id that the StageResolver hands
// out and turns back into a name and pipeline. Collectors make labels of it once, at the end.
#pragma once

#include <cstdint>
#include <utility>

namespace stagewatch {

// Never reused for another stage: a forgotten stage's id stays retired, so state still held
// under it (a tracker's totals until its next KeepStages) cannot be read as another stage's.
using StageId = uint32_t;
inline constexpr StageId kUnattributedStageId = 0;

// A (preempted, preempting) pair of stages.
using StagePair = std::pair<StageId, StageId>;

}  // namespace stagewatch
