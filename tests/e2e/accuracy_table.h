// The accuracy table: every metric family the agent exports, the test that reads it from
// /metrics, and the ground truth that test compares it with. accuracy_table_test.cc fails
// when a family is exported without a row here, when a row's test does not exist or never
// names the family, or when the family is missing from docs/metrics.md.
#pragma once

#include <string_view>

namespace stagewatch::accuracy {

struct AccuracyRow {
  std::string_view family;  // as on a `# TYPE` line
  std::string_view test;    // "<kind>:<Suite>.<Name>", kind = e2e | privileged | unit
  std::string_view truth;   // what the test compares the exported value with
};

inline constexpr AccuracyRow kAccuracyTable[] = {
    // ---- CPU (collector sched) ----
    {"stagewatch_context_switches_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "per ctxswitchtype, wait4 rusage ru_nvcsw / ru_nivcsw summed over every process of the stage"},
    {"stagewatch_processes_exited_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "the processes the test started and reaped in the stage"},
    {"stagewatch_cpu_seconds_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "the cgroup's own cpuacct.usage (v2 cpu.stat usage_usec); wait4 rusage utime + stime of its processes bounds it from above"},
    {"stagewatch_cgroup_cpu_usage_seconds_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "cpuacct.usage (v2 cpu.stat usage_usec)"},
    {"stagewatch_cpu_cfs_periods_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "cpu.stat nr_periods, read before and after the scrape"},
    {"stagewatch_cpu_cfs_throttled_periods_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "cpu.stat nr_throttled, read before and after the scrape"},
    {"stagewatch_cpu_cfs_throttled_seconds_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "cpu.stat throttled_time (v2 throttled_usec)"},
    {"stagewatch_pressure_cpu_waiting_seconds_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "cpu.pressure some total"},
    {"stagewatch_pressure_cpu_stalled_seconds_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "cpu.pressure full total"},
    {"stagewatch_pressure_memory_waiting_seconds_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "memory.pressure some total"},
    {"stagewatch_pressure_memory_stalled_seconds_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "memory.pressure full total"},
    {"stagewatch_pressure_io_waiting_seconds_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "io.pressure some total, of O_DIRECT synced writes (and apart from memory pressure)"},
    {"stagewatch_pressure_io_stalled_seconds_total", "e2e:AccuracyE2E.SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel",
     "io.pressure full total"},
    {"stagewatch_runqueue_latency_seconds", "e2e:SchedE2E.AStarvedStageShowsLatencyPreemptionAndThrottling",
     "a stage starved behind another on one CPU waits for a good part of 2 s (sum > 0.1 s)"},
    {"stagewatch_cpu_preemptions_total", "e2e:SchedE2E.AStarvedStageShowsLatencyPreemptionAndThrottling",
     "preempted by the stage sharing its CPU (> 10 times in 2 s)"},
    {"stagewatch_sched_map_overflows_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "0: the host holds fewer cgroups than the maps' entries"},
    // ---- placement (collector placement) ----
    {"stagewatch_cpu_migrations_total", "e2e:AccuracyE2E.MigrationsAndCpuTimeByNodeMatchTheKernel",
     "per scope, se.nr_migrations (/proc/<pid>/sched) of tasks moving themselves between CPUs, "
     "each move split by the nodes of its two CPUs, within 2% (cross_node 0 on a one-node host)"},
    {"stagewatch_cpu_node_seconds_total", "e2e:AccuracyE2E.MigrationsAndCpuTimeByNodeMatchTheKernel",
     "per numa_node, the tasks' /proc/<pid>/schedstat CPU time split by the node each was pinned "
     "to, within 5%"},
    {"stagewatch_placement_map_overflows_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "0: the host holds fewer cgroups than the map's entries"},
    // ---- memory (collector memory) ----
    {"stagewatch_tasks", "e2e:AccuracyE2E.TaskStatesMatchProc",
     "per state, the letters in /proc/<tid>/stat of the tasks the cgroup lists"},
    {"stagewatch_page_faults_total", "e2e:PageFaultsE2E.FromMemcgTheyMatchMemoryStatAndGetrusage",
     "memory.stat total_pgfault (v2 pgfault) and the process's getrusage minflt+majflt within "
     "2%, from each source (FromBpf... the same; MemoryE2E the default under a limit)"},
    {"stagewatch_memory_reclaim_stall_seconds", "e2e:AccuracyE2E.MemoryEventsSwapAndReclaimStallsMatchTheCgroupFiles",
     "above 0 and at most the memory.pressure some total of the one task that reclaimed"},
    {"stagewatch_memory_usage_bytes", "e2e:MemoryE2E.AStageNearItsLimitShowsUsageLimitNearLimitTimePeakEventsAndTasks",
     "memory.usage_in_bytes (v2 memory.current)"},
    {"stagewatch_memory_working_set_bytes", "e2e:MemoryE2E.AStageNearItsLimitShowsUsageLimitNearLimitTimePeakEventsAndTasks",
     "usage minus memory.stat inactive_file"},
    {"stagewatch_memory_limit_bytes", "e2e:LimitDomainE2E.TwoLimitedRunsTheOneCloserToItsLimitGivesLimitAndHeadroom",
     "memory.limit_in_bytes (v2 memory.max) of the domain closest to its limit"},
    {"stagewatch_memory_headroom_bytes", "e2e:LimitDomainE2E.TwoLimitedRunsTheOneCloserToItsLimitGivesLimitAndHeadroom",
     "that domain's limit minus its usage file"},
    {"stagewatch_memory_limit_domains", "e2e:LimitDomainE2E.TwoLimitedRunsTheOneCloserToItsLimitGivesLimitAndHeadroom",
     "the limited cgroups the test made plus the top"},
    {"stagewatch_memory_swap_bytes", "e2e:AccuracyE2E.MemoryEventsSwapAndReclaimStallsMatchTheCgroupFiles",
     "v2 memory.swap.current, v1 memsw usage minus usage"},
    {"stagewatch_memory_peak_bytes", "e2e:MemoryE2E.AStageNearItsLimitShowsUsageLimitNearLimitTimePeakEventsAndTasks",
     "memory.max_usage_in_bytes (v2 memory.peak)"},
    {"stagewatch_memory_near_limit_seconds_total", "e2e:MemoryE2E.AStageNearItsLimitShowsUsageLimitNearLimitTimePeakEventsAndTasks",
     "the wall time the workload held above 90% of its limit"},
    {"stagewatch_memory_events_total", "e2e:AccuracyE2E.MemoryEventsSwapAndReclaimStallsMatchTheCgroupFiles",
     "every key of v2 memory.events; v1 memory.failcnt and memory.oom_control oom_kill"},
    {"stagewatch_memory_limit_domain_errors_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "overflow: the limited cgroups beyond memory.max_limit_domains, at least once per sample"},
    {"stagewatch_memory_map_overflows_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "0: the host holds fewer cgroups than the maps' entries"},
    {"stagewatch_memory_limit_eta_seconds", "e2e:AccuracyE2E.LimitEtaFollowsAKnownClimbAndRaisesItsAnomaly",
     "(limit - usage file) / the workload's climb rate"},
    // ---- OOM kills (collector oom) ----
    {"stagewatch_oom_kills_total", "e2e:AccuracyE2E.OomKillsByKindCgroupCountsAnomalyAndMismatchSign",
     "kind=kernel: the cgroups' oom_kill counts; kind=userspace: SIGKILLs the configured killer sent"},
    {"stagewatch_oom_kills_cgroup_total", "e2e:AccuracyE2E.OomKillsByKindCgroupCountsAnomalyAndMismatchSign",
     "memory.oom_control oom_kill (v2 memory.events.local) of the cgroups the agent could read"},
    {"stagewatch_oom_kills_mismatch", "e2e:AccuracyE2E.OomKillsByKindCgroupCountsAnomalyAndMismatchSign",
     "0 after a traced kill in a cgroup removed at once (the victim's count is read at the kill); the sign: unit:CollectorFieldsTest.OomKillsByKindAndTheMismatchSign"},
    {"stagewatch_oom_last_kill_timestamp_seconds", "e2e:AccuracyE2E.OomKillsByKindCgroupCountsAnomalyAndMismatchSign",
     "the wall clock around the kernel kill"},
    // ---- placement (collector placement): memory and cpusets, from the sampler's snapshot
    // through AppendPlacementMemorySeries (the collector adds nothing to them) ----
    {"stagewatch_memory_numa_bytes", "privileged:PlacementReadersTest.SamplerPutsEachStagesNodesAndCpusetInTheSnapshotAndItsSeries",
     "memory.stat anon (v1 total_rss) of a stage whose task touched 64 MiB, summed over the "
     "nodes, within 3%; at least 90% of it on the node of the CPU the task ran on"},
    {"stagewatch_memory_remote_ratio", "e2e:AccuracyE2E.RemoteShareIsTheMemoryOffTheNodeItsCpuTimeRanOn",
     "1 - the part of memory.numa_stat on the node of the one CPU the stage ran on, within "
     "0.05: at most 0.1 with its memory bound there, at least 0.9 bound to another node (that "
     "case on a two-node machine: the VM stage)"},
    {"stagewatch_cpuset_cpus", "privileged:PlacementReadersTest.SamplerPutsEachStagesNodesAndCpusetInTheSnapshotAndItsSeries",
     "the number of CPUs in /proc/<pid>/status Cpus_allowed_list of a task of the stage"},
    {"stagewatch_cpuset_info", "privileged:PlacementReadersTest.SamplerPutsEachStagesNodesAndCpusetInTheSnapshotAndItsSeries",
     "/proc/<pid>/status Cpus_allowed_list and Mems_allowed_list of a task of the stage"},
    {"stagewatch_cpuset_shared_cpus", "unit:PlacementMemorySeriesTest.SharedCpusOnlyBetweenPinnedStagesThatOverlap",
     "the CPUs in both stages' cpusets, only for pinned stages that share some"},
    // ---- anomalies ----
    {"stagewatch_anomalies_total", "e2e:AccuracyE2E.OomKillsByKindCgroupCountsAnomalyAndMismatchSign",
     "rule=oom_kill: the kills the test made, both kinds; rule=limit_eta: one climb"},
    {"stagewatch_anomaly_active", "e2e:AccuracyE2E.LimitEtaFollowsAKnownClimbAndRaisesItsAnomaly",
     "1 while the climb heads for the limit, and after a kill"},
    // ---- runs (collector runs) ----
    {"stagewatch_runs_total", "e2e:RunsE2E.ACgroupMadeBeneathAStageIsARunRecordedAndClosedAtRmdir",
     "the runs the test made and ended, by their verdict"},
    {"stagewatch_run_info", "e2e:RunsE2E.ACgroupMadeBeneathAStageIsARunRecordedAndClosedAtRmdir",
     "the run id the test's cgroup was recorded under"},
    {"stagewatch_run_duration_seconds",
     "e2e:BaselineE2E.AHoggedRunIsPutDownToWaitingForCpuBehindTheHogsStage",
     "count and sum: the ledger's runs of the stage and their wall times"},
    {"stagewatch_run_lost_seconds_total",
     "e2e:BaselineE2E.AHoggedRunIsPutDownToWaitingForCpuBehindTheHogsStage",
     "cause=cpu_wait: the split `runs show --json` gives the hogged run"},
    // ---- the agent itself ----
    {"stagewatch_build_info", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "the version `stagewatch --version` prints, the libbpf this build links, and external_url "
     "equal to the --web.external-url the agent was started with"},
    {"stagewatch_probe_attached", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "`stagewatch features --json`: attached per probe"},
    {"stagewatch_probe_lost_events_total", "e2e:AgentE2E.OomKillsInStageTrainReachMetricsAndMatchTheKernel",
     "0 with every kill the test made delivered"},
    {"stagewatch_bpf_stats_enabled", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "the agent's --bpf.stats"},
    {"stagewatch_bpf_program_run_seconds_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "run_time_ns in /proc/<agent>/fdinfo of its program fds, read before and after the scrape"},
    {"stagewatch_bpf_program_runs_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "run_cnt in /proc/<agent>/fdinfo of its program fds, read before and after the scrape"},
    {"stagewatch_unknown_cgroup_events_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "NOT PROVEN: host-wide, other tests' dying cgroups count too; only its presence is checked"},
    {"stagewatch_cgroup_cache_rescans_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "1 walk at start with the lifecycle probe attached and nothing lost"},
    {"stagewatch_cgroup_cache_truncated", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "cgroups in the key hierarchy beyond cgroup.cache_max_entries (walked before and after), "
     "plus up to 10 made by other tests meanwhile"},
    {"stagewatch_stage_discovery_overflows_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "0 within discovery.max_stages, growing once a stage beyond it is made"},
    {"stagewatch_scrape_collector_duration_seconds", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "above 0 and at most the wall time of the scrape request"},
    {"stagewatch_scrape_collector_success", "e2e:AgentE2E.OomKillsInStageTrainReachMetricsAndMatchTheKernel",
     "1 for a collector that read everything"},
    {"stagewatch_alertmanager_requests_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "success: the batches a receiver accepted after an OOM kill; failure: pushes to a closed port"},
    {"stagewatch_alertmanager_alerts_dropped_total", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "0: every update of the kill's page was taken"},
    {"stagewatch_alertmanager_queue_length", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "0 before the kill and once its page was delivered"},
    {"stagewatch_alertmanager_last_success_timestamp_seconds", "e2e:AccuracyE2E.AgentSelfMetricsMatchTheKernel",
     "the receiver's clock at its first accepted batch; 0 for the closed port"},
    {"stagewatch_http_basic_auth_checks_total", "e2e:TlsAgent.AWrongPasswordFloodNeitherStopsScrapesNorHangs",
     "accepted: the scraper's one login; refused: within the flooding address's budget (10, then 1 a second of the flood)"},
    {"stagewatch_http_throttled_requests_total", "e2e:TlsAgent.AWrongPasswordFloodNeitherStopsScrapesNorHangs",
     "the 429 answers the flooding clients counted"},
    {"process_cpu_seconds_total", "e2e:AgentE2E.ProcessMetricsAgreeWithProc",
     "/proc/<agent>/stat utime + stime, read before and after the scrape"},
    {"process_resident_memory_bytes", "e2e:AgentE2E.ProcessMetricsAgreeWithProc",
     "/proc/<agent>/stat rss pages"},
    {"process_start_time_seconds", "e2e:AgentE2E.ProcessMetricsAgreeWithProc", "the wall clock at start"},
    {"process_open_fds", "e2e:AgentE2E.ProcessMetricsAgreeWithProc", "more than the BPF objects and socket"},
};

}  // namespace stagewatch::accuracy
