// memory: reclaim stalls and page faults from the memory probe; usage, limits and near-limit
// time from the sampler's snapshot; task states from the task_states iterator, else /proc.
#include "cgroup/layout.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "exporters/metrics/memory_collector.h"
#include "signals/memory/memory_tracker.h"
#include "signals/memory/memory_probe.h"
#include "signals/memory/task_states_probe.h"
#include "signals/modules.h"

namespace stagewatch {
namespace {

std::vector<ProbeStatus> TryProbes(const ProbeTrial& t) {
  std::vector<ProbeStatus> all =
      StatusesOf(MemoryProbe::Start({.key = t.key, .features = t.features}));
  for (ProbeStatus& s : StatusesOf(TaskStatesProbe::Start(
           {.enabled = t.task_iterator, .key = t.key, .features = t.features}))) {
    all.push_back(std::move(s));
  }
  return all;
}

std::vector<ProbeStatus> NotStarted(const std::string& why) {
  std::vector<ProbeStatus> all = MemoryProbe::NotStarted(why);
  for (ProbeStatus& s : TaskStatesProbe::NotStarted(why)) all.push_back(std::move(s));
  return all;
}

std::unique_ptr<exporters::Collector> Start(const SignalContext& ctx) {
  RunningSignals& r = *ctx.running;
  r.memory_probe = Adopt(MemoryProbe::Start({.key = ctx.layout.key, .features = ctx.features}),
                         &r.probe_reports);
  if (r.memory_probe) {
    r.memory = std::make_unique<MemoryTracker>(r.memory_probe.get(), ctx.namer);
  }
  r.task_states_probe = Adopt(TaskStatesProbe::Start({.enabled = ctx.config.memory.task_iterator,
                                                      .key = ctx.layout.key,
                                                      .features = ctx.features}),
                              &r.probe_reports);
  // Listed after "sched", whose collection refreshes the tasks running right now.
  return std::make_unique<exporters::MemoryCollector>(exporters::MemoryCollectorSources{
      .tracker = r.memory.get(), .probe = r.memory_probe.get(), .sampler = ctx.sampler,
      .sched = r.sched.get(), .namer = ctx.namer, .task_states = r.task_states_probe.get(),
      .layout = ctx.layout});
}

}  // namespace

Signal MemorySignal() {
  return {.name = "memory",
          .collector_flag = true,
          .try_probes = TryProbes,
          .not_started = NotStarted,
          .start = Start,
          .adds_collector = true,
          .snapshot_parts = kMemoryPart};
}

}  // namespace stagewatch
