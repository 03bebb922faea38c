"""A whole dashboard: template variables, annotations, layout, and the selectors its queries
share, built from the site configuration."""

from .panels import DS, layout

SCHEMA_VERSION = 39
TAGS = ["stagewatch", "ebpf", "pipelines"]
RI = "$__rate_interval"
DRILLDOWN_UID = "stagewatch-stage-drilldown"
OVERVIEW_UID = "stagewatch-pipeline-overview"

# A multi-select variable starts at All; a single-stage one at the stage every agent has.
ALL = {"selected": True, "text": ["All"], "value": ["$__all"]}
ANY_STAGE = "unattributed"


class Queries:
    """The label selectors of one dashboard and the expressions built on them.

    agent: the site's selector, $job and $instance; stage: that and $pipeline, $pipeline_stage.
    """

    def __init__(self, cfg, stage_var="pipeline_stage"):
        self.agent = f'{cfg.selector}, job=~"$job", instance=~"$instance"'
        self.pipeline = f'{self.agent}, pipeline=~"$pipeline"'
        self.stage = f'{self.pipeline}, pipeline_stage=~"${stage_var}"'
        self.site = cfg.selector

    def sel(self, base, extra):
        return base + (", " + extra if extra else "")

    def rate(self, metric, sel=None, extra=""):
        return f"rate({metric}{{{self.sel(sel or self.stage, extra)}}}[{RI}])"

    def increase(self, metric, sel=None, window=RI, extra=""):
        return f"increase({metric}{{{self.sel(sel or self.stage, extra)}}}[{window}])"

    def quantile(self, q, metric, group, sel=None):
        return (f"histogram_quantile({q}, sum by ({group}, le) "
                f"({self.rate(metric + '_bucket', sel)}))")


# ---- variables ---------------------------------------------------------------------------


def datasource_variable():
    return {"name": "datasource", "label": "Data source", "type": "datasource",
            "query": "prometheus", "current": {"selected": False, "text": "default",
                                                "value": "default"},
            "hide": 0, "includeAll": False, "multi": False, "options": [], "refresh": 1,
            "regex": "", "skipUrlSync": False}


def query_variable(name, label, query, multi=True, include_all=True, all_value=".+",
                   description=None):
    v = {"name": name, "label": label, "type": "query", "datasource": DS,
         "query": query,
         "current": ALL if include_all else {"selected": False, "text": ANY_STAGE,
                                             "value": ANY_STAGE},
         "hide": 0, "multi": multi, "includeAll": include_all,
         "options": [], "refresh": 2, "regex": "", "skipUrlSync": False, "sort": 1}
    if include_all:
        v["allValue"] = all_value
    if description:
        v["description"] = description
    return v


# stagewatch_anomaly_active has a series for every known stage, whatever collectors run.
STAGES_METRIC = "stagewatch_anomaly_active"


def variables(q, stage=None, pipeline=True, heatmap_stage=False):
    """stage: None (no stage variable), "multi" (all stages side by side) or "single"."""
    out = [
        datasource_variable(),
        query_variable("job", "Job", f"label_values(stagewatch_build_info{{{q.site}}}, job)"),
        query_variable("instance", "Instance",
                       f'label_values(stagewatch_build_info{{{q.site}, job=~"$job"}}, instance)'),
    ]
    if pipeline:
        # pipeline is optional on a stage: All must also match series without it.
        out.append(query_variable(
            "pipeline", "Pipeline", f"label_values({STAGES_METRIC}{{{q.agent}}}, pipeline)",
            all_value=".*",
            description="The pipeline label of configured stages; All includes stages "
                        "without one."))
    if stage:
        sq = f"label_values({STAGES_METRIC}{{{q.pipeline}}}, pipeline_stage)"
        if stage == "multi":
            out.append(query_variable("pipeline_stage", "Pipeline stage", sq))
        else:
            out.append(query_variable("pipeline_stage", "Pipeline stage", sq,
                                      multi=False, include_all=False))
    if heatmap_stage:
        out.append(query_variable(
            "heatmap_stage", "Heatmap stage",
            f'label_values({STAGES_METRIC}{{{q.pipeline}, pipeline_stage=~"$pipeline_stage"}}, '
            "pipeline_stage)", multi=False, include_all=False,
            description="The one stage whose run-queue latency heatmap is shown."))
    return out


# ---- annotations -------------------------------------------------------------------------

BUILT_IN = {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts", "type": "dashboard"}


def prometheus_annotation(name, color, expr, title, text, tags):
    return {"name": name, "datasource": DS, "enable": True, "hide": False, "iconColor": color,
            "target": {"datasource": DS, "expr": expr, "refId": "Anno"},
            "titleFormat": title, "textFormat": text, "tagKeys": tags,
            "useValueForTime": False}


def annotations(q, sel=None):
    """OOM kills and anomalies of the series sel selects (default: the selected stages)."""
    sel = sel or q.stage
    return [
        BUILT_IN,
        prometheus_annotation(
            "OOM kills", "red",
            "sum by (instance, pipeline_stage, kind) "
            f"({q.increase('stagewatch_oom_kills_total', sel)}) > 0",
            "OOM kill in {{pipeline_stage}}",
            "{{kind}} OOM kill of a process of stage {{pipeline_stage}} on {{instance}}",
            "pipeline_stage,kind"),
        prometheus_annotation(
            "Anomalies", "orange",
            f"max by (instance, pipeline_stage, rule) (stagewatch_anomaly_active{{{sel}}}) == 1",
            "Anomaly {{rule}} in {{pipeline_stage}}",
            "The agent's {{rule}} detector is firing for stage {{pipeline_stage}} on {{instance}}",
            "pipeline_stage,rule"),
    ]


def dashboard(uid, title, description, panels, templating, annotation_list=(BUILT_IN,)):
    return {
        "annotations": {"list": list(annotation_list)},
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
        "templating": {"list": templating},
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "",
        "title": title,
        "uid": uid,
        "version": 1,
        "weekStart": "",
    }


def drilldown_link():
    """From a stage's series to that stage's drill-down, keeping time and variables."""
    return {
        "title": "Drill down into stage ${__field.labels.pipeline_stage}",
        "url": (f"/d/{DRILLDOWN_UID}/stagewatch-stage-drill-down?${{__url_time_range}}"
                "&${datasource:queryparam}&${job:queryparam}&${instance:queryparam}"
                "&${pipeline:queryparam}&var-pipeline_stage=${__field.labels.pipeline_stage}"),
    }
