"""The site configuration: alerts/config.yaml (the defaults), then a site's file on top."""

import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULTS = os.path.join(REPO, "alerts", "config.yaml")

DURATION = re.compile(r"^(\d+(ms|[smhdwy]))+$")
STAGE_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.-]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*')

# alert → {key: kind}; kinds: duration, ratio (0 < x <= 1), positive (number > 0).
ALERT_KEYS = {
    "oom_kill": {"window": "duration"},
    "run_interrupted": {"window": "duration"},
    "memory_near_limit": {"ratio": "ratio", "for": "duration"},
    "memory_limit_eta": {"seconds": "positive", "min_ratio": "ratio", "for": "duration"},
    "memory_pressure": {"ratio": "ratio", "window": "duration", "for": "duration"},
    "cpu_starvation": {"p99_seconds": "positive", "window": "duration", "for": "duration"},
    "cpu_throttling": {"ratio": "ratio", "window": "duration", "for": "duration"},
    "cross_stage_preemption": {"per_second": "positive", "window": "duration",
                               "for": "duration"},
    "remote_memory": {"ratio": "ratio", "for": "duration"},
    "agent_down": {"for": "duration"},
    "probe_not_attached": {"for": "duration"},
    "events_lost": {"window": "duration"},
}
TOP_KEYS = {"selector", "selector_sample", "runbook_url_base", "critical_stages", "alerts"}


class ConfigError(Exception):
    pass


class Config:
    """The validated configuration. Attribute names follow the file's keys."""

    def __init__(self, raw, source):
        self.source = source
        self.selector = raw["selector"].strip()
        self.matchers = parse_selector(self.selector)
        self.sample = dict(raw["selector_sample"])
        self.runbook_url_base = raw["runbook_url_base"].rstrip("/")
        self.critical_stages = raw["critical_stages"]
        self.alerts = raw["alerts"]

    def runbook(self, alertname):
        return f"{self.runbook_url_base}/{alertname}.md"

    def critical_regex(self):
        """The pipeline_stage regex of the critical stages, or None when every stage is."""
        if self.critical_stages == "all":
            return None
        return "|".join(re.escape(s) for s in self.critical_stages)

    def is_critical(self, stage):
        return self.critical_stages == "all" or stage in self.critical_stages

    def sel(self, *extra):
        """The selector with extra matchers, for inside {...}."""
        return ", ".join([self.selector, *extra])


def parse_selector(text):
    """[(label, op, value)] of a comma-separated list of label matchers."""
    out, pos = [], 0
    while True:
        m = MATCHER.match(text, pos)
        if not m:
            raise ConfigError(f"selector {text!r}: expected label matchers such as "
                              f'job="stagewatch", separated by commas, at position {pos}')
        out.append((m.group(1), m.group(2), m.group(3).encode().decode("unicode_escape")))
        pos = m.end()
        if pos == len(text):
            return out
        if text[pos] != ",":
            raise ConfigError(f"selector {text!r}: expected ',' at position {pos}")
        pos += 1


def sample_matches(matchers, sample):
    for label, op, value in matchers:
        got = sample.get(label, "")
        if op == "=":
            ok = got == value
        elif op == "!=":
            ok = got != value
        else:
            hit = re.fullmatch(value, got) is not None
            ok = hit if op == "=~" else not hit
        if not ok:
            return False
    return True


def merge(base, site):
    """The site's keys over the defaults; alerts.<alert> settings one by one (a site that sets
    one threshold keeps the alert's other defaults), every other key as a whole."""
    out = dict(base)
    for k, v in site.items():
        if k == "alerts" and isinstance(v, dict):
            out[k] = dict(base[k])
            for name, settings in v.items():
                known = base[k].get(name)
                out[k][name] = ({**known, **settings}
                                if isinstance(known, dict) and isinstance(settings, dict)
                                else settings)
        else:
            out[k] = v
    return out


def read_yaml(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}")
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {e}")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys (selector, alerts, ...) at the top")
    return data


