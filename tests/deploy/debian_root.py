"""A fresh Debian 12 root for the deploy tests: debootstrap minbase plus systemd (as a server
has), made once from the Debian mirror this host's apt uses and cached as a tarball."""

import glob
import os
import re
import shutil
import time

from deploy_support import fail, log, need_tools, run

CACHE_DIR = os.environ.get("STAGEWATCH_DEBOOTSTRAP_CACHE", "/var/cache/stagewatch-tests")
SUITE = "bookworm"
INCLUDE = ["systemd"]


def debian_mirror():
    """The Debian archive this host's apt uses (deb822 or one-line sources), else the CDN."""
    if os.environ.get("STAGEWATCH_DEBIAN_MIRROR"):
        return os.environ["STAGEWATCH_DEBIAN_MIRROR"]
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*")):
        try:
            text = open(path).read()
        except (FileNotFoundError, IsADirectoryError):
            continue
        for uri in re.findall(r"^(?:URIs:|deb)\s+(\S+)", text, re.M):
            if uri.rstrip("/").endswith("/debian"):
                return uri
    return "http://deb.debian.org/debian"


def cached_root_tarball():
    """The pristine root as a tarball, made by debootstrap the first time."""
    tarball = os.path.join(CACHE_DIR, f"{SUITE}-minbase-{'-'.join(INCLUDE)}.tar")
    if os.path.exists(tarball):
        log(f"root: cached {tarball}")
        return tarball
    need_tools("debootstrap")
    os.makedirs(CACHE_DIR, exist_ok=True)
    staging = tarball + ".d"
    shutil.rmtree(staging, ignore_errors=True)
    started = time.monotonic()
    mirror = debian_mirror()
    run(["debootstrap", "--variant=minbase", f"--include={','.join(INCLUDE)}", SUITE, staging,
         mirror], timeout=1200)
    run(["tar", "-C", staging, "-cf", tarball + ".tmp", "."])
    os.rename(tarball + ".tmp", tarball)
    shutil.rmtree(staging)
    log(f"root: debootstrap from {mirror} in {time.monotonic() - started:.0f} s, cached")
    return tarball


if __name__ == "__main__":  # scripts/test.sh makes it while the build runs
    cached_root_tarball()
