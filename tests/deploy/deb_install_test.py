#!/usr/bin/env python3
"""The .deb installs into a fresh Debian 12 root with apt resolving its dependencies, and the
agent runs there.

1. scripts/build-deb.sh builds build/stagewatch_<version>_<arch>.deb.
2. A Debian 12 root (debootstrap minbase plus systemd, as a server has) comes from a tarball
   cached in CACHE_DIR, made once from the Debian archive; every run unpacks a fresh copy.
3. In that root (chroot; /proc, and /sys and the cgroup mounts read-only, mounted in a private
   mount namespace that vanishes with this process, on failure too): `apt-get install ./deb`
   must pull its libraries (libbpf1 among them, absent before), the postinst must make the
   system user, and `stagewatch --version`, `stagewatch check-config` on the conffile,
   `stagewatch features` (as root, and as the package's user with only the unit's ambient
   capabilities) must succeed with every probe attached. Flags added in /etc/default/stagewatch
   must survive a reinstall, and the installed unit's ExecStart with them, as the unit's user,
   must serve /metrics with every probe attached. systemd-analyze of the root's own systemd
   verifies the unit as installed; the postinst must not enable it (systemd is not
   running there); `apt-get purge` must remove the files and the state directory.

    deb_install_test.py BUILD_DIR
"""

import ctypes
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

from debian_root import cached_root_tarball
from deploy_support import (REPO, fail, log, need_root, require_all_attached, run,
                            scrape_agent, unit_setpriv, unit_settings)

CLONE_NEWNS = 0x00020000
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
           "LC_ALL": "C"}


def private_mounts(root):
    """/proc, and /sys with the cgroup mounts read-only, in a mount namespace of our own."""
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNS) != 0:
        fail(f"unshare(CLONE_NEWNS): {os.strerror(ctypes.get_errno())}")
    run(["mount", "--make-rprivate", "/"])
    run(["mount", "-t", "proc", "proc", f"{root}/proc"])
    run(["mount", "-t", "sysfs", "-o", "ro", "sysfs", f"{root}/sys"])
    run(["mount", "--rbind", "/sys/fs/cgroup", f"{root}/sys/fs/cgroup"])
    targets = run(["findmnt", "-R", "-l", "-n", "-o", "TARGET", f"{root}/sys/fs/cgroup"]).stdout.split()
    for target in targets:
        run(["mount", "-o", "remount,bind,ro", target])


def in_root(root, cmd, check=True, timeout=600):
    return run(["chroot", root] + cmd, check=check, timeout=timeout, env=APT_ENV)


def installed(root, package):
    proc = in_root(root, ["dpkg-query", "-W", "-f=${Status}", package], check=False)
    return proc.returncode == 0 and "install ok installed" in proc.stdout


def service_command_line(root, deb, as_unit):
    """Extra flags set the documented way, in /etc/default/stagewatch, survive a reinstall
    (a conffile); then the installed unit's ExecStart, with them, as the unit's user and
    capabilities, serves /metrics with every probe attached."""
    defaults = f"{root}/etc/default/stagewatch"
    with open(defaults, "a") as f:
        f.write('STAGEWATCH_ARGS="--web.listen-address=127.0.0.1:0"\n')
    in_root(root, ["dpkg", "-i", f"/tmp/{os.path.basename(deb)}"])
    with open(defaults) as f:
        env = dict(re.findall(r'^(\w+)="([^"]*)"$', f.read(), re.M))
    if env.get("STAGEWATCH_ARGS") != "--web.listen-address=127.0.0.1:0":
        fail(f"the reinstall did not keep the edited {defaults}: {env}")
    (exec_start,) = unit_settings(f"{root}/lib/systemd/system/stagewatch.service")["ExecStart"]
    cmd = shlex.split(exec_start.replace("$STAGEWATCH_ARGS", env["STAGEWATCH_ARGS"]))
    attached = scrape_agent(["chroot", root] + as_unit + cmd, f"{root}/tmp/agent.log", env=APT_ENV)
    if not attached or any(v != 1 for v in attached.values()):
        fail(f"the service's command line as its user: stagewatch_probe_attached {attached}")
    log(f"ExecStart as the unit's user, after a reinstall kept the edited defaults: "
        f"all {len(attached)} probes attached on /metrics")


def require_runbooks(root):
    """Every alert of the shipped rules has its runbook in the package, where the docs say."""
    rules = open(os.path.join(REPO, "alerts", "stagewatch.rules.yml")).read()
    alerts = sorted(set(re.findall(r"^\s*- alert: (\S+)", rules, re.M)))
    if not alerts:
        fail("no alerts found in alerts/stagewatch.rules.yml")
    base = f"{root}/usr/share/doc/stagewatch/runbooks"
    missing = [a for a in alerts if not os.path.isfile(f"{base}/{a}.md")]
    if missing:
        fail(f"runbooks missing from /usr/share/doc/stagewatch/runbooks: {missing}")
    log(f"runbooks: all {len(alerts)} alerts' runbooks installed")


