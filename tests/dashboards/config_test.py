#!/usr/bin/env python3
"""Tests of the generator's configuration (alerts/config.yaml and a site's file on top).

Bad input of each kind is refused, by dashboards/generate.py itself, with exit status 2 and a
message naming the key; a good site file changes exactly what it sets. Python 3 + PyYAML.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATE = os.path.join(REPO, "dashboards", "generate.py")
sys.path.insert(0, os.path.join(REPO, "dashboards"))

from mixin import config  # noqa: E402


def generate(site_text, out):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(site_text)
    try:
        return subprocess.run([sys.executable, GENERATE, "--config", f.name, "--out", out],
                              capture_output=True, text=True)
    finally:
        os.unlink(f.name)


class BadConfig(unittest.TestCase):
    CASES = {
        "unknown top-level key": ("selectr: 'job=\"x\"'\n", "unknown key 'selectr'"),
        "selector not matchers": ("selector: 'job'\n", "expected label matchers"),
        "selector without job sample": ("selector: 'cluster=\"eu1\"'\n",
                                        "selector_sample needs a job label"),
        "sample the selector rejects": (
            "selector: 'job=\"a\"'\nselector_sample: {job: b}\n", "does not match the selector"),
        "critical stages not a list": ("critical_stages: train\n", "critical_stages must be"),
        "bad stage name": ("critical_stages: [\"tr ain\"]\n", "is not a stage name"),
        "unknown alert": ("alerts: {oom: {window: 5m}}\n", "unknown alert 'oom'"),
        "unknown alert key": ("alerts: {oom_kill: {windw: 5m}}\n", "unknown key 'windw'"),
        "bad duration": ("alerts: {agent_down: {for: 2 minutes}}\n", "Prometheus duration"),
        "share above 1": ("alerts: {memory_near_limit: {ratio: 90}}\n", "between 0 and 1"),
        "negative threshold": ("alerts: {cpu_starvation: {p99_seconds: -1}}\n", "above 0"),
        "not a mapping": ("- selector\n", "expected a mapping"),
        "not YAML": ("selector: [\n", "not valid YAML"),
    }

    def test_each_bad_input_is_refused_with_its_reason(self):
        for name, (text, message) in self.CASES.items():
            with self.subTest(name), tempfile.TemporaryDirectory() as out:
                r = generate(text, out)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)
                self.assertFalse(os.listdir(out), "files written for a bad configuration")


class SiteConfig(unittest.TestCase):
    def test_a_url_runbook_base_is_not_warned_about(self):
        with tempfile.TemporaryDirectory() as out:
            r = generate("runbook_url_base: https://wiki.example.org/stagewatch/runbooks\n", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("runbook_url_base", r.stderr)
            r = generate("critical_stages: all\n", out)  # the default base, a repository path
            self.assertIn("runbook_url_base 'docs/runbooks' is not an http(s) URL", r.stderr)

    def test_site_values_reach_rules_and_dashboards(self):
        with tempfile.TemporaryDirectory() as out:
            r = generate("selector: 'job=\"lab\"'\nruntbook: 1\n", out)
            self.assertEqual(r.returncode, 2)  # a typo is never ignored
            r = generate("selector: 'job=\"lab\"'\nrunbook_url_base: x\n"
                         + "critical_stages: [validate]\n"
                         + "alerts: {memory_near_limit: {ratio: 0.85}}\n", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(out, "stagewatch.rules.yml")) as f:
                rules = f.read()
            self.assertIn('job="lab", pipeline_stage=~"validate"', rules)
            self.assertIn('job="lab", pipeline_stage!~"validate"', rules)
            self.assertIn("runbook_url: x/StagewatchOOMKill.md", rules)
            self.assertIn("runbook_url_base 'x' is not an http(s) URL", r.stderr)
            self.assertIn(">= 0.85", rules)
            self.assertNotIn("stagewatch.*", rules)
            # Unchanged keys keep their defaults.
            self.assertIn("> 0.25", rules)
            with open(os.path.join(out, "dashboards", "pipeline-overview.json")) as f:
                board = json.load(f)
            job = next(v for v in board["templating"]["list"] if v["name"] == "job")
            self.assertEqual(job["query"], 'label_values(stagewatch_build_info{job="lab"}, job)')
            with open(os.path.join(out, "tests", "memory.test.yml")) as f:
                tests = f.read()
            self.assertIn('{job="lab",instance=', tests)
            self.assertNotIn("@", tests.split("rule_files")[1])

    def test_defaults_are_the_committed_configuration(self):
        cfg = config.load()
        self.assertEqual(cfg.selector, 'job=~".*stagewatch.*"')
        self.assertIsNone(cfg.critical_regex())
        self.assertTrue(cfg.is_critical("any-stage"))


class SiteThresholds(unittest.TestCase):
    """Every threshold and duration a site may set reaches the rule of its alert, in place of
    the default: each key of each alert in turn, set to a value no default has."""

    # alert key of the configuration → the alertname of its rules
    ALERTNAMES = {
        "oom_kill": "StagewatchOOMKill",
        "run_interrupted": "StagewatchRunInterrupted",
        "memory_near_limit": "StagewatchMemoryNearLimit",
        "memory_limit_eta": "StagewatchMemoryLimitETAShort",
        "memory_pressure": "StagewatchMemoryPressureHigh",
        "cpu_starvation": "StagewatchCPUStarvation",
        "cpu_throttling": "StagewatchCPUThrottlingHigh",
        "cross_stage_preemption": "StagewatchCrossStagePreemption",
        "remote_memory": "StagewatchRemoteMemoryHigh",
        "agent_down": "StagewatchAgentDown",
        "probe_not_attached": "StagewatchProbeNotAttached",
        "events_lost": "StagewatchEventsLost",
    }
    # kind → (the site's value, the text the rule's expression must then hold)
    VALUES = {"ratio": (0.37, "0.37"), "positive": (433, "433"), "duration": ("17m", "[17m]")}
    # Keys written otherwise than as their value.
    SPECIAL = {("memory_limit_eta", "min_ratio"): (0.37, "<= 0.63")}  # headroom <= 1 - ratio

    @staticmethod
    def rules(out):
        import yaml
        with open(os.path.join(out, "stagewatch.rules.yml")) as f:
            groups = yaml.safe_load(f)["groups"]
        return [r for g in groups for r in g["rules"] if "alert" in r]

    def test_every_alert_of_the_configuration_has_its_rules_named(self):
        self.assertEqual(set(self.ALERTNAMES), set(config.ALERT_KEYS))

    def test_each_site_value_reaches_its_alerts_rule(self):
        with tempfile.TemporaryDirectory() as out:
            self.assertEqual(generate("", out).returncode, 0)
            defaults = self.rules(out)
        for alert, keys in config.ALERT_KEYS.items():
            for key, kind in keys.items():
                with self.subTest(f"{alert}.{key}"), tempfile.TemporaryDirectory() as out:
                    value, text = self.SPECIAL.get((alert, key), self.VALUES[kind])
                    site = f"alerts: {{{alert}: {{{key}: {json.dumps(value)}}}}}\n"
                    r = generate(site, out)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    name = self.ALERTNAMES[alert]
                    mine = [x for x in self.rules(out) if x["alert"] == name]
                    self.assertTrue(mine, f"no rule {name}")
                    if key == "for":
                        self.assertIn(value, [x["for"] for x in mine])
                    else:
                        self.assertTrue(any(text in x["expr"] for x in mine),
                                        f"{text!r} in no expression of {name}: "
                                        + "\n".join(x["expr"] for x in mine))
                    # Nothing else changes: the other alerts' rules are the defaults'.
                    others = [x for x in self.rules(out) if x["alert"] != name]
                    self.assertEqual(others, [x for x in defaults if x["alert"] != name])


if __name__ == "__main__":
    unittest.main()
