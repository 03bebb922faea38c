"""Pipeline overview: every stage side by side."""

from .board import OVERVIEW_UID, Queries, annotations, dashboard, drilldown_link, variables
from .panels import (LIMIT_OVERRIDE, by, heatmap, hide_columns, instant_target, row, stat, table,
                     target, timeseries)
from .runs_panels import duration_quantiles, lost_by_cause, pipeline_nights, recent_runs

IS = "instance, pipeline_stage"
ST = "{{pipeline_stage}} ({{instance}})"
LINK = [drilldown_link()]


def pipeline_overview(cfg):
    q = Queries(cfg)
    p = []
    p.append(row("Memory against limit"))
    p.append(timeseries(
        "Memory usage against limit",
        "Memory charged to each stage's cgroups (memory.usage_in_bytes / memory.current, page "
        "cache included), its working set (usage minus inactive file cache: what the kernel "
        "cannot simply drop), and the stage's memory limit as a dashed line. The limit is "
        "absent while any cgroup of the stage is unlimited.",
        "bytes", [
            target(by(IS, "sum", f"stagewatch_memory_usage_bytes{{{q.stage}}}"),
                   "{{pipeline_stage}} usage ({{instance}})"),
            target(by(IS, "sum", f"stagewatch_memory_working_set_bytes{{{q.stage}}}"),
                   "{{pipeline_stage}} working set ({{instance}})"),
            target(by(IS, "sum", f"stagewatch_memory_limit_bytes{{{q.stage}}}"),
                   "{{pipeline_stage}} limit ({{instance}})"),
        ], overrides=[LIMIT_OVERRIDE], links=LINK))
    p.append(timeseries(
        "Working set share of limit",
        "Working set divided by the memory limit. Past about 90% the kernel reclaims on "
        "every allocation and the stage slows down; at 100% an OOM kill follows. Only stages "
        "with a limit appear.",
        "percentunit", [
            target(f"stagewatch_memory_working_set_bytes{{{q.stage}}} / "
                   f"stagewatch_memory_limit_bytes{{{q.stage}}}", ST),
        ], links=LINK))
    p.append(timeseries(
        "Time to memory limit",
        "The agent's forecast (limit_eta detector): seconds until the working set reaches "
        "the limit at its current steady growth, from a least-squares fit. Present only while "
        "a stage with a limit keeps growing; a falling line is an OOM kill coming.",
        "s", [target(f"stagewatch_memory_limit_eta_seconds{{{q.stage}}}", ST)],
        w=8, links=LINK))
    p.append(timeseries(
        "Time near the limit",
        "Share of wall time each stage spent with usage at or above memory.near_limit_fraction "
        "(default 0.9) of its limit, sampled every memory.sample_interval.",
        "percentunit", [target(by(IS, "sum", q.rate("stagewatch_memory_near_limit_seconds_total")),
                               ST)], w=8, max_=1, links=LINK))
    p.append(timeseries(
        "Peak memory and swap",
        "Highest memory usage of each stage since the agent started, and the swap it uses "
        "now (cgroup v1 with memsw accounting, or v2 memory.swap.current).",
        "bytes", [
            target(by(IS, "max", f"stagewatch_memory_peak_bytes{{{q.stage}}}"),
                   "{{pipeline_stage}} peak ({{instance}})"),
            target(by(IS, "sum", f"stagewatch_memory_swap_bytes{{{q.stage}}}"),
                   "{{pipeline_stage}} swap ({{instance}})"),
        ], w=8, links=LINK))

    p.append(row("OOM kills"))
    p.append(timeseries(
        "OOM kills",
        "Processes of each stage OOM-killed, by the kernel (traced at oom:mark_victim) or by a "
        "configured user-space killer, and the kernel's own per-cgroup oom_kill count beside "
        "them. Every kill is also an annotation on all time panels.",
        "short", [
            target(by("instance, pipeline_stage, kind", "sum",
                      q.increase("stagewatch_oom_kills_total")),
                   "{{pipeline_stage}} {{kind}} ({{instance}})"),
            target(by(IS, "sum", q.increase("stagewatch_oom_kills_cgroup_total")),
                   "{{pipeline_stage}} cgroup oom_kill count ({{instance}})"),
        ], bars=True, decimals=0, links=LINK))
    p.append(stat(
        "OOM kills in range",
        "OOM kills of each stage's processes over the dashboard's time range, kernel and "
        "user-space together.",
        "short", [instant_target(
            "round(" + by("pipeline_stage", "sum",
                          q.increase("stagewatch_oom_kills_total", window="$__range")) + ")",
            "{{pipeline_stage}}")], w=4, h=8, decimals=0))
    p.append(stat(
        "Last OOM kill",
        "When a process of each stage was last OOM-killed; stages without a kill since the "
        "agent started are not shown.",
        "dateTimeFromNow", [target(
            by("pipeline_stage", "max",
               f"stagewatch_oom_last_kill_timestamp_seconds{{{q.stage}}}") + " * 1000 > 0",
            "{{pipeline_stage}}")], w=4, h=8, red_from=None, color_mode="value"))
    p.append(stat(
        "Untraced OOM kills",
        "The kernel's cgroup oom_kill count minus the kills the agent traced. Non-zero means "
        "OOM events were lost or could not be attributed to the stage.",
        "short", [target(by("pipeline_stage", "max",
                            f"stagewatch_oom_kills_mismatch{{{q.stage}}}"), "{{pipeline_stage}}")],
        w=4, h=8, decimals=0))

    p.append(row("Runs"))
    p.append(recent_runs(q, q.stage, w=12))
    p.append(timeseries(
        "Runs ended, by verdict",
        "Runs of each stage that ended per interval, by verdict.",
        "short", [target(by("instance, pipeline_stage, verdict", "sum",
                            q.increase("stagewatch_runs_total")),
                         "{{pipeline_stage}} {{verdict}} ({{instance}})")],
        bars=True, decimals=0, links=LINK))
    p.append(lost_by_cause(q, q.stage))
    p.append(duration_quantiles(q, q.stage))
    p.append(pipeline_nights(q, q.pipeline))

    p.append(row("Memory pressure and reclaim"))
    p.append(timeseries(
        "Memory pressure (PSI)",
        "Share of wall time some (waiting) or all (stalled) of each stage's tasks were held up "
        "on memory: reclaim, swap-in, refaults (cgroup2 memory.pressure).",
        "percentunit", [
            target(by(IS, "sum", q.rate("stagewatch_pressure_memory_waiting_seconds_total")),
                   "{{pipeline_stage}} some ({{instance}})"),
            target(by(IS, "sum", q.rate("stagewatch_pressure_memory_stalled_seconds_total")),
                   "{{pipeline_stage}} full ({{instance}})"),
        ], w=8, links=LINK))
    p.append(timeseries(
        "Reclaim stall time",
        "Seconds per second that each stage's tasks spent held up in direct or cgroup memory "
        "reclaim (traced), summed over tasks.",
        "s", [target(by(IS, "sum", q.rate("stagewatch_memory_reclaim_stall_seconds_sum")), ST)],
        w=8, links=LINK))
    p.append(timeseries(
        "Reclaim stalls",
        "Reclaim passes per second that held up a task of each stage.",
        "ops", [target(by(IS, "sum", q.rate("stagewatch_memory_reclaim_stall_seconds_count")), ST)],
        w=8, links=LINK))
    p.append(timeseries(
        "Memory events",
        "Memory events per second: cgroup v2 memory.events (low, high, max, oom, oom_kill, "
        "oom_group_kill), cgroup v1 failcnt (allocations that hit the limit) and oom_kill.",
        "ops", [target(by("instance, pipeline_stage, event", "sum",
                          q.rate("stagewatch_memory_events_total")),
                       "{{pipeline_stage}} {{event}} ({{instance}})")], links=LINK))
    p.append(timeseries(
        "I/O pressure (PSI)",
        "Share of wall time some (waiting) or all (stalled) of each stage's tasks waited for "
        "I/O (cgroup2 io.pressure).",
        "percentunit", [
            target(by(IS, "sum", q.rate("stagewatch_pressure_io_waiting_seconds_total")),
                   "{{pipeline_stage}} some ({{instance}})"),
            target(by(IS, "sum", q.rate("stagewatch_pressure_io_stalled_seconds_total")),
                   "{{pipeline_stage}} full ({{instance}})"),
        ], links=LINK))

    p.append(row("Page faults"))
    p.append(timeseries(
        "Major page faults",
        "Page faults per second that waited for I/O: code or data the stage's memory could "
        "not keep, read back from disk.",
        "ops", [target(by(IS, "sum", q.rate("stagewatch_page_faults_total",
                                          extra='fault_type="major"')), ST)], links=LINK))
    p.append(timeseries(
        "Minor page faults",
        "Page faults per second served without I/O (first touch of new memory, page cache "
        "hits, copy-on-write).",
        "ops", [target(by(IS, "sum", q.rate("stagewatch_page_faults_total",
                                          extra='fault_type="minor"')), ST)], links=LINK))

    p.append(row("Run-queue latency"))
    p.append(heatmap(
        "Run-queue latency: $heatmap_stage",
        "How long the tasks of one stage (the Heatmap stage variable) waited between becoming "
        "runnable and getting a CPU: the distribution per interval, from the agent's histogram, "
        "over the selected instances.",
        by("le", "sum", q.rate("stagewatch_runqueue_latency_seconds_bucket",
                               sel=f'{q.pipeline}, pipeline_stage=~"$heatmap_stage"'))))
    p.append(timeseries(
        "Run-queue latency p50 and p99 by stage",
        "Median and 99th percentile of the wait for a CPU after waking up, for every selected "
        "stage. A p99 above ~50 ms for minutes is CPU starvation.",
        "s", [
            target(q.quantile(0.99, "stagewatch_runqueue_latency_seconds", IS),
                   "{{pipeline_stage}} p99 ({{instance}})"),
            target(q.quantile(0.5, "stagewatch_runqueue_latency_seconds", IS),
                   "{{pipeline_stage}} p50 ({{instance}})"),
        ], links=LINK))

    p.append(row("CPU: preemption, context switches, usage and throttling"))
    p.append(table(
        "Who preempts whom",
        "Preemptions over the time range: a runnable task of the row's stage lost its CPU to a "
        "task of the column's stage.",
        "short", [instant_target(
            "round(" + by("pipeline_stage, preempting_stage", "sum",
                          q.increase("stagewatch_cpu_preemptions_total", window="$__range")) + ")",
            fmt="table")],
        [{"id": "groupingToMatrix", "options": {"columnField": "preempting_stage",
                                                "rowField": "pipeline_stage",
                                                "valueField": "Value", "emptyValue": "zero"}}],
        decimals=0, cell="color-text"))
    p.append(timeseries(
        "Preemptions by preempting stage",
        "Preemptions per second: tasks of the preempting stage taking the CPU from runnable "
        "tasks of the preempted stage.",
        "ops", [target(by("instance, pipeline_stage, preempting_stage", "sum",
                          q.rate("stagewatch_cpu_preemptions_total")),
                       "{{preempting_stage}} preempts {{pipeline_stage}} ({{instance}})")],
        links=LINK))
    p.append(timeseries(
        "Context switches",
        "Switches out of each stage's tasks per second: voluntary (the task blocked) and "
        "nonvoluntary (still runnable, preempted).",
        "ops", [target(by("instance, pipeline_stage, ctxswitchtype", "sum",
                          q.rate("stagewatch_context_switches_total")),
                       "{{pipeline_stage}} {{ctxswitchtype}} ({{instance}})")], w=8, links=LINK))
    p.append(timeseries(
        "CPU usage",
        "CPUs' worth of on-CPU time of each stage, traced per context switch.",
        "short", [target(by(IS, "sum", q.rate("stagewatch_cpu_seconds_total")), ST)],
        w=8, links=LINK))
    p.append(timeseries(
        "CPU throttling",
        "Share of CFS bandwidth periods in which each stage was throttled by its CPU limit "
        "(cpu.stat). Only stages with a CPU limit appear.",
        "percentunit", [target(
            by(IS, "sum", q.rate("stagewatch_cpu_cfs_throttled_periods_total")) + " / " +
            by(IS, "sum", q.rate("stagewatch_cpu_cfs_periods_total")), ST)], w=8, max_=1, links=LINK))
    p.append(timeseries(
        "Throttled time",
        "Seconds per second each stage's cgroups spent throttled by their CPU limit.",
        "s", [target(by(IS, "sum", q.rate("stagewatch_cpu_cfs_throttled_seconds_total")), ST)],
        w=8, links=LINK))
    p.append(timeseries(
        "CPU pressure (PSI)",
        "Share of wall time some (waiting) or all (stalled) of each stage's tasks were "
        "runnable but waiting for a CPU (cgroup2 cpu.pressure).",
        "percentunit", [
            target(by(IS, "sum", q.rate("stagewatch_pressure_cpu_waiting_seconds_total")),
                   "{{pipeline_stage}} some ({{instance}})"),
            target(by(IS, "sum", q.rate("stagewatch_pressure_cpu_stalled_seconds_total")),
                   "{{pipeline_stage}} full ({{instance}})"),
        ], w=8, links=LINK))
    p.append(timeseries(
        "Processes exited",
        "Processes of each stage that exited, per second (OOM-killed ones included).",
        "ops", [target(by(IS, "sum", q.rate("stagewatch_processes_exited_total")), ST)],
        w=8, links=LINK))

    p.append(row("Tasks"))
    p.append(timeseries(
        "Tasks by state",
        "Tasks of each stage by state: running (on a CPU), runnable (waiting for one), "
        "uninterruptible (usually I/O), sleeping, stopped, zombie.",
        "short", [target(by("instance, pipeline_stage, state", "sum",
                            f"stagewatch_tasks{{{q.stage}}}"),
                         "{{pipeline_stage}} {{state}} ({{instance}})")], links=LINK))
    p.append(timeseries(
        "Tasks waiting for a CPU",
        "Runnable tasks of each stage that are not on a CPU.",
        "short", [target(by(IS, "sum", f'stagewatch_tasks{{{q.stage}, state="runnable"}}'), ST)],
        links=LINK))

    p.append(row("Anomalies"))
    p.append(stat(
        "Active anomalies",
        "Anomaly detectors firing now across the selected stages: memory climb, limit ETA, "
        "pressure spike, fault storm, CPU starvation, OOM kill.",
        "short", [target(f"sum(stagewatch_anomaly_active{{{q.stage}}})", "active")],
        w=4, h=8, decimals=0))
    p.append(table(
        "Active anomalies by stage and rule",
        "The stage and detector (rule) of every anomaly firing at the end of the time range. "
        "Anomalies are also annotations on all time panels.",
        "none", [instant_target(f"stagewatch_anomaly_active{{{q.stage}}} == 1", fmt="table")],
        [hide_columns("Time", "Value", "__name__", "job",
                      rename={"pipeline_stage": "stage", "rule": "anomaly"})], w=8))
    p.append(timeseries(
        "Anomalies raised",
        "Times each detector started firing for each stage; every OOM kill counts for rule "
        "oom_kill.",
        "short", [target(by("instance, pipeline_stage, rule", "sum",
                            q.increase("stagewatch_anomalies_total")),
                         "{{pipeline_stage}} {{rule}} ({{instance}})")],
        bars=True, decimals=0, links=LINK))
    return dashboard(
        OVERVIEW_UID, "stagewatch / Pipeline overview",
        "All pipeline stages side by side, one row per concern: memory against limit, OOM "
        "kills, runs (time lost by cause, wall time, pipeline runs), pressure and reclaim, page "
        "faults, run-queue latency, preemption and CPU, task states, anomalies.",
        p, variables(q, "multi", heatmap_stage=True), annotations(q))


# ---- Stage drill-down ------------------------------------------------------------------------
