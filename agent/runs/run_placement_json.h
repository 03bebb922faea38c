// A run's placement as JSON: its memory by NUMA node, and the agent's migrations and CPU time
// by node. One shape for the ledger's columns, the kept ends and `runs show --json`.
#pragma once

#include "nlohmann/json.hpp"
#include "runs/run_record.h"

namespace stagewatch {

// {"<node>": {"anon_bytes": A, "file_bytes": F}, ...}
nlohmann::json MemoryByNodeJson(const NumaMemory& memory);
// The inverse; entries that are not such an object are skipped (a hand-edited ledger).
NumaMemory MemoryByNodeFrom(const nlohmann::json& j);

// {"node_migrations": N, "cross_node_migrations": M, "cpu_seconds_by_node": {"<node>": S}},
// each key only when observed; null when none is.
nlohmann::json AgentPlacementJson(const AgentFacts& a);
void AgentPlacementFrom(const nlohmann::json& j, AgentFacts& a);

}  // namespace stagewatch
