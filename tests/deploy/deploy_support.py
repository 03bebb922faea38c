"""Shared by the tests in tests/deploy: the unit file parsed, root checks, child processes,
the agent started, scraped and stopped."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNIT = os.path.join(REPO, "deploy", "stagewatch.service")
SKIPPED = 77  # ctest's SKIP_RETURN_CODE for these tests


def log(msg):
    print(msg, flush=True)


def fail(msg):
    log(f"FAIL: {msg}")
    sys.exit(1)


def need_root(what):
    """Skips (77) without root, or fails when STAGEWATCH_REQUIRE_PRIVILEGED=1 (as in CI)."""
    if os.geteuid() == 0:
        return
    if os.environ.get("STAGEWATCH_REQUIRE_PRIVILEGED") == "1":
        fail(f"{what} needs root, and STAGEWATCH_REQUIRE_PRIVILEGED=1")
    log(f"SKIPPED: {what} needs root; run the suite as root")
    sys.exit(SKIPPED)


def need_tools(*tools):
    """Fails, saying how to get them, unless every tool is on PATH."""
    for tool in tools:
        if not shutil.which(tool):
            fail(f"{tool} is missing; run scripts/install-deps.sh as root")


def unit_settings(path=UNIT):
    """The [Service] section as {key: [value, ...]}, every assignment kept in order."""
    settings, section = {}, None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            if section == "Service":
                key, _, value = line.partition("=")
                settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def run(cmd, timeout=300, check=True, **kwargs):
    """Runs a command, echoing it; returns the CompletedProcess (text output)."""
    log("+ " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and proc.returncode != 0:
        fail(f"{cmd[0]} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def setpriv(user, caps_ambient=(), caps_bounding=(), no_new_privs=True):
    """setpriv's arguments for `user` (a name or uid; its group of the same name or number)
    holding only `caps_bounding`, of which `caps_ambient` are ambient ("CAP_BPF" or "BPF")."""
    def caps(names):
        return "-all" + "".join(f",+{c.lower().removeprefix('cap_')}" for c in names)
    args = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
            f"--inh-caps={caps(caps_ambient)}", f"--ambient-caps={caps(caps_ambient)}",
            f"--bounding-set={caps(caps_bounding)}"]
    return args + ["--no-new-privs"] if no_new_privs else args


def unit_setpriv(settings, user):
    """setpriv's arguments for the credentials a unit's [Service] settings give `user`."""
    if settings.get("NoNewPrivileges", ["no"])[-1] != "yes":
        fail("the unit does not set NoNewPrivileges=yes")
    ambient = " ".join(settings["AmbientCapabilities"]).split()
    bounding = " ".join(settings["CapabilityBoundingSet"]).split()
    return setpriv(user, ambient, bounding)


def features_probes(cmd, **kwargs):
    """Runs `cmd` (ending in `stagewatch features --json`); returns its probes."""
    proc = run(cmd, check=False, **kwargs)
    try:
        probes = json.loads(proc.stdout)["probes"]
    except (ValueError, KeyError):
        fail(f"features printed no report (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    if not probes:
        fail("features reports no probes")
    return probes


def require_all_attached(cmd, who, **kwargs):
    """Every probe attached when `cmd` runs `stagewatch features --json`; their names."""
    probes = features_probes(cmd, **kwargs)
    broken = {p["name"]: p["error"] for p in probes if not p["attached"]}
    if broken:
        fail(f"as {who} these probes did not attach: {broken}")
    log(f"features as {who}: all {len(probes)} probes attached")
    return {p["name"] for p in probes}


def scrape_agent(cmd, log_file, find_agent=lambda proc: proc.pid, env=None):
    """Starts the agent with `cmd` (listening on 127.0.0.1:0), scrapes /metrics once, stops it
    with SIGTERM and wants exit 0; returns {probe: stagewatch_probe_attached}. `find_agent`
    gives the agent's pid where `cmd` wraps it in a process that forks (strace)."""
    log("+ " + " ".join(cmd))
    with open(log_file, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    agent = None
    try:
        agent = find_agent(proc)
        address, deadline = None, time.time() + 60
        while address is None and time.time() < deadline and proc.poll() is None:
            with open(log_file) as f:
                m = re.search(r'msg="?listening"? address=(\S+)', f.read())
            address = m.group(1) if m else None
            time.sleep(0.1)
        if address is None:
            fail(f"the agent never listened:\n{open(log_file).read()}")
        body = urllib.request.urlopen(f"http://{address}/metrics", timeout=10).read().decode()
        os.kill(agent, signal.SIGTERM)
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            for pid in {agent, proc.pid} - {None}:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
    if rc != 0:
        fail(f"the agent exited {rc} after SIGTERM:\n{open(log_file).read()}")
    pattern = r'^stagewatch_probe_attached\{probe="([^"]+)"[^}]*\} (\S+)$'
    return {m.group(1): float(m.group(2)) for m in re.finditer(pattern, body, re.M)}
