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

import os
import shutil
import sys
import tempfile

import yaml

from deploy_support import (REPO, fail, features_probes, log, need_root,
                            require_all_attached, setpriv)

NON_ROOT = 65534


def container_security(path=os.path.join(REPO, "deploy", "kubernetes", "daemonset.yaml")):
    with open(path) as f:
        ds = yaml.safe_load(f)
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    return container["securityContext"]


def runtime_setpriv(sc, uid):
    """What a container runtime gives: the added capabilities, none of them ambient."""
    add = sc["capabilities"]["add"]
    return setpriv(uid, (), add, no_new_privs=sc.get("allowPrivilegeEscalation") is False)


def main():
    binary_built = os.path.abspath(sys.argv[1])
    need_root("starting the agent with the DaemonSet's securityContext")
    sc = container_security()
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        binary = os.path.join(tmp, "stagewatch")
        shutil.copy(binary_built, binary)

        features = [binary, "features", "--json"]
        uid = sc.get("runAsUser", 0)
        require_all_attached(runtime_setpriv(sc, uid) + features,
                             f"the DaemonSet's container (uid {uid}, {sc['capabilities']['add']})")

        control = features_probes(runtime_setpriv(sc, NON_ROOT) + features)
        if any(p["attached"] for p in control):
            fail(f"as uid {NON_ROOT} without ambient capabilities probes attached: {control}; "
                 "then the DaemonSet could run as non-root: update it and docs/deploy.md")
        log(f"control, uid {NON_ROOT} with the same capabilities: none of {len(control)} attached")
    log("PASS")


if __name__ == "__main__":
    main()
