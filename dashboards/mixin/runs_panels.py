"""Panels of runs shared by the pipeline and fleet overviews: time lost beyond each stage's
baseline by cause, run wall-time quantiles, recent runs linked to their pages, and pipeline
runs (nights) as a state timeline."""

from .panels import barchart, by, hide_columns, instant_target, state_timeline, table, target, \
    timeseries

LOST_24H = "instance_pipeline_pipeline_stage_cause:stagewatch_run_lost_seconds:increase24h"
# The causes in the order of docs/runs.md, each with a colour that stays put across panels.
CAUSE_COLOURS = {"cpu_wait": "red", "cpu_throttling": "orange", "memory_reclaim": "purple",
                 "memory_pressure": "super-light-purple", "io_pressure": "blue",
                 "cpu_work": "green", "unexplained": "text"}

VERDICT_MAPPINGS = [{"type": "value", "options": {
    "clean": {"color": "green", "index": 0},
    "degraded": {"color": "orange", "index": 1},
    "interrupted": {"color": "red", "index": 2},
    "unobserved": {"color": "text", "index": 3}}}]
# A pipeline run's worst verdict as a number, so that max() finds it: clean < unobserved <
# degraded < interrupted.
VERDICT_RANK = (("clean", 0), ("unobserved", 1), ("degraded", 2), ("interrupted", 3))
RANK_MAPPINGS = [{"type": "value", "options": {
    str(rank): {"text": verdict, "color": VERDICT_MAPPINGS[0]["options"][verdict]["color"],
                "index": rank} for verdict, rank in VERDICT_RANK}}]


def verdict_column():
    return {"matcher": {"id": "byName", "options": "verdict"},
            "properties": [{"id": "mappings", "value": VERDICT_MAPPINGS},
                           {"id": "custom.cellOptions", "value": {"type": "color-text"}}]}


def lost_by_cause(q, sel, w=12, h=8):
    """Stacked bars: per stage, the seconds its runs lost in the last 24 h, by cause."""
    return barchart(
        "Time lost per stage by cause, last 24 h",
        "Wall time the runs of each stage that ended in the last 24 hours took beyond their "
        "baseline (the median of the stage's recent clean runs with the same limits), split "
        "by cause: waiting for a CPU, throttled by the CPU limit, memory reclaim stalls, memory "
        "and I/O pressure, more CPU work than usual, and what is left unexplained. Summed over "
        "the selected instances; runs without a baseline lose nothing here. From the recorded "
        f"series {LOST_24H} (alerts/stagewatch.rules.yml must be loaded).",
        "s", [instant_target(by("pipeline_stage, cause", "sum", f"{LOST_24H}{{{sel}}}"),
                             fmt="table")],
        [{"id": "groupingToMatrix", "options": {"columnField": "cause",
                                                "rowField": "pipeline_stage",
                                                "valueField": "Value", "emptyValue": "zero"}}],
        w=w, h=h, overrides=[
            {"matcher": {"id": "byName", "options": cause},
             "properties": [{"id": "color", "value": {"mode": "fixed", "fixedColor": colour}}]}
            for cause, colour in CAUSE_COLOURS.items()])


def duration_quantiles(q, sel, w=12, h=8):
    def quantile(x):
        return (f"histogram_quantile({x}, sum by (pipeline_stage, le) "
                f"({q.increase('stagewatch_run_duration_seconds_bucket', sel, '24h')})) >= 0")
    return timeseries(
        "Run wall time p50 and p90 by stage, last 24 h",
        "Median and 90th percentile wall time of each stage's runs that ended in the 24 hours "
        "before each point, over the selected instances (from the stagewatch_run_duration_"
        "seconds histogram: buckets from 1 s to 1 day, so a quantile is interpolated within "
        "its bucket). A stage without a run ended in that window has no line.",
        "s", [target(quantile(0.9), "{{pipeline_stage}} p90"),
              target(quantile(0.5), "{{pipeline_stage}} p50")], w=w, h=h)


def run_link():
    """From a run's row to its page on the agent that recorded it."""
    return {"title": "Run ${__data.fields.run_id} on ${__data.fields.instance}",
            "url": "${__data.fields.external_url}/runs/${__data.fields.run_id}",
            "targetBlank": True}


def recent_runs(q, sel, w=24, h=10):
    # build_info tells each agent's external URL; matched on the target's own labels.
    expr = by("job, instance, pipeline, pipeline_stage, pipeline_run, run_id, verdict, "
              "external_url", "max",
              f"stagewatch_run_info{{{sel}}}\n* on (job, instance) group_left (external_url)\n"
              f"stagewatch_build_info{{{q.agent}}}")
    return table(
        "Recent runs",
        "Each stage's newest ended runs (runs.info_per_stage per stage, default 5) on every "
        "selected instance, with their pipeline run and verdict: clean, degraded (lost at least "
        "runs.degraded_fraction of its wall time to throttling, pressure, reclaim or run-queue "
        "wait), interrupted (OOM-killed, or a signal nobody asked for), unobserved. A run is a "
        "`stagewatch run` launch or a cgroup beneath the stage's top. Click a run id for its page "
        "on the agent that recorded it (<external_url>/runs/<run_id>; the agent's "
        "--web.external-url, from stagewatch_build_info).",
        "none", [instant_target(expr, fmt="table")],
        [hide_columns("Time", "Value", "job", rename={"pipeline_stage": "stage"})],
        w=w, h=h, overrides=[
            verdict_column(),
            {"matcher": {"id": "byName", "options": "run_id"},
             "properties": [{"id": "links", "value": [run_link()]}]},
            # Hidden, not removed: the run link reads it.
            {"matcher": {"id": "byName", "options": "external_url"},
             "properties": [{"id": "custom.hidden", "value": True}]},
        ])


def pipeline_nights(q, sel, w=24, h=8):
    worst = " or\n".join(
        f'stagewatch_run_info{{{sel}, pipeline_run!="", verdict="{verdict}"}} * {rank}'
        for verdict, rank in VERDICT_RANK)
    return state_timeline(
        "Pipeline runs (nights) by worst verdict",
        "One row per pipeline run (--pipeline-run, or STAGEWATCH_PIPELINE_RUN in a driver's "
        "environment), coloured by the worst verdict among its ended runs: clean, unobserved, "
        "degraded, interrupted. A row starts when the pipeline run's first run ends and lasts "
        "while any of its runs is among its stage's newest (runs.info_per_stage); it turns "
        "worse as worse runs end. `stagewatch pipelines show <id>` on the instance has the "
        "night's timeline.",
        [target(by("pipeline, pipeline_run", "max", worst), "{{pipeline}} {{pipeline_run}}")],
        RANK_MAPPINGS, w=w, h=h)
