#!/usr/bin/env python3
"""Generates the stagewatch Grafana dashboards (dashboards/*.json) from this one description.

    dashboards/generate.py           rewrite the JSON files
    dashboards/generate.py --check   exit 1 if a JSON file differs from what would be written

Edit this file, not the JSON, then run it. Python standard library only. Metric names and
labels: docs/metrics.md; what each dashboard shows: docs/dashboards.md.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DS = {"type": "prometheus", "uid": "${datasource}"}
SCHEMA_VERSION = 39
TAGS = ["stagewatch", "ebpf", "pipelines"]

# Label selectors: every selector carries job and instance; per-stage ones the stage too.
AGENT = 'job=~"$job", instance=~"$instance"'
STAGE = 'job=~"$job", instance=~"$instance", pipeline_stage=~"$pipeline_stage"'
RI = "$__rate_interval"

DRILLDOWN_UID = "stagewatch-stage-drilldown"
# From a stage's series on the overview to that stage's drill-down, keeping time and variables.
DRILLDOWN_LINK = {
    "title": "Drill down into stage ${__field.labels.pipeline_stage}",
    "url": (f"/d/{DRILLDOWN_UID}/stagewatch-stage-drill-down?${{__url_time_range}}"
            "&${datasource:queryparam}&${job:queryparam}&${instance:queryparam}"
            "&var-pipeline_stage=${__field.labels.pipeline_stage}"),
}


# ---- variables and annotations ---------------------------------------------------------------


def datasource_variable():
    return {"name": "datasource", "label": "Data source", "type": "datasource",
            "query": "prometheus", "current": {}, "hide": 0, "includeAll": False,
            "multi": False, "options": [], "refresh": 1, "regex": "", "skipUrlSync": False}


def query_variable(name, label, query, multi=True, include_all=True):
    v = {"name": name, "label": label, "type": "query", "datasource": DS,
         "definition": query,
         "query": query,
         "current": {}, "hide": 0, "multi": multi, "includeAll": include_all,
         "options": [], "refresh": 2, "regex": "", "skipUrlSync": False, "sort": 1}
    if include_all:
        v["allValue"] = ".+"
    return v


def variables(stage=None):
    """stage: None (no stage variable), "multi" (all stages side by side) or "single"."""
    out = [
        datasource_variable(),
        query_variable("job", "Job", "label_values(stagewatch_build_info, job)"),
        query_variable("instance", "Instance",
                       'label_values(stagewatch_build_info{job=~"$job"}, instance)'),
    ]
    if stage:
        # stagewatch_anomaly_active has a series for every known stage, whatever collectors run.
        q = f'label_values(stagewatch_anomaly_active{{{AGENT}}}, pipeline_stage)'
        if stage == "multi":
            out.append(query_variable("pipeline_stage", "Pipeline stage", q))
        else:
            out.append(query_variable("pipeline_stage", "Pipeline stage", q,
                                      multi=False, include_all=False))
    return out


def annotations():
    return [
        {"name": "OOM kills", "datasource": DS, "enable": True, "hide": False,
         "iconColor": "red",
         "expr": (f"sum by (instance, pipeline_stage, kind) "
                  f"(increase(stagewatch_oom_kills_total{{{STAGE}}}[{RI}])) > 0"),
         "titleFormat": "OOM kill in {{pipeline_stage}}",
         "textFormat": "{{kind}} OOM kill of a process of stage {{pipeline_stage}} on {{instance}}",
         "tagKeys": "pipeline_stage,kind", "useValueForTime": False},
        {"name": "Anomalies", "datasource": DS, "enable": True, "hide": False,
         "iconColor": "orange",
         "expr": (f"max by (instance, pipeline_stage, rule) "
                  f"(stagewatch_anomaly_active{{{STAGE}}}) == 1"),
         "titleFormat": "Anomaly {{rule}} in {{pipeline_stage}}",
         "textFormat": "The agent's {{rule}} detector is firing for stage {{pipeline_stage}} on {{instance}}",
         "tagKeys": "pipeline_stage,rule", "useValueForTime": False},
    ]


# ---- panels ------------------------------------------------------------------------------------


def target(expr, legend="", **extra):
    t = {"datasource": DS, "expr": expr, "legendFormat": legend, "range": True,
         "instant": False, "editorMode": "code"}
    t.update(extra)
    return t


def instant_target(expr, legend="", fmt="time_series"):
    return target(expr, legend, range=False, instant=True, format=fmt)


def timeseries(title, description, unit, targets, w=12, h=8, bars=False, stack=False,
               min_=0, max_=None, overrides=(), links=False, step=False, decimals=None):
    custom = {
        "drawStyle": "bars" if bars else "line",
        "lineInterpolation": "stepAfter" if step else "linear",
        "lineWidth": 1, "fillOpacity": 80 if bars else 10, "gradientMode": "none",
        "showPoints": "never", "spanNulls": False, "pointSize": 4,
        "stacking": {"mode": "normal" if stack else "none", "group": "A"},
        "axisPlacement": "auto", "axisLabel": "", "barAlignment": 0,
        "scaleDistribution": {"type": "linear"},
        "thresholdsStyle": {"mode": "off"},
    }
    defaults = {"unit": unit, "custom": custom, "color": {"mode": "palette-classic"},
                "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}]}}
    if min_ is not None:
        defaults["min"] = min_
    if max_ is not None:
        defaults["max"] = max_
    if decimals is not None:
        defaults["decimals"] = decimals
    if links:
        defaults["links"] = [DRILLDOWN_LINK]
    return {
        "type": "timeseries", "title": title, "description": description, "datasource": DS,
        "gridPos": {"w": w, "h": h},
        "fieldConfig": {"defaults": defaults, "overrides": list(overrides)},
        "options": {
            "legend": {"showLegend": True, "displayMode": "table", "placement": "bottom",
                       "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "targets": with_ref_ids(targets),
    }


def stat(title, description, unit, targets, w=6, h=4, red_from=1, mappings=(), decimals=None,
         color_mode="background"):
    steps = [{"color": "green", "value": None}]
    if red_from is not None:
        steps.append({"color": "red", "value": red_from})
    defaults = {"unit": unit, "color": {"mode": "thresholds"}, "mappings": list(mappings),
                "thresholds": {"mode": "absolute", "steps": steps}}
    if decimals is not None:
        defaults["decimals"] = decimals
    return {
        "type": "stat", "title": title, "description": description, "datasource": DS,
        "gridPos": {"w": w, "h": h},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": color_mode, "graphMode": "none", "justifyMode": "auto",
                    "orientation": "auto", "textMode": "auto", "wideLayout": True,
                    "showPercentChange": False},
        "targets": with_ref_ids(targets),
    }


def table(title, description, unit, targets, transformations, w=12, h=8, overrides=(),
          decimals=None, cell="auto"):
    defaults = {"unit": unit, "custom": {"align": "auto", "cellOptions": {"type": cell},
                                         "inspect": False},
                "color": {"mode": "thresholds"},
                "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}]}}
    if decimals is not None:
        defaults["decimals"] = decimals
    return {
        "type": "table", "title": title, "description": description, "datasource": DS,
        "gridPos": {"w": w, "h": h},
        "fieldConfig": {"defaults": defaults, "overrides": list(overrides)},
        "options": {"showHeader": True, "cellHeight": "sm",
                    "footer": {"show": False, "reducer": ["sum"], "fields": "", "countRows": False}},
        "transformations": list(transformations),
        "targets": with_ref_ids(targets),
    }


def heatmap(title, description, expr, unit="s", w=12, h=8, repeat=None):
    p = {
        "type": "heatmap", "title": title, "description": description, "datasource": DS,
        "gridPos": {"w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit, "custom": {
            "hideFrom": {"legend": False, "tooltip": False, "viz": False},
            "scaleDistribution": {"type": "linear"}}}, "overrides": []},
        "options": {
            "calculate": False, "cellGap": 1,
            "color": {"mode": "scheme", "scheme": "Oranges", "scale": "exponential",
                      "exponent": 0.5, "steps": 64, "fill": "dark-orange", "reverse": False},
            "exemplars": {"color": "rgba(255,0,255,0.7)"},
            "filterValues": {"le": 1e-9},
            "legend": {"show": True},
            "rowsFrame": {"layout": "auto"},
            "tooltip": {"mode": "single", "yHistogram": True, "showColorScale": False},
            "yAxis": {"axisPlacement": "left", "reverse": False, "unit": unit},
        },
        "targets": with_ref_ids([target(expr, "{{le}}", format="heatmap")]),
    }
    if repeat:
        p.update({"repeat": repeat, "repeatDirection": "h", "maxPerRow": 3})
    return p


def row(title):
    return {"type": "row", "title": title, "collapsed": False, "panels": [],
            "gridPos": {"w": 24, "h": 1}}


def with_ref_ids(targets):
    for i, t in enumerate(targets):
        t["refId"] = chr(ord("A") + i)
    return list(targets)


LIMIT_OVERRIDE = {
    "matcher": {"id": "byRegexp", "options": ".*limit.*"},
    "properties": [
        {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
        {"id": "custom.fillOpacity", "value": 0},
        {"id": "custom.lineWidth", "value": 2},
    ],
}

STATE_MAPPINGS = [{"type": "value", "options": {
    "0": {"text": "ok", "color": "green", "index": 0},
    "1": {"text": "FIRING", "color": "red", "index": 1}}}]

PROBE_MAPPINGS = [{"type": "value", "options": {
    "0": {"text": "NOT attached", "color": "red", "index": 0},
    "1": {"text": "attached", "color": "green", "index": 1}}}]


def hide_columns(*names, rename=None):
    return {"id": "organize", "options": {"excludeByName": {n: True for n in names},
                                          "indexByName": {}, "renameByName": rename or {}}}


def layout(panels):
    """Assigns ids and grid positions: rows span the width, panels fill left to right."""
    x = y = 0
    row_h = 0
    for i, p in enumerate(panels, start=1):
        p["id"] = i
        w, h = p["gridPos"]["w"], p["gridPos"]["h"]
        if p["type"] == "row" or x + w > 24:
            x, y = 0, y + row_h
            row_h = 0
        p["gridPos"] = {"h": h, "w": w, "x": x, "y": y}
        row_h = max(row_h, h)
        x += w
        if p["type"] == "row":
            x, y, row_h = 0, y + h, 0
    return panels


def dashboard(uid, title, description, panels, stage, with_annotations=True):
    return {
        "annotations": {"list": annotations() if with_annotations else []},
        "description": description,
        "editable": True,
        "fiscalYearStartMonth": 0,
        "graphTooltip": 1,
        "id": None,
        "links": [{"title": "stagewatch", "type": "dashboards", "tags": ["stagewatch"],
                   "asDropdown": True, "includeVars": True, "keepTime": True,
                   "targetBlank": False, "icon": "external link", "tooltip": "", "url": ""}],
        "panels": layout(panels),
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "tags": TAGS,
        "templating": {"list": variables(stage)},
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "",
        "title": title,
        "uid": uid,
        "version": 1,
        "weekStart": "",
    }


# ---- shared expressions --------------------------------------------------------------------


def by(labels, agg, expr):
    return f"{agg} by ({labels}) ({expr})"


def rate(metric, sel=STAGE, extra=""):
    s = sel + (", " + extra if extra else "")
    return f"rate({metric}{{{s}}}[{RI}])"


def increase(metric, sel=STAGE, window=RI, extra=""):
    s = sel + (", " + extra if extra else "")
    return f"increase({metric}{{{s}}}[{window}])"


def quantile(q, metric, group):
    return (f"histogram_quantile({q}, sum by ({group}, le) "
            f"({rate(metric + '_bucket')}))")


IS = "instance, pipeline_stage"
ST = "{{pipeline_stage}} ({{instance}})"


# ---- Pipeline overview ---------------------------------------------------------------------


def pipeline_overview():
    p = []
    p.append(row("Memory against limit"))
    p.append(timeseries(
        "Memory usage against limit",
        "Memory charged to each stage's cgroups (memory.usage_in_bytes / memory.current, page "
        "cache included), its working set (usage minus inactive file cache: what the kernel "
        "cannot simply drop), and the stage's memory limit as a dashed line. The limit is "
        "absent while any cgroup of the stage is unlimited.",
        "bytes", [
            target(by(IS, "sum", f"stagewatch_memory_usage_bytes{{{STAGE}}}"),
                   "{{pipeline_stage}} usage ({{instance}})"),
            target(by(IS, "sum", f"stagewatch_memory_working_set_bytes{{{STAGE}}}"),
                   "{{pipeline_stage}} working set ({{instance}})"),
            target(by(IS, "sum", f"stagewatch_memory_limit_bytes{{{STAGE}}}"),
                   "{{pipeline_stage}} limit ({{instance}})"),
        ], overrides=[LIMIT_OVERRIDE], links=True))
    p.append(timeseries(
        "Working set share of limit",
        "Working set divided by the memory limit. Past about 90% the kernel reclaims on "
        "every allocation and the stage slows down; at 100% an OOM kill follows. Only stages "
        "with a limit appear.",
        "percentunit", [
            target(f"stagewatch_memory_working_set_bytes{{{STAGE}}} / "
                   f"stagewatch_memory_limit_bytes{{{STAGE}}}", ST),
        ], links=True))
    p.append(timeseries(
        "Time to memory limit",
        "The agent's forecast (limit_eta detector): seconds until the working set reaches "
        "the limit at its current steady growth, from a least-squares fit. Present only while "
        "a stage with a limit keeps growing; a falling line is an OOM kill coming.",
        "s", [target(f"stagewatch_memory_limit_eta_seconds{{{STAGE}}}", ST)],
        w=8, links=True))
    p.append(timeseries(
        "Time near the limit",
        "Share of wall time each stage spent with usage at or above memory.near_limit_fraction "
        "(default 0.9) of its limit, sampled every memory.sample_interval.",
        "percentunit", [target(by(IS, "sum", rate("stagewatch_memory_near_limit_seconds_total")),
                               ST)], w=8, max_=1, links=True))
    p.append(timeseries(
        "Peak memory and swap",
        "Highest memory usage of each stage since the agent started, and the swap it uses "
        "now (cgroup v1 with memsw accounting, or v2 memory.swap.current).",
        "bytes", [
            target(by(IS, "max", f"stagewatch_memory_peak_bytes{{{STAGE}}}"),
                   "{{pipeline_stage}} peak ({{instance}})"),
            target(by(IS, "sum", f"stagewatch_memory_swap_bytes{{{STAGE}}}"),
                   "{{pipeline_stage}} swap ({{instance}})"),
        ], w=8, links=True))

    p.append(row("OOM kills"))
    p.append(timeseries(
        "OOM kills",
        "Processes of each stage OOM-killed, by the kernel (traced at oom:mark_victim) or by a "
        "configured user-space killer, and the kernel's own per-cgroup oom_kill count beside "
        "them. Every kill is also an annotation on all time panels.",
        "short", [
            target(by("instance, pipeline_stage, kind", "sum",
                      increase("stagewatch_oom_kills_total")),
                   "{{pipeline_stage}} {{kind}} ({{instance}})"),
            target(by(IS, "sum", increase("stagewatch_oom_kills_cgroup_total")),
                   "{{pipeline_stage}} cgroup oom_kill count ({{instance}})"),
        ], bars=True, decimals=0, links=True))
    p.append(stat(
        "OOM kills in range",
        "OOM kills of each stage's processes over the dashboard's time range, kernel and "
        "user-space together.",
        "short", [instant_target(
            "round(" + by("pipeline_stage", "sum",
                          increase("stagewatch_oom_kills_total", window="$__range")) + ")",
            "{{pipeline_stage}}")], w=4, h=8, decimals=0))
    p.append(stat(
        "Last OOM kill",
        "When a process of each stage was last OOM-killed; stages without a kill since the "
        "agent started are not shown.",
        "dateTimeFromNow", [target(
            by("pipeline_stage", "max",
               f"stagewatch_oom_last_kill_timestamp_seconds{{{STAGE}}}") + " * 1000 > 0",
            "{{pipeline_stage}}")], w=4, h=8, red_from=None, color_mode="value"))
    p.append(stat(
        "Untraced OOM kills",
        "The kernel's cgroup oom_kill count minus the kills the agent traced. Non-zero means "
        "OOM events were lost or could not be attributed to the stage.",
        "short", [target(by("pipeline_stage", "max",
                            f"stagewatch_oom_kills_mismatch{{{STAGE}}}"), "{{pipeline_stage}}")],
        w=4, h=8, decimals=0))

    p.append(row("Memory pressure and reclaim"))
    p.append(timeseries(
        "Memory pressure (PSI)",
        "Share of wall time some (waiting) or all (stalled) of each stage's tasks were held up "
        "on memory: reclaim, swap-in, refaults (cgroup2 memory.pressure).",
        "percentunit", [
            target(by(IS, "sum", rate("stagewatch_memory_pressure_waiting_seconds_total")),
                   "{{pipeline_stage}} some ({{instance}})"),
            target(by(IS, "sum", rate("stagewatch_memory_pressure_stalled_seconds_total")),
                   "{{pipeline_stage}} full ({{instance}})"),
        ], w=8, links=True))
    p.append(timeseries(
        "Reclaim stall time",
        "Seconds per second that each stage's tasks spent held up in direct or cgroup memory "
        "reclaim (traced), summed over tasks.",
        "s", [target(by(IS, "sum", rate("stagewatch_memory_reclaim_stall_seconds_sum")), ST)],
        w=8, links=True))
    p.append(timeseries(
        "Reclaim stalls",
        "Reclaim passes per second that held up a task of each stage.",
        "ops", [target(by(IS, "sum", rate("stagewatch_memory_reclaim_stall_seconds_count")), ST)],
        w=8, links=True))
    p.append(timeseries(
        "Memory events",
        "Memory events per second: cgroup v2 memory.events (low, high, max, oom, oom_kill, "
        "oom_group_kill), cgroup v1 failcnt (allocations that hit the limit) and oom_kill.",
        "ops", [target(by("instance, pipeline_stage, event", "sum",
                          rate("stagewatch_memory_events_total")),
                       "{{pipeline_stage}} {{event}} ({{instance}})")], links=True))
    p.append(timeseries(
        "I/O pressure (PSI)",
        "Share of wall time some (waiting) or all (stalled) of each stage's tasks waited for "
        "I/O (cgroup2 io.pressure).",
        "percentunit", [
            target(by(IS, "sum", rate("stagewatch_io_pressure_waiting_seconds_total")),
                   "{{pipeline_stage}} some ({{instance}})"),
            target(by(IS, "sum", rate("stagewatch_io_pressure_stalled_seconds_total")),
                   "{{pipeline_stage}} full ({{instance}})"),
        ], links=True))

    p.append(row("Page faults"))
    p.append(timeseries(
        "Major page faults",
        "Page faults per second that waited for I/O: code or data the stage's memory could "
        "not keep, read back from disk.",
        "ops", [target(by(IS, "sum", rate("stagewatch_page_faults_total",
                                          extra='fault_type="major"')), ST)], links=True))
    p.append(timeseries(
        "Minor page faults",
        "Page faults per second served without I/O (first touch of new memory, page cache "
        "hits, copy-on-write).",
        "ops", [target(by(IS, "sum", rate("stagewatch_page_faults_total",
                                          extra='fault_type="minor"')), ST)], links=True))

    p.append(row("Run-queue latency"))
    p.append(heatmap(
        "Run-queue latency: $pipeline_stage",
        "How long the stage's tasks waited between becoming runnable and getting a CPU: the "
        "distribution per interval, from the agent's histogram (one panel per stage).",
        by("le", "sum", rate("stagewatch_runqueue_latency_seconds_bucket")), w=8,
        repeat="pipeline_stage"))
    p.append(timeseries(
        "Run-queue latency p50 and p99",
        "Median and 99th percentile of the wait for a CPU after waking up, per stage. A p99 "
        "above ~50 ms for minutes is CPU starvation.",
        "s", [
            target(quantile(0.99, "stagewatch_runqueue_latency_seconds", IS),
                   "{{pipeline_stage}} p99 ({{instance}})"),
            target(quantile(0.5, "stagewatch_runqueue_latency_seconds", IS),
                   "{{pipeline_stage}} p50 ({{instance}})"),
        ], w=24, links=True))

    p.append(row("CPU: preemption, context switches, usage and throttling"))
    p.append(table(
        "Who preempts whom",
        "Preemptions over the time range: a runnable task of the row's stage lost its CPU to a "
        "task of the column's stage.",
        "short", [instant_target(
            "round(" + by("pipeline_stage, preempting_stage", "sum",
                          increase("stagewatch_cpu_preemptions_total", window="$__range")) + ")",
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
                          rate("stagewatch_cpu_preemptions_total")),
                       "{{preempting_stage}} preempts {{pipeline_stage}} ({{instance}})")],
        links=True))
    p.append(timeseries(
        "Context switches",
        "Switches out of each stage's tasks per second: voluntary (the task blocked) and "
        "nonvoluntary (still runnable, preempted).",
        "ops", [target(by("instance, pipeline_stage, ctxswitchtype", "sum",
                          rate("stagewatch_context_switches_total")),
                       "{{pipeline_stage}} {{ctxswitchtype}} ({{instance}})")], w=8, links=True))
    p.append(timeseries(
        "CPU usage",
        "CPUs' worth of on-CPU time of each stage, traced per context switch.",
        "short", [target(by(IS, "sum", rate("stagewatch_cpu_seconds_total")), ST)],
        w=8, links=True))
    p.append(timeseries(
        "CPU throttling",
        "Share of CFS bandwidth periods in which each stage was throttled by its CPU limit "
        "(cpu.stat). Only stages with a CPU limit appear.",
        "percentunit", [target(
            by(IS, "sum", rate("stagewatch_cpu_throttled_periods_total")) + " / " +
            by(IS, "sum", rate("stagewatch_cpu_periods_total")), ST)], w=8, max_=1, links=True))
    p.append(timeseries(
        "Throttled time",
        "Seconds per second each stage's cgroups spent throttled by their CPU limit.",
        "s", [target(by(IS, "sum", rate("stagewatch_cpu_throttled_seconds_total")), ST)],
        w=8, links=True))
    p.append(timeseries(
        "CPU pressure (PSI)",
        "Share of wall time some (waiting) or all (stalled) of each stage's tasks were "
        "runnable but waiting for a CPU (cgroup2 cpu.pressure).",
        "percentunit", [
            target(by(IS, "sum", rate("stagewatch_cpu_pressure_waiting_seconds_total")),
                   "{{pipeline_stage}} some ({{instance}})"),
            target(by(IS, "sum", rate("stagewatch_cpu_pressure_stalled_seconds_total")),
                   "{{pipeline_stage}} full ({{instance}})"),
        ], w=8, links=True))
    p.append(timeseries(
        "Processes exited",
        "Processes of each stage that exited, per second (OOM-killed ones included).",
        "ops", [target(by(IS, "sum", rate("stagewatch_processes_exited_total")), ST)],
        w=8, links=True))

    p.append(row("Tasks"))
    p.append(timeseries(
        "Tasks by state",
        "Tasks of each stage by state: running (on a CPU), runnable (waiting for one), "
        "uninterruptible (usually I/O), sleeping, stopped, zombie.",
        "short", [target(by("instance, pipeline_stage, state", "sum",
                            f"stagewatch_tasks{{{STAGE}}}"),
                         "{{pipeline_stage}} {{state}} ({{instance}})")], links=True))
    p.append(timeseries(
        "Tasks waiting for a CPU",
        "Runnable tasks of each stage that are not on a CPU.",
        "short", [target(by(IS, "sum", f'stagewatch_tasks{{{STAGE}, state="runnable"}}'), ST)],
        links=True))

    p.append(row("Anomalies"))
    p.append(stat(
        "Active anomalies",
        "Anomaly detectors firing now across the selected stages: memory climb, limit ETA, "
        "pressure spike, fault storm, CPU starvation, OOM kill.",
        "short", [target(f"sum(stagewatch_anomaly_active{{{STAGE}}})", "active")],
        w=4, h=8, decimals=0))
    p.append(table(
        "Active anomalies by stage and rule",
        "The stage and detector (rule) of every anomaly firing at the end of the time range. "
        "Anomalies are also annotations on all time panels.",
        "none", [instant_target(f"stagewatch_anomaly_active{{{STAGE}}} == 1", fmt="table")],
        [hide_columns("Time", "Value", "__name__", "job",
                      rename={"pipeline_stage": "stage", "rule": "anomaly"})], w=8))
    p.append(timeseries(
        "Anomalies raised",
        "Times each detector started firing for each stage; every OOM kill counts for rule "
        "oom_kill.",
        "short", [target(by("instance, pipeline_stage, rule", "sum",
                            increase("stagewatch_anomalies_total")),
                         "{{pipeline_stage}} {{rule}} ({{instance}})")],
        bars=True, decimals=0, links=True))
    return dashboard(
        "stagewatch-pipeline-overview", "stagewatch / Pipeline overview",
        "All pipeline stages side by side, one row per concern: memory against limit, OOM "
        "kills, pressure and reclaim, page faults, run-queue latency, preemption and CPU, task "
        "states, anomalies.",
        p, "multi")


# ---- Stage drill-down ------------------------------------------------------------------------


def stage_drilldown():
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
            target(by(I, "sum", f"stagewatch_memory_usage_bytes{{{STAGE}}}"), f"usage {L}"),
            target(by(I, "sum", f"stagewatch_memory_working_set_bytes{{{STAGE}}}"),
                   f"working set {L}"),
            target(by(I, "max", f"stagewatch_memory_peak_bytes{{{STAGE}}}"), f"peak {L}"),
            target(by(I, "sum", f"stagewatch_memory_limit_bytes{{{STAGE}}}"), f"limit {L}"),
        ], overrides=[LIMIT_OVERRIDE]))
    p.append(timeseries(
        "Working set share of limit",
        "Working set divided by the memory limit; an OOM kill follows at 100%.",
        "percentunit", [target(f"stagewatch_memory_working_set_bytes{{{STAGE}}} / "
                               f"stagewatch_memory_limit_bytes{{{STAGE}}}", L)], w=6))
    p.append(timeseries(
        "Time to memory limit",
        "The agent's limit_eta forecast: seconds until the working set reaches the limit at "
        "its current steady growth. Present only while the stage keeps growing toward a limit.",
        "s", [target(f"stagewatch_memory_limit_eta_seconds{{{STAGE}}}", L)], w=6))
    p.append(timeseries(
        "Time near the limit",
        "Share of wall time with usage at or above memory.near_limit_fraction (default 0.9) of "
        "the limit.",
        "percentunit", [target(by(I, "sum", rate("stagewatch_memory_near_limit_seconds_total")),
                               L)], w=6, max_=1))
    p.append(timeseries(
        "Swap used",
        "Swap used by the stage's cgroups (v1 with memsw accounting, v2 memory.swap.current).",
        "bytes", [target(by(I, "sum", f"stagewatch_memory_swap_bytes{{{STAGE}}}"), L)], w=6))
    p.append(timeseries(
        "Memory events",
        "Memory events per second: v2 memory.events (low, high, max, oom, oom_kill, "
        "oom_group_kill), v1 failcnt and oom_kill.",
        "ops", [target(by("instance, event", "sum", rate("stagewatch_memory_events_total")),
                       "{{event}} " + L)]))

    p.append(row("OOM kills"))
    p.append(timeseries(
        "OOM kills",
        "The stage's processes OOM-killed by the kernel or a user-space killer (traced), and "
        "the kernel's own cgroup oom_kill count beside them.",
        "short", [
            target(by("instance, kind", "sum", increase("stagewatch_oom_kills_total")),
                   "{{kind}} " + L),
            target(by(I, "sum", increase("stagewatch_oom_kills_cgroup_total")),
                   f"cgroup oom_kill count {L}"),
        ], bars=True, decimals=0))
    p.append(stat(
        "OOM kills in range",
        "OOM kills of the stage's processes over the dashboard's time range.",
        "short", [instant_target(
            "round(" + by(I, "sum", increase("stagewatch_oom_kills_total", window="$__range"))
            + ")", L)], w=4, h=8, decimals=0))
    p.append(stat(
        "Last OOM kill",
        "When a process of the stage was last OOM-killed; empty when none since the agent "
        "started.",
        "dateTimeFromNow", [target(
            by(I, "max", f"stagewatch_oom_last_kill_timestamp_seconds{{{STAGE}}}") +
            " * 1000 > 0", L)], w=4, h=8, red_from=None, color_mode="value"))
    p.append(stat(
        "Untraced OOM kills",
        "The kernel's cgroup oom_kill count minus traced kills: non-zero means lost or "
        "unattributed OOM events.",
        "short", [target(by(I, "max", f"stagewatch_oom_kills_mismatch{{{STAGE}}}"), L)],
        w=4, h=8, decimals=0))

    p.append(row("Memory pressure and reclaim"))
    p.append(timeseries(
        "Memory and I/O pressure (PSI)",
        "Share of wall time some (waiting) or all (stalled) of the stage's tasks were held up "
        "on memory or I/O (cgroup2 memory.pressure, io.pressure).",
        "percentunit", [
            target(by(I, "sum", rate("stagewatch_memory_pressure_waiting_seconds_total")),
                   f"memory some {L}"),
            target(by(I, "sum", rate("stagewatch_memory_pressure_stalled_seconds_total")),
                   f"memory full {L}"),
            target(by(I, "sum", rate("stagewatch_io_pressure_waiting_seconds_total")),
                   f"io some {L}"),
            target(by(I, "sum", rate("stagewatch_io_pressure_stalled_seconds_total")),
                   f"io full {L}"),
        ], w=8))
    p.append(heatmap(
        "Reclaim stall duration",
        "How long each direct or cgroup reclaim pass held up a task of the stage: the "
        "distribution per interval.",
        by("le", "sum", rate("stagewatch_memory_reclaim_stall_seconds_bucket")), w=8))
    p.append(timeseries(
        "Reclaim stalls",
        "Reclaim passes per second that held up the stage's tasks, and the seconds per second "
        "they were held up (right axis).",
        "ops", [
            target(by(I, "sum", rate("stagewatch_memory_reclaim_stall_seconds_count")),
                   f"stalls {L}"),
            target(by(I, "sum", rate("stagewatch_memory_reclaim_stall_seconds_sum")),
                   f"stall time {L}"),
        ], w=8, overrides=[{
            "matcher": {"id": "byRegexp", "options": "stall time.*"},
            "properties": [{"id": "unit", "value": "s"},
                           {"id": "custom.axisPlacement", "value": "right"}]}]))

    p.append(row("Page faults"))
    p.append(timeseries(
        "Page faults",
        "Page faults per second: major ones waited for I/O, minor ones did not.",
        "ops", [target(by("instance, fault_type", "sum", rate("stagewatch_page_faults_total")),
                       "{{fault_type}} " + L)]))
    p.append(timeseries(
        "Share of faults that are major",
        "Major page faults as a share of all page faults: how much of what the stage touches "
        "memory could not keep.",
        "percentunit", [target(
            by(I, "sum", rate("stagewatch_page_faults_total", extra='fault_type="major"')) +
            " / " + by(I, "sum", rate("stagewatch_page_faults_total")), L)], max_=1))

    p.append(row("CPU"))
    p.append(heatmap(
        "Run-queue latency",
        "How long the stage's tasks waited between becoming runnable and getting a CPU: the "
        "distribution per interval.",
        by("le", "sum", rate("stagewatch_runqueue_latency_seconds_bucket"))))
    p.append(timeseries(
        "Run-queue latency quantiles",
        "50th, 90th and 99th percentile of the wait for a CPU.",
        "s", [target(quantile(q, "stagewatch_runqueue_latency_seconds", I), f"p{int(q * 100)} {L}")
              for q in (0.99, 0.9, 0.5)]))
    p.append(timeseries(
        "Preempted by",
        "Preemptions per second of the stage's runnable tasks, by the stage whose task took "
        "the CPU.",
        "ops", [target(by("instance, preempting_stage", "sum",
                          rate("stagewatch_cpu_preemptions_total")),
                       "by {{preempting_stage}} " + L)], w=8))
    p.append(timeseries(
        "Preempts",
        "Preemptions per second in which a task of this stage took the CPU from a runnable "
        "task of another stage (or of its own).",
        "ops", [target(by("instance, pipeline_stage", "sum", rate(
            "stagewatch_cpu_preemptions_total",
            sel=f'{AGENT}, preempting_stage=~"$pipeline_stage"')),
            "{{pipeline_stage}} " + L)], w=8))
    p.append(timeseries(
        "Context switches",
        "Switches out of the stage's tasks per second: voluntary (blocked) and nonvoluntary "
        "(preempted while runnable).",
        "ops", [target(by("instance, ctxswitchtype", "sum",
                          rate("stagewatch_context_switches_total")),
                       "{{ctxswitchtype}} " + L)], w=8))
    p.append(timeseries(
        "CPU usage: traced and charged",
        "CPUs' worth of on-CPU time: traced per context switch by the agent, and as charged by "
        "the kernel (cpuacct.usage / cpu.stat usage_usec). The two should agree.",
        "short", [
            target(by(I, "sum", rate("stagewatch_cpu_seconds_total")), f"traced {L}"),
            target(by(I, "sum", rate("stagewatch_cgroup_cpu_usage_seconds_total")),
                   f"charged {L}"),
        ], w=8))
    p.append(timeseries(
        "CPU throttling",
        "Share of CFS bandwidth periods in which the stage was throttled by its CPU limit, and "
        "the seconds per second it spent throttled (right axis).",
        "percentunit", [
            target(by(I, "sum", rate("stagewatch_cpu_throttled_periods_total")) + " / " +
                   by(I, "sum", rate("stagewatch_cpu_periods_total")),
                   f"throttled periods {L}"),
            target(by(I, "sum", rate("stagewatch_cpu_throttled_seconds_total")),
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
            target(by(I, "sum", rate("stagewatch_cpu_pressure_waiting_seconds_total")),
                   f"some {L}"),
            target(by(I, "sum", rate("stagewatch_cpu_pressure_stalled_seconds_total")),
                   f"full {L}"),
        ], w=8))

    p.append(row("Tasks"))
    p.append(timeseries(
        "Tasks by state",
        "The stage's tasks by state: running, runnable (waiting for a CPU), uninterruptible, "
        "sleeping, stopped, zombie.",
        "short", [target(by("instance, state", "sum", f"stagewatch_tasks{{{STAGE}}}"),
                         "{{state}} " + L)], w=16, stack=True))
    p.append(timeseries(
        "Processes exited",
        "Processes of the stage that exited, per second.",
        "ops", [target(by(I, "sum", rate("stagewatch_processes_exited_total")), L)], w=8))

    p.append(row("Anomalies"))
    p.append(table(
        "Anomaly detectors",
        "Every anomaly detector of the stage at the end of the time range: FIRING or ok.",
        "none", [instant_target(f"max by (rule) (stagewatch_anomaly_active{{{STAGE}}})",
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
        "short", [target(by("instance, rule", "max", f"stagewatch_anomaly_active{{{STAGE}}}"),
                         "{{rule}} " + L)], w=10, max_=1, step=True, decimals=0))
    p.append(timeseries(
        "Anomalies raised",
        "Times each detector started firing for the stage.",
        "short", [target(by("instance, rule", "sum", increase("stagewatch_anomalies_total")),
                         "{{rule}} " + L)], w=8, bars=True, decimals=0))
    return dashboard(
        DRILLDOWN_UID, "stagewatch / Stage drill-down",
        "Every signal of one pipeline stage, chosen with the pipeline_stage variable, and its "
        "anomalies.",
        p, "single")


# ---- Agent health ----------------------------------------------------------------------------


def agent_health():
    p = []
    A = AGENT
    p.append(row("Agent"))
    p.append(stat(
        "Agents up",
        "Agents Prometheus scraped successfully in its last scrape, out of those selected.",
        "short", [target(f"sum(up{{{A}}})", "up"), target(f"count(up{{{A}}})", "targets")],
        w=4, red_from=None, decimals=0, color_mode="value"))
    p.append(stat(
        "Probes not attached",
        "BPF probes that failed to attach, per agent. Their signals are missing (zero), not "
        "quiet; `stagewatch features` says why.",
        "short", [target(f"sum by (instance) (1 - stagewatch_probe_attached{{{A}}})",
                         "{{instance}}")], w=4, h=8, decimals=0))
    p.append(stat(
        "Known stages",
        "Pipeline stages each agent knows (configured and discovered, plus unattributed).",
        "short", [target(f'count by (instance) (stagewatch_anomaly_active{{{A}, rule="oom_kill"}})',
                         "{{instance}}")], w=4, red_from=None, decimals=0, color_mode="value"))
    p.append(table(
        "Build",
        "Version, revision and libbpf version of each agent.",
        "none", [instant_target(f"stagewatch_build_info{{{A}}}", fmt="table")],
        [hide_columns("Time", "Value", "__name__", "job")], w=12, h=4))
    p.append(table(
        "Probes",
        "Each BPF probe of each agent, how it attaches, and whether it is attached.",
        "none", [instant_target(f"stagewatch_probe_attached{{{A}}}", fmt="table")],
        [hide_columns("Time", "__name__", "job", rename={"Value": "state"})], w=12,
        overrides=[{"matcher": {"id": "byName", "options": "state"},
                    "properties": [{"id": "mappings", "value": PROBE_MAPPINGS},
                                   {"id": "custom.cellOptions",
                                    "value": {"type": "color-text"}}]}]))
    p.append(timeseries(
        "Events lost",
        "Ring-buffer events each probe dropped per second (the buffer was full), and kernel-side "
        "updates refused because a bounded BPF map was full. Counts are too low while these "
        "are above zero.",
        "ops", [
            target(f"sum by (instance, probe) ({rate('stagewatch_probe_lost_events_total', A)})",
                   "{{probe}} ring buffer ({{instance}})"),
            target(f"sum by (instance, map) ({rate('stagewatch_sched_map_overflows_total', A)})",
                   "sched {{map}} map full ({{instance}})"),
            target(f"sum by (instance, map) ({rate('stagewatch_memory_map_overflows_total', A)})",
                   "memory {{map}} map full ({{instance}})"),
        ]))

    p.append(row("Agent footprint"))
    p.append(timeseries(
        "Agent CPU",
        "Share of one CPU the agent process uses (user and system), probes' in-kernel time not "
        "included (see BPF program run time).",
        "percentunit", [target(f"sum by (instance) ({rate('process_cpu_seconds_total', A)})",
                               "{{instance}}")], w=12))
    p.append(timeseries(
        "Agent resident memory",
        "Resident memory of the agent process.",
        "bytes", [target(f"max by (instance) (process_resident_memory_bytes{{{A}}})",
                         "{{instance}}")], w=12))

    p.append(row("BPF programs"))
    p.append(timeseries(
        "BPF program run time",
        "Share of one CPU each of the agent's BPF programs takes in the kernel. The kernel "
        "counts it only while `sysctl kernel.bpf_stats_enabled=1` (see the next panel); "
        "otherwise it reads zero.",
        "percentunit", [target(f"sum by (instance, program) "
                               f"({rate('stagewatch_bpf_program_run_seconds_total', A)})",
                               "{{program}} ({{instance}})")], w=12))
    p.append(timeseries(
        "BPF program runs and stats switch",
        "Runs per second of each BPF program, and whether the kernel is counting them "
        "(stagewatch_bpf_stats_enabled).",
        "ops", [target(f"sum by (instance, program) "
                       f"({rate('stagewatch_bpf_program_runs_total', A)})",
                       "{{program}} ({{instance}})"),
                target(f"max by (instance) (stagewatch_bpf_stats_enabled{{{A}}})",
                       "stats enabled ({{instance}})")], w=12))

    p.append(row("Scrapes"))
    p.append(timeseries(
        "Collector scrape duration",
        "Time each collector took in the agent's latest scrape (reading BPF maps and "
        "cgroupfs).",
        "s", [target(f"max by (instance, collector) "
                     f"(stagewatch_scrape_collector_duration_seconds{{{A}}})",
                     "{{collector}} ({{instance}})")], w=8))
    p.append(timeseries(
        "Collector scrape success",
        "Whether each collector succeeded in the agent's latest scrape (1) or failed (0).",
        "bool", [target(f"min by (instance, collector) "
                        f"(stagewatch_scrape_collector_success{{{A}}})",
                        "{{collector}} ({{instance}})")], w=8, max_=1, step=True))
    p.append(timeseries(
        "Prometheus scrape duration",
        "How long Prometheus took to scrape each agent, end to end.",
        "s", [target(f"max by (instance) (scrape_duration_seconds{{{A}}})", "{{instance}}")],
        w=8))

    p.append(row("Cgroups and stages"))
    p.append(timeseries(
        "Unknown cgroups",
        "Events and map entries per second whose cgroup died before the agent could name it; "
        "counted under the unattributed stage.",
        "ops", [target(f"sum by (instance) ({rate('stagewatch_unknown_cgroup_events_total', A)})",
                       "{{instance}}")], w=6))
    p.append(timeseries(
        "Cgroup tree rescans",
        "Walks of the cgroup hierarchy per second, made when an event names a cgroup id not in "
        "the cache.",
        "ops", [target(f"sum by (instance) ({rate('stagewatch_cgroup_cache_rescans_total', A)})",
                       "{{instance}}")], w=6))
    p.append(timeseries(
        "Cgroups left out of the cache",
        "Cgroups left out of the last rescan because the cache (cgroup.cache_max_entries) is "
        "full; their events count as unattributed.",
        "short", [target(f"max by (instance) (stagewatch_cgroup_cache_truncated{{{A}}})",
                         "{{instance}}")], w=6))
    p.append(timeseries(
        "Stage discovery overflows",
        "Cgroups per second whose discovered stage name was beyond discovery.max_stages and "
        "counted under unattributed.",
        "ops", [target(f"sum by (instance) "
                       f"({rate('stagewatch_stage_discovery_overflows_total', A)})",
                       "{{instance}}")], w=6))

    p.append(row("Alertmanager"))
    p.append(timeseries(
        "Alertmanager pushes",
        "Alert batches the agent posted to each Alertmanager per second, by result.",
        "ops", [target(f"sum by (instance, alertmanager, result) "
                       f"({rate('stagewatch_alertmanager_requests_total', A)})",
                       "{{result}} {{alertmanager}} ({{instance}})")], w=8))
    p.append(timeseries(
        "Alertmanager push failures",
        "Share of alert batches each Alertmanager did not accept (unreachable, timeout, HTTP "
        "error). Failed batches are retried; alerts are lost only when the queue overflows.",
        "percentunit", [target(
            by("instance, alertmanager", "sum",
               rate("stagewatch_alertmanager_requests_total", A, 'result="failure"')) + " / " +
            by("instance, alertmanager", "sum", rate("stagewatch_alertmanager_requests_total", A)),
            "{{alertmanager}} ({{instance}})")], w=8, max_=1))
    p.append(stat(
        "Last accepted push",
        "When each Alertmanager last accepted an alert batch; absent when none has yet.",
        "dateTimeFromNow", [target(
            f"max by (instance, alertmanager) "
            f"(stagewatch_alertmanager_last_success_timestamp_seconds{{{A}}}) * 1000 > 0",
            "{{alertmanager}} ({{instance}})")], w=8, h=8, red_from=None, color_mode="value"))
    p.append(timeseries(
        "Alerts dropped",
        "Alert updates per second never sent: the oldest dropped when the queue was full, or "
        "rejected by Alertmanager as invalid.",
        "ops", [target(f"sum by (instance) "
                       f"({rate('stagewatch_alertmanager_alerts_dropped_total', A)})",
                       "{{instance}}")]))
    p.append(timeseries(
        "Alert queue length",
        "Alert updates queued and not yet taken by every Alertmanager's sender.",
        "short", [target(f"max by (instance) (stagewatch_alertmanager_queue_length{{{A}}})",
                         "{{instance}}")], decimals=0))
    return dashboard(
        "stagewatch-agent-health", "stagewatch / Agent health",
        "The stagewatch agent itself: probes attached, events lost, per-collector scrapes, "
        "cgroup naming, and pushes to Alertmanager.",
        p, None, with_annotations=False)


DASHBOARDS = {
    "pipeline-overview.json": pipeline_overview,
    "stage-drilldown.json": stage_drilldown,
    "agent-health.json": agent_health,
}


def render(build):
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def main(argv):
    check = "--check" in argv[1:]
    stale = []
    for name, build in DASHBOARDS.items():
        path = os.path.join(HERE, name)
        text = render(build)
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    current = f.read()
            except FileNotFoundError:
                current = None
            if current != text:
                stale.append(name)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale:
        print(f"dashboards out of date with dashboards/generate.py: {', '.join(stale)}; "
              "run dashboards/generate.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
