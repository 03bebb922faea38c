#!/usr/bin/env python3
"""The DaemonSet's securityContext is enough for every probe, and a non-root one is not.

A container runtime starts the container's process with the uid of runAsUser and the added
capabilities in its bounding, permitted and effective sets, but none ambient (Kubernetes has
no field for them), and no_new_privs when allowPrivilegeEscalation is false. setpriv does the
same here, from the fields of deploy/kubernetes/daemonset.yaml:

- as the DaemonSet says: `stagewatch features` attaches every probe;
- the same with runAsUser 65534 (the control): no probe attaches, because execve() of a
  program without file capabilities clears a non-root process's capabilities; this is why
  the manifest runs as uid 0 (docs/deploy.md).

    kubernetes_caps_test.py path/to/stagewatch
"""

import json
import os
import shutil
import sys
import tempfile

import yaml

from deploy_support import REPO, fail, log, need_root, run

NON_ROOT = 65534


def container_security(path=os.path.join(REPO, "deploy", "kubernetes", "daemonset.yaml")):
    with open(path) as f:
        ds = yaml.safe_load(f)
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    return container["securityContext"]


def runtime_prefix(sc, uid):
    caps = "-all" + "".join(f",+{c.lower()}" for c in sc["capabilities"]["add"])
    prefix = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
              "--inh-caps=-all", "--ambient-caps=-all", f"--bounding-set={caps}"]
    if sc.get("allowPrivilegeEscalation") is False:
        prefix.append("--no-new-privs")
    return prefix


def attached(prefix, binary):
    proc = run(prefix + [binary, "features", "--json"], check=False)
    try:
        probes = json.loads(proc.stdout)["probes"]
    except (ValueError, KeyError):
        fail(f"features printed no report (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return {p["name"]: p["attached"] for p in probes}


def main():
    binary_built = os.path.abspath(sys.argv[1])
    need_root("starting the agent with the DaemonSet's securityContext")
    sc = container_security()
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        binary = os.path.join(tmp, "stagewatch")
        shutil.copy(binary_built, binary)

        as_manifest = attached(runtime_prefix(sc, sc.get("runAsUser", 0)), binary)
        if not as_manifest or not all(as_manifest.values()):
            fail(f"with the DaemonSet's securityContext not every probe attaches: {as_manifest}")
        log(f"as the DaemonSet (uid {sc.get('runAsUser', 0)}, {sc['capabilities']['add']}): "
            f"all {len(as_manifest)} probes attached")

        non_root = attached(runtime_prefix(sc, NON_ROOT), binary)
        if any(non_root.values()):
            fail(f"as uid {NON_ROOT} without ambient capabilities probes attached: {non_root}; "
                 "then the DaemonSet could run as non-root, update docs/deploy.md")
        log(f"control, uid {NON_ROOT} with the same capabilities: none of {len(non_root)} attached")
    log("PASS")


if __name__ == "__main__":
    main()
