"""Fleet overview: one row per agent (instance), for sites with many servers."""

from .board import OVERVIEW_UID, Queries, annotations, dashboard, variables
from .panels import by, hide_columns, instant_target, row, table, target, timeseries
from .runs_panels import duration_quantiles, lost_by_cause, pipeline_nights, recent_runs

FLEET_UID = "stagewatch-fleet-overview"
KEY = "job, instance"
L = "{{instance}}"


def instance_link():
    """From an instance's row to the pipeline overview of that instance."""
    return {"title": "Pipeline overview of ${__data.fields.instance}",
            "url": (f"/d/{OVERVIEW_UID}/stagewatch-pipeline-overview?${{__url_time_range}}"
                    "&${datasource:queryparam}&${pipeline:queryparam}"
                    "&var-job=${__data.fields.job}&var-instance=${__data.fields.instance}")}


def column(name, unit=None, decimals=None, links=None, cell=None):
    props = []
    if unit:
        props.append({"id": "unit", "value": unit})
    if decimals is not None:
        props.append({"id": "decimals", "value": decimals})
    if links:
        props.append({"id": "links", "value": links})
    if cell:
        props.append({"id": "custom.cellOptions", "value": {"type": cell}})
    return {"matcher": {"id": "byName", "options": name}, "properties": props}


UP_MAPPINGS = [{"type": "value", "options": {
    "0": {"text": "DOWN", "color": "red", "index": 0},
    "1": {"text": "up", "color": "green", "index": 1}}}]


def fleet_overview(cfg):
    q = Queries(cfg)
    P = q.pipeline
    # (column title, expression) of the table, one value per instance.
    columns = [
        ("agent", f"max by ({KEY}) (up{{{q.agent}}})"),
        ("stages", f"count by ({KEY}) (group by ({KEY}, pipeline_stage) "
                   f"(stagewatch_anomaly_active{{{P}}}))"),
        ("OOM kills", "round(" + by(KEY, "sum", q.increase(
            "stagewatch_oom_kills_total", sel=P, window="$__range")) + ")"),
        ("runs", "round(" + by(KEY, "sum", q.increase(
            "stagewatch_runs_total", sel=P, window="$__range")) + ")"),
        ("interrupted runs", "round(" + by(KEY, "sum", q.increase(
            "stagewatch_runs_total", sel=P, window="$__range",
            extra='verdict="interrupted"')) + ")"),
        ("time near limit", by(KEY, "sum", q.increase(
            "stagewatch_memory_near_limit_seconds_total", sel=P, window="$__range"))),
        ("active anomalies", f"sum by ({KEY}) (stagewatch_anomaly_active{{{P}}})"),
    ]
    refs = [chr(ord("A") + i) for i in range(len(columns))]
    p = [row("Agents")]
    p.append(table(
        "Instances",
        "One row per agent at the end of the time range: whether Prometheus scrapes it, the "
        "stages it knows; over the time range OOM kills, runs ended and those interrupted, "
        "and stage-seconds spent near a memory limit (summed over its stages); and anomalies "
        "firing now. Click an instance for its "
        "pipeline overview.",
        "short", [instant_target(expr, fmt="table") for _, expr in columns],
        [{"id": "merge", "options": {}},
         hide_columns("Time", rename={
             f"Value #{r}": name for r, (name, _) in zip(refs, columns)})],
        w=24, h=10, overrides=[
            column("instance", links=[instance_link()]),
            {"matcher": {"id": "byName", "options": "agent"},
             "properties": [{"id": "mappings", "value": UP_MAPPINGS},
                            {"id": "custom.cellOptions", "value": {"type": "color-text"}}]},
            column("stages", decimals=0),
            column("OOM kills", decimals=0),
            column("runs", decimals=0),
            column("interrupted runs", decimals=0),
            column("time near limit", unit="s"),
            column("active anomalies", decimals=0),
        ]))

    p.append(row("Runs"))
    p.append(lost_by_cause(q, P))
    p.append(duration_quantiles(q, P))
    p.append(recent_runs(q, P))
    p.append(pipeline_nights(q, P))

    p.append(row("Over time"))
    p.append(timeseries(
        "OOM kills by instance",
        "Processes OOM-killed per interval on each instance, all stages together.",
        "short", [target(by("instance", "sum", q.increase("stagewatch_oom_kills_total", sel=P)),
                         L)], w=8, bars=True, decimals=0))
    p.append(timeseries(
        "Stages near their memory limit",
        "Stage-seconds per second each instance's stages spent at or above "
        "memory.near_limit_fraction of their limit: 2 means two stages near the limit all the "
        "time.",
        "short", [target(by("instance", "sum", q.rate(
            "stagewatch_memory_near_limit_seconds_total", sel=P)), L)], w=8))
    p.append(timeseries(
        "Active anomalies by instance",
        "Anomaly detectors firing on each instance, all stages and rules together.",
        "short", [target(f"sum by (instance) (stagewatch_anomaly_active{{{P}}})", L)],
        w=8, decimals=0, step=True))
    return dashboard(
        FLEET_UID, "stagewatch / Fleet overview",
        "Every agent of the fleet, one row per instance: scraped or not, stages, OOM kills, "
        "time near memory limits, and anomalies; the fleet's runs: time lost per stage by "
        "cause, wall time, recent runs linked to their pages, and pipeline runs.",
        p, variables(q), annotations(q, P))
