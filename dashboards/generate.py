#!/usr/bin/env python3
"""Generates the stagewatch Prometheus rules and Grafana dashboards from one configuration.

    dashboards/generate.py                       rewrite alerts/stagewatch.rules.yml and
                                                 dashboards/*.json from alerts/config.yaml
    dashboards/generate.py --check               exit 1 if a committed file differs from what
                                                 the defaults generate
    dashboards/generate.py --config site.yaml --out DIR
                                                 a site's own files: DIR/stagewatch.rules.yml,
                                                 DIR/dashboards/*.json and DIR/tests/*.yml
                                                 (the promtool tests, for promtool test rules)

The site's file holds only the keys it changes from alerts/config.yaml. Edit the generator
(dashboards/mixin/) or the configuration, never the generated files. Python 3 with PyYAML
(Debian: python3-yaml). Keys: docs/dashboards.md; metrics: docs/metrics.md.
"""

import argparse
import glob
import json
import os
import sys

from mixin import config, promtool_tests, rules, rules_yaml
from mixin.agent_health import agent_health
from mixin.drilldown import stage_drilldown
from mixin.fleet import fleet_overview
from mixin.overview import pipeline_overview

REPO = config.REPO
DASHBOARDS = {
    "pipeline-overview.json": pipeline_overview,
    "stage-drilldown.json": stage_drilldown,
    "agent-health.json": agent_health,
    "fleet-overview.json": fleet_overview,
}
TEST_TEMPLATES = os.path.join(REPO, "alerts", "tests")


def outputs(cfg, out_dir):
    """{path: text} of every file generated for cfg; into out_dir, or the repository."""
    source = os.path.relpath(cfg.source, REPO) if out_dir is None else cfg.source
    rules_text = rules_yaml.render(rules.HEADER.format(source=source), rules.groups(cfg))
    if out_dir is None:
        files = {os.path.join(REPO, "alerts", "stagewatch.rules.yml"): rules_text}
        board_dir = os.path.join(REPO, "dashboards")
    else:
        files = {os.path.join(out_dir, "stagewatch.rules.yml"): rules_text}
        board_dir = os.path.join(out_dir, "dashboards")
        for path in sorted(glob.glob(os.path.join(TEST_TEMPLATES, "*.yml"))):
            name = os.path.basename(path)
            with open(path, encoding="utf-8") as f:
                files[os.path.join(out_dir, "tests", name)] = promtool_tests.render(
                    f.read(), cfg, name)
    for name, build in DASHBOARDS.items():
        files[os.path.join(board_dir, name)] = (
            json.dumps(build(cfg), indent=2, ensure_ascii=False) + "\n")
    return files


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", help="a site's configuration, read over alerts/config.yaml")
    ap.add_argument("--out", help="write into this directory instead of the repository")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a file differs from what would be written")
    args = ap.parse_args(argv[1:])
    try:
        cfg = config.load(args.config)
    except config.ConfigError as e:
        print(f"generate.py: {e}", file=sys.stderr)
        return 2
    files = outputs(cfg, args.out)
    if args.check:
        stale = []
        for path, text in files.items():
            try:
                with open(path, encoding="utf-8") as f:
                    same = f.read() == text
            except FileNotFoundError:
                same = False
            if not same:
                stale.append(os.path.relpath(path, REPO))
        if stale:
            print(f"out of date with dashboards/generate.py: {', '.join(stale)}; "
                  "run dashboards/generate.py", file=sys.stderr)
            return 1
        return 0
    for path, text in files.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
