// The placement signal's memory and cpuset families, built from the sampler's Snapshot (its
// placement part, kPlacementPart): where each stage's memory lives, its remote share, and the
// CPUs and nodes it may use, with the CPUs pinned stages share. Reads no file itself; the
// placement collector appends them beside its kernel-side families.
#pragma once

#include <map>
#include <vector>

#include "prometheus/metric_family.h"
#include "sampler/sample_snapshot.h"
#include "stages/stage_resolver.h"

namespace stagewatch::exporters {

// CPU seconds of each stage on each NUMA node (indexed by node id) over a recent interval,
// from the sched probe's on-CPU time per node: what the remote share weighs memory by.
using StageNodeCpuSeconds = std::map<StageId, std::vector<double>>;

// A pinned stage (its CPUs fewer than the host's) shares CPUs with at most this many other
// pinned stages in stagewatch_cpuset_shared_cpus, those it shares most with: the series stay
// bounded by stages, not by their pairs.
inline constexpr size_t kMaxSharedStagesPerStage = 16;

// Appends, for each of `stages` in the snapshot's placement part:
//   stagewatch_memory_numa_bytes{pipeline_stage,numa_node,type="anon|file"}
//   stagewatch_memory_remote_ratio{pipeline_stage}  (with `cpu_seconds`: null leaves it empty)
//   stagewatch_cpuset_cpus{pipeline_stage}
//   stagewatch_cpuset_info{pipeline_stage,cpus,mems} 1
//   stagewatch_cpuset_shared_cpus{pipeline_stage,other_stage}  (pinned pairs that overlap)
// (with {pipeline} and {other_pipeline} where a stage has one).
void AppendPlacementMemorySeries(const Snapshot& snapshot, const std::vector<Stage>& stages,
                                 const StageNodeCpuSeconds* cpu_seconds,
                                 std::vector<prometheus::MetricFamily>* out);

}  // namespace stagewatch::exporters
