"""Grafana panel builders: the JSON of one panel, without its id and position."""

DS = {"type": "prometheus", "uid": "${datasource}"}


def target(expr, legend="", **extra):
    t = {"datasource": DS, "expr": expr, "legendFormat": legend, "range": True,
         "instant": False, "editorMode": "code"}
    t.update(extra)
    return t


def instant_target(expr, legend="", fmt="time_series"):
    return target(expr, legend, range=False, instant=True, format=fmt)


def timeseries(title, description, unit, targets, w=12, h=8, bars=False, stack=False,
               min_=0, max_=None, overrides=(), links=(), step=False, decimals=None):
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
        defaults["links"] = list(links)
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
                    "frameIndex": 0,
                    "footer": {"show": False, "reducer": ["sum"], "fields": [], "countRows": False}},
        "transformations": list(transformations),
        "targets": with_ref_ids(targets),
    }


def barchart(title, description, unit, targets, transformations, w=12, h=8, overrides=(),
             stack=True, horizontal=True):
    """Bars from a table: one group per row (its first text field), one bar per number field."""
    return {
        "type": "barchart", "title": title, "description": description, "datasource": DS,
        "gridPos": {"w": w, "h": h},
        "fieldConfig": {"defaults": {
            "unit": unit, "min": 0, "color": {"mode": "palette-classic"},
            "custom": {"fillOpacity": 80, "gradientMode": "none", "lineWidth": 1,
                       "axisPlacement": "auto", "axisLabel": "",
                       "scaleDistribution": {"type": "linear"},
                       "hideFrom": {"legend": False, "tooltip": False, "viz": False}},
            "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}]}},
            "overrides": list(overrides)},
        "options": {
            "orientation": "horizontal" if horizontal else "vertical",
            "stacking": "normal" if stack else "none",
            "showValue": "never", "barWidth": 0.8, "groupWidth": 0.7, "fullHighlight": False,
            "xTickLabelRotation": 0, "xTickLabelMaxLength": 24,
            "legend": {"showLegend": True, "displayMode": "list", "placement": "bottom",
                       "calcs": []},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
        "transformations": list(transformations),
        "targets": with_ref_ids(targets),
    }


def state_timeline(title, description, targets, mappings, w=24, h=8):
    """One row per series, coloured by its value through mappings."""
    return {
        "type": "state-timeline", "title": title, "description": description, "datasource": DS,
        "gridPos": {"w": w, "h": h},
        "fieldConfig": {"defaults": {
            "unit": "none", "color": {"mode": "thresholds"}, "mappings": list(mappings),
            "custom": {"fillOpacity": 80, "lineWidth": 0,
                       "hideFrom": {"legend": False, "tooltip": False, "viz": False}},
            "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}]}},
            "overrides": []},
        "options": {
            "mergeValues": True, "showValue": "auto", "alignValue": "left", "rowHeight": 0.9,
            "legend": {"showLegend": True, "displayMode": "list", "placement": "bottom",
                       "calcs": []},
            "tooltip": {"mode": "single", "sort": "none"},
        },
        "targets": with_ref_ids(targets),
    }


def heatmap(title, description, expr, unit="s", w=12, h=8):
    p = {
        "type": "heatmap", "title": title, "description": description, "datasource": DS,
        "gridPos": {"w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit, "custom": {
            "hideFrom": {"legend": False, "tooltip": False, "viz": False},
            "scaleDistribution": {"type": "linear"}}}, "overrides": []},
        "options": {
            "calculate": False, "cellGap": 1, "showValue": "auto",
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



def by(labels, agg, expr):
    return f"{agg} by ({labels}) ({expr})"
