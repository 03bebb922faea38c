#!/usr/bin/env python3
"""One ctest entry of the VM stage: judges one result the guest wrote (tests/vm/README.md).

  result.py test RESULTS RUN KIND SUITE.TEST   one gtest test of one run's binary
  result.py features RESULTS RUN ATTACH        that run's `stagewatch features --json`

Exits 0 on a pass, 1 on a failure or a missing result, 77 when the VM stage was skipped
(or the test skipped itself), printing what the guest logged for it either way."""
import json
import os
import sys
import xml.etree.ElementTree as ET

SKIP = 77


def stage_status(results):
    try:
        with open(os.path.join(results, "status")) as f:
            return f.read().strip()
    except OSError:
        return ""


def log_section(log_path, name):
    """The lines gtest printed between a test's RUN and its OK/FAILED/SKIPPED line."""
    try:
        with open(log_path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out, inside = [], False
    for line in lines:
        if line.startswith("[ RUN      ] ") and line[13:] == name:
            inside = True
        if inside:
            out.append(line)
            if line.startswith(("[       OK ] ", "[  FAILED  ] ", "[  SKIPPED ] ")) and name in line:
                break
    return out


def judge_test(results, run, kind, name):
    xml_path = os.path.join(results, f"{run}.{kind}.xml")
    log_path = os.path.join(results, f"{run}.{kind}.log")
    suite, _, test = name.partition(".")
    section = log_section(log_path, name)
    print("\n".join(section) if section else f"(no output for {name} in {log_path})")
    if not os.path.exists(xml_path):
        print(f"FAIL: {xml_path} is missing: the {kind} binary did not finish in the VM. "
              f"The end of its log ({log_path}) and the console ({results}/console.log):")
        for path in (log_path, os.path.join(results, "console.log")):
            try:
                with open(path, errors="replace") as f:
                    print("".join(f.readlines()[-30:]))
            except OSError:
                print(f"({path} is missing)")
        return 1
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        if case.get("classname") != suite or case.get("name") != test:
            continue
        failures = case.findall("failure")
        for failure in failures:
            print("FAIL:", failure.get("message", ""))
        if failures:
            return 1
        if case.get("result") == "skipped" or case.find("skipped") is not None:
            print(f"SKIPPED in the VM: {name}")
            return SKIP
        if case.get("status") != "run":
            print(f"FAIL: {name} was not run in the VM (status {case.get('status')})")
            return 1
        print(f"passed in the VM in {case.get('time')} s")
        return 0
    print(f"FAIL: {name} has no result in {xml_path}: it did not run in the VM")
    return 1


def judge_features(results, run, attach):
    path = os.path.join(results, f"features.{run}.json")
    try:
        with open(path) as f:
            text = f.read()
        report = json.loads(text)
    except (OSError, ValueError) as e:
        print(f"FAIL: cannot read {path}: {e}")
        return 1
    with open(os.path.join(results, f"features.{run}.txt"), errors="replace") as f:
        print(f.read())
    ok = True
    if report["cgroup"]["mode"] != "v2":
        print(f"FAIL: the guest's cgroup mode is {report['cgroup']['mode']}, not pure v2")
        ok = False
    for probe in report["probes"]:
        if not probe["attached"]:
            print(f"FAIL: probe {probe['name']} did not attach: {probe['error']}")
            ok = False
        if probe["name"] == "sched_switch" and probe["attach_type"] != attach:
            print(f"FAIL: sched_switch attached as {probe['attach_type']}, the plan wants {attach}")
            ok = False
    return 0 if ok else 1


def main(argv):
    if len(argv) < 4 or argv[1] not in ("test", "features"):
        print(__doc__)
        return 2
    results = argv[2]
    status = stage_status(results)
    if status.startswith("skipped"):
        print(f"the VM stage was {status}")
        return SKIP
    if not status.startswith("done"):
        print(f"FAIL: the VM stage did not finish (status {status or 'missing'}); "
              f"see {results}/console.log")
        return 1
    if argv[1] == "features":
        return judge_features(results, argv[3], argv[4])
    return judge_test(results, argv[3], argv[4], argv[5])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
