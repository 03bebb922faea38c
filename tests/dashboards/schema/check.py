#!/usr/bin/env python3
"""Type-checks dashboards against @grafana/schema with the TypeScript compiler.

Each dashboard becomes one TypeScript file that assigns its JSON to the StagewatchDashboard
type (dashboard.ts), and `tsc --noEmit` checks them all in one run. A few broken copies of
a dashboard are checked beside them: each must fail, or the check could not fail.

    check.py --work DIR FILE...

DIR holds node_modules with @grafana/schema and typescript (schema.sh installs them).
Exit status: 0 every dashboard type-checks and every broken copy fails, 1 otherwise.
"""

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def first(items, pred):
    return next(i for i in items if pred(i))


def old_annotation_form(d):
    a = first(d["annotations"]["list"], lambda a: "target" in a)
    a["expr"] = a.pop("target")["expr"]


def empty_current(d):
    first(d["templating"]["list"], lambda v: v["type"] == "query")["current"] = {}


def option_typo(d):
    p = first(d["panels"], lambda p: p["type"] == "timeseries")
    p["options"]["legend"]["showLegnd"] = p["options"]["legend"].pop("showLegend")


def target_without_expr(d):
    t = first(d["panels"], lambda p: p.get("targets"))["targets"][0]
    t["query"] = t.pop("expr")


def wrong_type(d):
    first(d["panels"], lambda p: p["type"] != "row")["gridPos"]["w"] = "6"


def bad_enum_value(d):
    p = first(d["panels"], lambda p: p["type"] == "timeseries")
    p["fieldConfig"]["defaults"]["custom"]["drawStyle"] = "dots"


BROKEN = {
    "old-annotation-form": old_annotation_form,
    "empty-current": empty_current,
    "option-typo": option_typo,
    "target-without-expr": target_without_expr,
    "wrong-type": wrong_type,
    "bad-enum-value": bad_enum_value,
}


def ts_module(dashboard):
    return ('import type { StagewatchDashboard } from "../dashboard";\n\n'
            f"const dashboard: StagewatchDashboard = {json.dumps(dashboard, indent=2)};\n"
            "export default dashboard;\n")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv[1:])
    tsc = os.path.join(args.work, "node_modules", ".bin", "tsc")
    if not os.access(tsc, os.X_OK):
        print(f"schema check: {tsc} not found; run tests/dashboards/schema.sh", file=sys.stderr)
        return 1

    checked = os.path.join(args.work, "checked")
    shutil.rmtree(checked, ignore_errors=True)
    os.makedirs(checked)
    for name in ("dashboard.ts", "tsconfig.json"):
        shutil.copy(os.path.join(HERE, name), args.work)
    modules = {}  # module file name → what it is
    dashboards = []
    for i, path in enumerate(args.files):
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        dashboards.append(d)
        stem = f"{i}-{os.path.splitext(os.path.basename(path))[0]}"
        modules[f"{stem}.ts"] = ("good", path)
        with open(os.path.join(checked, f"{stem}.ts"), "w") as f:
            f.write(ts_module(d))
    # The broken copies start from a dashboard with every part they break.
    base = max(dashboards, key=lambda d: len(d["annotations"]["list"]))
    for name, mutate in BROKEN.items():
        d = copy.deepcopy(base)
        mutate(d)
        modules[f"broken-{name}.ts"] = ("broken", name)
        with open(os.path.join(checked, f"broken-{name}.ts"), "w") as f:
            f.write(ts_module(d))

    r = subprocess.run([tsc, "-p", os.path.join(args.work, "tsconfig.json"), "--pretty", "false"],
                       cwd=args.work, capture_output=True, text=True)
    errors = {}
    for line in (r.stdout + r.stderr).splitlines():
        m = re.match(r"(?:\./)?checked/([^(]+)\(\d+,\d+\): error (.*)", line)
        if m:
            errors.setdefault(m.group(1), []).append(line)
        elif re.match(r"\S+\(\d+,\d+\): error", line) or line.startswith("error"):
            errors.setdefault("(other)", []).append(line)

    failed = False
    for other in errors.pop("(other)", []):
        print(f"schema check FAIL: {other}")
        failed = True
    for module, (kind, what) in modules.items():
        got = errors.get(module, [])
        if kind == "good" and got:
            failed = True
            print(f"schema check FAIL: {what} does not type-check against @grafana/schema:")
            for e in got:
                print(f"  {e}")
        elif kind == "good":
            print(f"schema check ok: {what}")
        elif not got:
            failed = True
            print(f"schema check FAIL: the broken copy '{what}' type-checks: the check cannot "
                  "catch it")
    if r.returncode != 0 and not errors and not failed:
        print(f"schema check FAIL: tsc exited {r.returncode}:\n{r.stdout}{r.stderr}")
        failed = True
    print(f"schema check: {len(args.files)} dashboard(s), {len(BROKEN)} broken copies caught: "
          f"{'FAILED' if failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