def main():
    build = os.path.abspath(sys.argv[1])
    need_root("installing the .deb in a debootstrap root")
    timings = {}
    started = time.monotonic()
    deb = run([os.path.join(REPO, "scripts", "build-deb.sh"), build]).stdout.split()[-1]
    version = re.match(r"stagewatch_([^_]+)_", os.path.basename(deb)).group(1)
    timings["build-deb"] = time.monotonic() - started

    started = time.monotonic()
    tarball = cached_root_tarball()
    root = os.path.join(build, "deploy-test", "root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    run(["tar", "-C", root, "--numeric-owner", "-xf", tarball])
    timings["fresh root"] = time.monotonic() - started
    try:
        shutil.copy("/etc/resolv.conf", f"{root}/etc/resolv.conf")
        shutil.copy(deb, f"{root}/tmp/")
        private_mounts(root)
        if installed(root, "libbpf1") or installed(root, "stagewatch"):
            fail("the fresh root already has libbpf1 or stagewatch; the cache is not pristine")

        started = time.monotonic()
        in_root(root, ["apt-get", "update", "-qq"])
        apt = in_root(root, ["apt-get", "install", "-y", "--no-install-recommends",
                             f"/tmp/{os.path.basename(deb)}"])
        timings["apt-get install"] = time.monotonic() - started
        # Every package the .deb depends on (dpkg-shlibdeps wrote them from what the binary
        # links), and libbpf1, which a probe-loading agent cannot do without.
        depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
        needed = {re.split(r"[ (]", d.strip())[0] for d in depends.split(",") if d.strip()}
        if "libbpf1" not in needed:
            fail(f"the package does not depend on libbpf1: {depends}")
        for package in ["stagewatch", *sorted(needed)]:
            if not installed(root, package):
                fail(f"{package} is not installed after apt-get install:\n{apt.stdout}")
        log("apt: the package and its dependencies are installed")
        if "systemd is not running" not in apt.stdout:
            fail(f"the postinst did not say it skipped systemd:\n{apt.stdout}")

        started = time.monotonic()
        out = in_root(root, ["stagewatch", "--version"]).stdout
        if not out.startswith(f"stagewatch {version} "):
            fail(f"--version says {out!r}, the package is {version}")
        log(f"--version: {out.strip()}")
        in_root(root, ["stagewatch", "check-config", "/etc/stagewatch/config.yaml"])
        require_runbooks(root)
        conffiles = in_root(root, ["dpkg-query", "-W", "-f=${Conffiles}", "stagewatch"]).stdout
        if "/etc/stagewatch/config.yaml" not in conffiles:
            fail(f"config.yaml is not a conffile: {conffiles!r}")
        user = in_root(root, ["getent", "passwd", "stagewatch"]).stdout.split(":")
        if not (0 < int(user[2]) < 1000 and user[6].strip() == "/usr/sbin/nologin"):
            fail(f"the package's user is not a system user without a shell: {user}")
        features = ["chroot", root, "stagewatch", "features", "--json"]
        require_all_attached(features, "root in the root", env=APT_ENV)
        as_unit = unit_setpriv(unit_settings(), "stagewatch")
        require_all_attached(features[:2] + as_unit + features[2:],
                             "the package's user with the unit's capabilities", env=APT_ENV)

        service_command_line(root, deb, as_unit)

        verify = in_root(root, ["systemd-analyze", "verify", "/lib/systemd/system/stagewatch.service"],
                         check=False)
        output = (verify.stdout + verify.stderr).strip()
        if verify.returncode != 0 or output:
            fail(f"the root's systemd-analyze verify (exit {verify.returncode}) said:\n{output}")
        log("systemd-analyze verify of the installed unit: no warnings")
        if os.path.lexists(f"{root}/etc/systemd/system/multi-user.target.wants/stagewatch.service"):
            fail("the postinst enabled the unit although systemd is not running")

        os.makedirs(f"{root}/var/lib/stagewatch")  # what the service's first run leaves
        open(f"{root}/var/lib/stagewatch/ledger.db", "w").close()
        in_root(root, ["apt-get", "purge", "-y", "stagewatch"])
        left = [p for p in ("/usr/bin/stagewatch", "/etc/stagewatch", "/var/lib/stagewatch",
                            "/lib/systemd/system/stagewatch.service") if os.path.lexists(root + p)]
        if left:
            fail(f"left after purge: {left}")
        log("purge: files, conffiles and state are gone")
        timings["checks"] = time.monotonic() - started
    finally:
        # The mounts are this process's own and vanish with it; unmount now so the tree
        # can be removed.
        subprocess.run(["umount", "-R", f"{root}/sys"], capture_output=True)
        subprocess.run(["umount", f"{root}/proc"], capture_output=True)
        with open("/proc/self/mountinfo") as f:
            still_mounted = [l for l in f if f" {root}/" in l]
        if still_mounted:
            log(f"left {root} in place: still mounted there:\n{''.join(still_mounted)}")
        else:
            shutil.rmtree(os.path.dirname(root), ignore_errors=True)
    log("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    log("PASS")


if __name__ == "__main__":
    main()
