"""Shared by the tests in tests/deploy: the unit file parsed, root checks, child processes."""

import os
import subprocess
import sys

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
