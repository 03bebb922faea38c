#!/usr/bin/env python3
"""The agent, started the way deploy/stagewatch.service starts it, attaches every probe, and
does nothing the unit's sandbox would refuse.

PID 1 is not systemd here, so the unit's credentials are applied with setpriv: a non-root
uid (the unit's User= where it exists on this host, else 65534), the unit's
AmbientCapabilities as the only capabilities, its CapabilityBoundingSet, no_new_privs. Then:

- `stagewatch features --json` reports every probe attached;
- the agent, run under strace from start to SIGTERM with one scrape in between, exports
  stagewatch_probe_attached 1 for each of those probes and exits 0;
- every system call it made is allowed by the unit's SystemCallFilter (groups expanded by
  `systemd-analyze syscall-filter`), every socket family by RestrictAddressFamilies, no
  mapping is both writable and executable nor made executable later (MemoryDenyWriteExecute),
  no file is opened for writing outside the unit's StateDirectory and private /tmp
  (ProtectSystem=strict), and
  nothing under /home, /root, /run/user (ProtectHome) or /proc/kallsyms, /proc/kcore
  (ProtectKernelTunables) is opened.

    unit_privileges_test.py path/to/stagewatch
"""

import os
import pwd
import re
import shutil
import sys
import tempfile
import time

from deploy_support import (fail, log, need_root, need_tools, require_all_attached,
                            run, scrape_agent, unit_setpriv, unit_settings)

FALLBACK_UID = 65534  # nobody, where the unit's user does not exist on this host
HOME_PATHS = ("/home", "/root", "/run/user")
KERNEL_PATHS = ("/proc/kallsyms", "/proc/kcore")


def credentials(settings):
    """setpriv's arguments for the unit's user (or FALLBACK_UID), and that uid."""
    name = settings.get("User", [""])[-1]
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        uid = FALLBACK_UID
    if uid == 0:
        fail("the unit runs as root")
    return unit_setpriv(settings, uid), uid


def expand_syscalls(token, cache={}):
    """A syscall name, or a @group expanded recursively."""
    if not token.startswith("@"):
        return {token}
    if token not in cache:
        out = run(["systemd-analyze", "syscall-filter", token]).stdout.splitlines()[1:]
        names = set()
        for line in out:
            item = line.strip()
            if item and not item.startswith("#"):
                names |= expand_syscalls(item)
        cache[token] = names
    return cache[token]


def allowed_syscalls(settings):
    """SystemCallFilter: the first (allow) list, minus every later ~ list."""
    allowed = None
    for value in settings["SystemCallFilter"]:
        deny = value.startswith("~")
        names = set().union(*(expand_syscalls(t) for t in value.lstrip("~").split()))
        if allowed is None:
            if deny:
                fail("SystemCallFilter starts with a deny list; the unit should allow-list")
            allowed = names
        elif deny:
            allowed -= names
        else:
            allowed |= names
    return allowed


def agent_pid(trace_file, binary, timeout_s=10):
    """The agent's pid: the one that strace saw exec the binary (strace forks test children
    of its own at start, so its first child is not always the agent)."""
    execve = re.compile(rf'^(\d+) +execve\("{re.escape(binary)}"')
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        with open(trace_file) as f:
            for line in f:
                m = execve.match(line)
                if m:
                    return int(m.group(1))
        time.sleep(0.05)
    fail("strace did not start the agent")


def writable_under_unit(open_line, settings):
    """Whether an open for writing names a path the unit leaves writable: its StateDirectory
    (also as a path relative to WorkingDirectory), PrivateTmp's /tmp and /var/tmp, /dev/null."""
    m = re.search(r'open(?:at2?)?\((?:(AT_FDCWD|\d+), )?"([^"]*)"', open_line)
    if not m:
        return False
    dirfd, path = m.groups()
    if not path.startswith("/"):
        if dirfd not in (None, "AT_FDCWD"):
            return False  # relative to a directory descriptor: not resolvable from the trace
        path = os.path.join(settings.get("WorkingDirectory", ["/"])[-1], path)
    path = os.path.normpath(path)
    roots = [f"/var/lib/{d}" for v in settings.get("StateDirectory", []) for d in v.split()]
    if settings.get("PrivateTmp", ["no"])[-1] == "yes":
        roots += ["/tmp", "/var/tmp"]
    return path == "/dev/null" or any(path == r or path.startswith(r + "/") for r in roots)


def check_trace(trace_file, settings):
    with open(trace_file) as f:
        lines = f.read().splitlines()
    calls = set()
    for line in lines:
        m = re.match(r"^\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]", line)
        if m:
            calls.add(m.group(1))
    if "bpf" not in calls:
        fail("the trace shows no bpf() call: strace did not trace the agent")
    refused = sorted(calls - allowed_syscalls(settings))
    if refused:
        fail(f"system calls outside the unit's SystemCallFilter: {refused}")
    log(f"SystemCallFilter: all {len(calls)} distinct system calls allowed")

    families = set(re.findall(r"\bsocket\((AF_[A-Z0-9]+)", "\n".join(lines)))
    allowed_families = set(" ".join(settings["RestrictAddressFamilies"]).split())
    if not families <= allowed_families:
        fail(f"socket families {sorted(families - allowed_families)} outside RestrictAddressFamilies")
    log(f"RestrictAddressFamilies: used {sorted(families)}")

    for line in lines:
        wx = re.search(r"\b(mmap|mprotect|pkey_mprotect)\(.*PROT_EXEC", line)
        if wx and (wx.group(1) != "mmap" or "PROT_WRITE" in line):
            fail(f"MemoryDenyWriteExecute would refuse: {line}")
        if re.search(r"\bopen(at|at2)?\(.*O_(WRONLY|RDWR|CREAT|TRUNC)", line) and \
           not writable_under_unit(line, settings):
            fail(f"ProtectSystem=strict would refuse a write here: {line}")
        for path in HOME_PATHS + KERNEL_PATHS:
            if re.search(rf'"{re.escape(path)}(/[^"]*)?"', line):
                fail(f"the unit hides {path}, but the agent opened it: {line}")
    log(f"sandbox: {len(lines)} trace lines, no W^X mapping, no write outside the state "
        "directory or private /tmp, no hidden path")


def main():
    binary_built = os.path.abspath(sys.argv[1])
    need_root("running the agent with the unit's credentials")
    need_tools("setpriv", "strace", "systemd-analyze")
    settings = unit_settings()
    prefix, uid = credentials(settings)
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        binary = os.path.join(tmp, "stagewatch")  # where any uid can reach it
        shutil.copy(binary_built, binary)
        probes = require_all_attached(prefix + [binary, "features", "--json"],
                                      f"uid {uid} with the unit's credentials")
        trace_file = os.path.join(tmp, "trace")
        open(trace_file, "w").close()
        os.chown(trace_file, uid, -1)  # strace runs as the unit's user and writes it
        cmd = prefix + ["strace", "-f", "-qq", "-o", trace_file, binary,
                        "--web.listen-address=127.0.0.1:0"]
        attached = scrape_agent(cmd, os.path.join(tmp, "agent.log"),
                                lambda _: agent_pid(trace_file, binary))
        if set(attached) != probes or any(v != 1 for v in attached.values()):
            fail(f"stagewatch_probe_attached as uid {uid}: {attached}; features listed {sorted(probes)}")
        log(f"/metrics as uid {uid}: stagewatch_probe_attached 1 for all {len(attached)} probes")
        check_trace(trace_file, settings)
    log("PASS")


if __name__ == "__main__":
    main()