def validate(raw, source):
    def fail(msg):
        raise ConfigError(f"{source}: {msg}")

    for k in raw:
        if k not in TOP_KEYS:
            fail(f"unknown key {k!r}; known keys: {', '.join(sorted(TOP_KEYS))}")
    if not isinstance(raw.get("selector"), str) or not raw["selector"].strip():
        fail("selector must be a non-empty string of label matchers, such as 'job=\"stagewatch\"'")
    try:
        matchers = parse_selector(raw["selector"].strip())
    except ConfigError as e:
        fail(str(e))
    sample = raw.get("selector_sample")
    if not isinstance(sample, dict) or not all(
            isinstance(k, str) and LABEL_NAME.match(k) and isinstance(v, str)
            for k, v in sample.items()):
        fail("selector_sample must map label names to string values, such as {job: stagewatch}")
    if "job" not in sample:
        fail("selector_sample needs a job label: set selector_sample to the labels of one "
             "agent target, such as {job: stagewatch, cluster: eu1}")
    if not sample_matches(matchers, sample):
        fail(f"selector_sample {sample} does not match the selector {raw['selector']!r}; "
             "give the labels of one agent target the selector selects")
    if not isinstance(raw.get("runbook_url_base"), str) or not raw["runbook_url_base"].strip():
        fail("runbook_url_base must be a non-empty string (a URL or path prefix)")
    stages = raw.get("critical_stages")
    if stages != "all":
        if not isinstance(stages, list) or not stages:
            fail("critical_stages must be `all` or a non-empty list of pipeline_stage names")
        for s in stages:
            if not isinstance(s, str) or not STAGE_NAME.match(s):
                fail(f"critical_stages: {s!r} is not a stage name ([a-zA-Z_][a-zA-Z0-9_.-]*)")
    alerts = raw.get("alerts")
    if not isinstance(alerts, dict):
        fail("alerts must be a mapping of alert settings")
    for name, settings in alerts.items():
        if name not in ALERT_KEYS:
            fail(f"alerts: unknown alert {name!r}; known: {', '.join(sorted(ALERT_KEYS))}")
        if not isinstance(settings, dict):
            fail(f"alerts.{name} must be a mapping, such as {{for: 5m}}")
        for key, value in settings.items():
            kind = ALERT_KEYS[name].get(key)
            where = f"alerts.{name}.{key}"
            if kind is None:
                fail(f"alerts.{name}: unknown key {key!r}; known: "
                     f"{', '.join(sorted(ALERT_KEYS[name]))}")
            if kind == "duration" and not (isinstance(value, str) and DURATION.match(value)):
                fail(f"{where} must be a Prometheus duration such as 5m, is {value!r}")
            if kind in ("ratio", "positive") and (isinstance(value, bool) or
                                                  not isinstance(value, (int, float))
                                                  or value <= 0):
                fail(f"{where} must be a number above 0, is {value!r}")
            if kind == "ratio" and value > 1:
                fail(f"{where} is a share: between 0 and 1, is {value!r}")
        for key in ALERT_KEYS[name]:
            if key not in settings:
                fail(f"alerts.{name}.{key} is missing")


def load(site_path=None):
    """The defaults, with the site's file (if any) merged over them, validated."""
    raw = read_yaml(DEFAULTS)
    validate(raw, DEFAULTS)
    source = DEFAULTS
    if site_path:
        site = read_yaml(site_path)
        for k in site:
            if k not in TOP_KEYS:
                raise ConfigError(f"{site_path}: unknown key {k!r}; known keys: "
                                  f"{', '.join(sorted(TOP_KEYS))}")
        if "selector" in site and "selector_sample" not in site:
            site["selector_sample"] = sample_from_selector(site["selector"], site_path)
        raw = merge(raw, site)
        source = site_path
        validate(raw, site_path)
    warn_unless_url(raw["runbook_url_base"], source)
    return Config(raw, source)


def warn_unless_url(base, source):
    """A runbook link that is a repository path opens nowhere from a page: say so, every run."""
    if re.match(r"^https?://", base):
        return
    sys.stderr.write(
        f"warning: {source}: runbook_url_base {base!r} is not an http(s) URL, so the runbook "
        "links of the alerts open nowhere; publish the runbooks (docs/runbooks/, installed by "
        "the .deb at /usr/share/doc/stagewatch/runbooks/) and set runbook_url_base to their "
        "address in your site configuration\n")


def sample_from_selector(selector, source):
    """A site that sets only the selector: its equality matchers are the sample labels."""
    try:
        matchers = parse_selector(str(selector).strip())
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}")
    return {label: value for label, op, value in matchers if op == "="}
