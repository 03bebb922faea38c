"""Stage drill-down: every signal of one stage."""

from .board import DRILLDOWN_UID, Queries, annotations, dashboard, variables
from .panels import (LIMIT_OVERRIDE, STATE_MAPPINGS, by, heatmap, hide_columns, instant_target,
                     row, stat, table, target, timeseries)


def stage_drilldown(cfg):
    q = Queries(cfg)
    I = "instance"
    L = "{{instance}}"
    p = []
    p.append(row("Memory"))
    p.append(timeseries(
        "Memory usage, working set and limit",
        "Memory charged to the stage's cgroups (page cache included), its working set (usage "
        "minus inactive file cache), its highest usage since the agent started, and the limit "
        "(dashed; absent while any cgroup of the stage is unlimited).",
        "bytes", [
            target(by(I, "sum", f"stagewatch_memory_usage_bytes{{{q.stage}}}"), f"usage {L}"),
            target(by(I, "sum", f"stagewatch_memory_working_set_bytes{{{q.stage}}}"),
                   f"working set {L}"),
            target(by(I, "max", f"stagewatch_memory_peak_bytes{{{q.stage}}}"), f"peak {L}"),
            target(by(I, "sum", f"stagewatch_memory_limit_bytes{{{q.stage}}}"), f"limit {L}"),
        ], overrides=[LIMIT_OVERRIDE]))
    p.append(timeseries(
        "Working set share of limit",
        "Working set divided by the memory limit; an OOM kill follows at 100%.",
        "percentunit", [target(f"stagewatch_memory_working_set_bytes{{{q.stage}}} / "
                               f"stagewatch_memory_limit_bytes{{{q.stage}}}", L)], w=6))
    p.append(timeseries(
        "Time to memory limit",
        "The agent's limit_eta forecast: seconds until the working set reaches the limit at "
        "its current steady growth. Present only while the stage keeps growing toward a limit.",
        "s", [target(f"stagewatch_memory_limit_eta_seconds{{{q.stage}}}", L)], w=6))
    p.append(timeseries(
        "Time near the limit",
        "Share of wall time with usage at or above memory.near_limit_fraction (default 0.9) of "
        "the limit.",
        "percentunit", [target(by(I, "sum", q.rate("stagewatch_memory_near_limit_seconds_total")),
                               L)], w=6, max_=1))
    p.append(timeseries(
        "Swap used",
        "Swap used by the stage's cgroups (v1 with memsw accounting, v2 memory.swap.current).",
        "bytes", [target(by(I, "sum", f"stagewatch_memory_swap_bytes{{{q.stage}}}"), L)], w=6))
    p.append(timeseries(
        "Memory events",
        "Memory events per second: v2 memory.events (low, high, max, oom, oom_kill, "
        "oom_group_kill), v1 failcnt and oom_kill.",
        "ops", [target(by("instance, event", "sum", q.rate("stagewatch_memory_events_total")),
                       "{{event}} " + L)]))

    p.append(row("OOM kills"))
    p.append(timeseries(
        "OOM kills",
        "The stage's processes OOM-killed by the kernel or a user-space killer (traced), and "
        "the kernel's own cgroup oom_kill count beside them.",
        "short", [
            target(by("instance, kind", "sum", q.increase("stagewatch_oom_kills_total")),
                   "{{kind}} " + L),
            target(by(I, "sum", q.increase("stagewatch_oom_kills_cgroup_total")),
                   f"cgroup oom_kill count {L}"),
        ], bars=True, decimals=0))
    p.append(stat(
        "OOM kills in range",
        "OOM kills of the stage's processes over the dashboard's time range.",
        "short", [instant_target(
            "round(" + by(I, "sum", q.increase("stagewatch_oom_kills_total", window="$__range"))
            + ")", L)], w=4, h=8, decimals=0))
    p.append(stat(
        "Last OOM kill",
        "When a process of the stage was last OOM-killed; empty when none since the agent "
        "started.",
        "dateTimeFromNow", [target(
            by(I, "max", f"stagewatch_oom_last_kill_timestamp_seconds{{{q.stage}}}") +
            " * 1000 > 0", L)], w=4, h=8, red_from=None, color_mode="value"))
    p.append(stat(
        "Untraced OOM kills",
        "The kernel's cgroup oom_kill count minus traced kills: non-zero means lost or "
        "unattributed OOM events.",
        "short", [target(by(I, "max", f"stagewatch_oom_kills_mismatch{{{q.stage}}}"), L)],
        w=4, h=8, decimals=0))

    p.append(row("Memory pressure and reclaim"))
    p.append(timeseries(
        "Memory and I/O pressure (PSI)",
        "Share of wall time some (waiting) or all (stalled) of the stage's tasks were held up "
        "on memory or I/O (cgroup2 memory.pressure, io.pressure).",
        "percentunit", [
            target(by(I, "sum", q.rate("stagewatch_pressure_memory_waiting_seconds_total")),
                   f"memory some {L}"),
            target(by(I, "sum", q.rate("stagewatch_pressure_memory_stalled_seconds_total")),
                   f"memory full {L}"),
            target(by(I, "sum", q.rate("stagewatch_pressure_io_waiting_seconds_total")),
                   f"io some {L}"),
            target(by(I, "sum", q.rate("stagewatch_pressure_io_stalled_seconds_total")),
                   f"io full {L}"),
        ], w=8))
    p.append(heatmap(
        "Reclaim stall duration",
        "How long each direct or cgroup reclaim pass held up a task of the stage: the "
        "distribution per interval.",
        by("le", "sum", q.rate("stagewatch_memory_reclaim_stall_seconds_bucket")), w=8))
    p.append(timeseries(
        "Reclaim stalls",
        "Reclaim passes per second that held up the stage's tasks, and the seconds per second "
        "they were held up (right axis).",
        "ops", [
            target(by(I, "sum", q.rate("stagewatch_memory_reclaim_stall_seconds_count")),
                   f"stalls {L}"),
            target(by(I, "sum", q.rate("stagewatch_memory_reclaim_stall_seconds_sum")),
                   f"stall time {L}"),
        ], w=8, overrides=[{
            "matcher": {"id": "byRegexp", "options": "stall time.*"},
            "properties": [{"id": "unit", "value": "s"},
                           {"id": "custom.axisPlacement", "value": "right"}]}]))

    p.append(row("Page faults"))
    p.append(timeseries(
        "Page faults",
        "Page faults per second: major ones waited for I/O, minor ones did not.",
        "ops", [target(by("instance, fault_type", "sum", q.rate("stagewatch_page_faults_total")),
                       "{{fault_type}} " + L)]))
    p.append(timeseries(
        "Share of faults that are major",
        "Major page faults as a share of all page faults: how much of what the stage touches "
        "memory could not keep.",
        "percentunit", [target(
            by(I, "sum", q.rate("stagewatch_page_faults_total", extra='fault_type="major"')) +
            " / " + by(I, "sum", q.rate("stagewatch_page_faults_total")), L)], max_=1))

    p.append(row("CPU"))
    p.append(heatmap(
        "Run-queue latency",
        "How long the stage's tasks waited between becoming runnable and getting a CPU: the "
        "distribution per interval.",
        by("le", "sum", q.rate("stagewatch_runqueue_latency_seconds_bucket"))))
    p.append(timeseries(
        "Run-queue latency quantiles",
        "50th, 90th and 99th percentile of the wait for a CPU.",
        "s", [target(q.quantile(level, "stagewatch_runqueue_latency_seconds", I),
                     f"p{int(level * 100)} {L}")
              for level in (0.99, 0.9, 0.5)]))
    p.append(timeseries(
        "Preempted by",
        "Preemptions per second of the stage's runnable tasks, by the stage whose task took "
        "the CPU.",
        "ops", [target(by("instance, preempting_stage", "sum",
                          q.rate("stagewatch_cpu_preemptions_total")),
                       "by {{preempting_stage}} " + L)], w=8))
    p.append(timeseries(
        "Preempts",
        "Preemptions per second in which a task of this stage took the CPU from a runnable "
        "task of another stage (or of its own).",
        "ops", [target(by("instance, pipeline_stage", "sum", q.rate(
            "stagewatch_cpu_preemptions_total",
            sel=f'{q.agent}, preempting_stage=~"$pipeline_stage"')),
            "{{pipeline_stage}} " + L)], w=8))
    p.append(timeseries(
        "Context switches",
        "Switches out of the stage's tasks per second: voluntary (blocked) and nonvoluntary "
        "(preempted while runnable).",
        "ops", [target(by("instance, ctxswitchtype", "sum",
                          q.rate("stagewatch_context_switches_total")),
                       "{{ctxswitchtype}} " + L)], w=8))
    p.append(timeseries(
        "CPU usage: traced and charged",
        "CPUs' worth of on-CPU time: traced per context switch by the agent, and as charged by "
        "the kernel (cpuacct.usage / cpu.stat usage_usec). The two should agree.",
        "short", [
            target(by(I, "sum", q.rate("stagewatch_cpu_seconds_total")), f"traced {L}"),
            target(by(I, "sum", q.rate("stagewatch_cgroup_cpu_usage_seconds_total")),
                   f"charged {L}"),
        ], w=8))
    p.append(timeseries(
        "CPU throttling",
        "Share of CFS bandwidth periods in which the stage was throttled by its CPU limit, and "
        "the seconds per second it spent throttled (right axis).",
        "percentunit", [
            target(by(I, "sum", q.rate("stagewatch_cpu_cfs_throttled_periods_total")) + " / " +
                   by(I, "sum", q.rate("stagewatch_cpu_cfs_periods_total")),
                   f"throttled periods {L}"),
            target(by(I, "sum", q.rate("stagewatch_cpu_cfs_throttled_seconds_total")),
                   f"throttled time {L}"),
        ], w=8, overrides=[{
            "matcher": {"id": "byRegexp", "options": "throttled time.*"},
            "properties": [{"id": "unit", "value": "s"},
                           {"id": "custom.axisPlacement", "value": "right"}]}]))
    p.append(timeseries(
        "CPU pressure (PSI)",
        "Share of wall time some (waiting) or all (stalled) of the stage's tasks were waiting "
        "for a CPU (cgroup2 cpu.pressure).",
        "percentunit", [
            target(by(I, "sum", q.rate("stagewatch_pressure_cpu_waiting_seconds_total")),
                   f"some {L}"),
            target(by(I, "sum", q.rate("stagewatch_pressure_cpu_stalled_seconds_total")),
                   f"full {L}"),
        ], w=8))

    p.append(row("Placement"))
    p.append(timeseries(
        "CPU migrations",
        "Times per second the stage's tasks moved to another CPU: within their NUMA node, or "
        "across nodes (each cross-node move leaves the caches and, often, the memory behind).",
        "ops", [target(by("instance, scope", "sum", q.rate("stagewatch_cpu_migrations_total")),
                       "{{scope}} " + L)], w=8))
    p.append(timeseries(
        "CPU time by NUMA node",
        "CPUs' worth of the stage's on-CPU time, by the NUMA node of the CPU it ran on "
        "(stacked: the total is the traced CPU usage).",
        "short", [target(by("instance, numa_node", "sum",
                            q.rate("stagewatch_cpu_node_seconds_total")),
                         "node {{numa_node}} " + L)], w=8, stack=True))
    p.append(timeseries(
        "Memory by NUMA node",
        "The stage's memory on each NUMA node (memory.numa_stat), anonymous and file cache "
        "(stacked). Compare with the nodes its CPU time runs on.",
        "bytes", [target(by("instance, numa_node, type", "sum",
                            f"stagewatch_memory_numa_bytes{{{q.stage}}}"),
                         "node {{numa_node}} {{type}} " + L)], w=8, stack=True))
    p.append(timeseries(
        "Remote memory share",
        "The part of the stage's memory on nodes other than those its CPU time ran on, weighted "
        "by that CPU time: 0 when the memory sits where the stage runs, 1 when none does; 0 on "
        "a one-node host.",
        "percentunit", [target(by(I, "max", f"stagewatch_memory_remote_ratio{{{q.stage}}}"),
                               L)], w=8, max_=1))
    p.append(table(
        "Cpuset",
        "The stage's effective cpuset as the kernel lists it: the CPUs and memory nodes its "
        "tasks may use, and how many CPUs that is.",
        "none", [instant_target(
            f"max by (instance, cpus, mems) (stagewatch_cpuset_info{{{q.stage}}}\n"
            f"* on (instance, job, pipeline, pipeline_stage) group_left\n"
            f"stagewatch_cpuset_cpus{{{q.stage}}})", fmt="table")],
        [hide_columns("Time", rename={"Value": "CPU count"})], w=8, decimals=0))
    p.append(timeseries(
        "Shared CPUs",
        "CPUs of the stage's cpuset that another pinned stage's cpuset also holds. Empty when "
        "the stage runs on every CPU or shares none: \"pinned apart\" is an empty panel.",
        "short", [target(by("instance, other_stage", "max",
                            f"stagewatch_cpuset_shared_cpus{{{q.stage}}}"),
                         "with {{other_stage}} " + L)], w=8, step=True, decimals=0))

    p.append(row("Tasks"))
    p.append(timeseries(
        "Tasks by state",
        "The stage's tasks by state: running, runnable (waiting for a CPU), uninterruptible, "
        "sleeping, stopped, zombie.",
        "short", [target(by("instance, state", "sum", f"stagewatch_tasks{{{q.stage}}}"),
                         "{{state}} " + L)], w=16, stack=True))
    p.append(timeseries(
        "Processes exited",
        "Processes of the stage that exited, per second.",
        "ops", [target(by(I, "sum", q.rate("stagewatch_processes_exited_total")), L)], w=8))

    p.append(row("Anomalies"))
    p.append(table(
        "Anomaly detectors",
        "Every anomaly detector of the stage at the end of the time range: FIRING or ok.",
        "none", [instant_target(f"max by (rule) (stagewatch_anomaly_active{{{q.stage}}})",
                                fmt="table")],
        [hide_columns("Time", rename={"rule": "anomaly", "Value": "state"})], w=6,
        overrides=[{"matcher": {"id": "byName", "options": "state"},
                    "properties": [{"id": "mappings", "value": STATE_MAPPINGS},
                                   {"id": "custom.cellOptions",
                                    "value": {"type": "color-text"}}]}]))
    p.append(timeseries(
        "Anomaly state",
        "1 while the detector (rule) fires for the stage: memory climb, limit ETA, pressure "
        "spike, fault storm, CPU starvation, OOM kill (held for anomalies.oom_kill.hold).",
        "short", [target(by("instance, rule", "max", f"stagewatch_anomaly_active{{{q.stage}}}"),
                         "{{rule}} " + L)], w=10, max_=1, step=True, decimals=0))
    p.append(timeseries(
        "Anomalies raised",
        "Times each detector started firing for the stage.",
        "short", [target(by("instance, rule", "sum", q.increase("stagewatch_anomalies_total")),
                         "{{rule}} " + L)], w=8, bars=True, decimals=0))
    return dashboard(
        DRILLDOWN_UID, "stagewatch / Stage drill-down",
        "Every signal of one pipeline stage, chosen with the pipeline_stage variable, and its "
        "anomalies.",
        p, variables(q, "single"), annotations(q))


# ---- Agent health ----------------------------------------------------------------------------
