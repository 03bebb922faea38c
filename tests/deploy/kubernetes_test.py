#!/usr/bin/env python3
"""The manifests in deploy/kubernetes parse and hang together, and the agent accepts what they
give it (kubeconform is not packaged; these are the fields that matter here).

- Every YAML file parses; kustomization.yaml lists every manifest, and each exists.
- DaemonSet: hostPID; not privileged; capabilities drop ALL, add exactly BPF and PERFMON; no
  privilege escalation; read-only root; /sys/fs/cgroup and /sys/kernel/btf from the host,
  read-only; its selector matches its pod labels; every flag in args is one the binary has.
- ConfigMap: its config.yaml passes `stagewatch check-config`, and its listen port is the
  container's metrics port.
- Service selects the pods and targets a named container port; the ServiceMonitor selects
  the Service and scrapes that port.
- prometheus-kubernetes.yml finds the DaemonSet's pods and passes `promtool check config`
  (with the shipped rules beside it).
- Pages and scrapes name a node alike: the agent started with the DaemonSet's args as the
  kubelet renders them (env from the downward API, $(VAR) expanded) pages with `instance` set
  to the node name, which is what the scrape configs set `instance` to (root: it starts the
  agent).

    kubernetes_test.py path/to/stagewatch
"""

import glob
import os
import re
import shutil
import sys
import tempfile

import yaml

from deploy_support import REPO, fail, log, need_root, need_tools, run, scrape_agent

K8S = os.path.join(REPO, "deploy", "kubernetes")


def load_objects():
    objects = {}
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    objects[(doc["kind"], os.path.basename(path))] = doc
    return objects


def one(objects, kind):
    found = [doc for (k, _), doc in objects.items() if k == kind]
    if len(found) != 1:
        fail(f"expected one {kind}, found {len(found)}")
    return found[0]


def check_kustomization(objects):
    listed = one(objects, "Kustomization")["resources"]
    manifests = {name for (kind, name) in objects if kind != "Kustomization"}
    if set(listed) != manifests:
        fail(f"kustomization.yaml lists {sorted(listed)}, the directory has {sorted(manifests)}")
    log(f"kustomization: all {len(listed)} manifests listed")


def check_daemonset(ds, binary):
    spec = ds["spec"]["template"]["spec"]
    if spec.get("hostPID") is not True:
        fail("the DaemonSet needs hostPID: true (the agent reads /proc/<pid> of the node)")
    if spec.get("hostNetwork") or spec.get("hostIPC"):
        fail("the DaemonSet shares the host network or IPC namespace; it needs neither")
    if not ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items():
        fail("the DaemonSet's selector does not match its pod labels")
    (container,) = spec["containers"]
    sc = container["securityContext"]
    if sc.get("privileged", False):
        fail("the container is privileged")
    if sc.get("allowPrivilegeEscalation") is not False or sc.get("readOnlyRootFilesystem") is not True:
        fail("the container must set allowPrivilegeEscalation: false and readOnlyRootFilesystem: true")
    caps = sc["capabilities"]
    if caps.get("drop") != ["ALL"] or sorted(caps.get("add", [])) != ["BPF", "PERFMON"]:
        fail(f"capabilities must drop ALL and add BPF, PERFMON; they are {caps}")

    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for path in ("/sys/fs/cgroup", "/sys/kernel/btf"):
        mount = mounts.get(path)
        if not mount or mount.get("readOnly") is not True:
            fail(f"{path} is not mounted read-only")
        if volumes[mount["name"]].get("hostPath", {}).get("path") != path:
            fail(f"{path} in the pod is not the host's {path}")
    log("DaemonSet: hostPID, unprivileged, BPF+PERFMON only, host cgroupfs and BTF read-only")

    flags = set(re.findall(r"--[a-z][a-z0-9.-]*", run([binary, "--help"]).stdout))
    for arg in container.get("args", []):
        name = arg.split("=", 1)[0]
        if name.startswith("--") and name not in flags:
            fail(f"the DaemonSet passes {name}, which `stagewatch --help` does not list")
    return container, volumes


def check_config(configmap, container, volumes, binary):
    config_volume = [n for n, v in volumes.items() if v.get("configMap", {}).get("name") ==
                     configmap["metadata"]["name"]]
    mount = [m for m in container["volumeMounts"] if m["name"] in config_volume]
    if not mount or f"--config.file={mount[0]['mountPath']}/config.yaml" not in container["args"]:
        fail("the DaemonSet does not pass the ConfigMap's config.yaml as --config.file")
    text = configmap["data"]["config.yaml"]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(text)
        f.flush()
        run([binary, "check-config", f.name])
    port = int(yaml.safe_load(text)["web"]["listen_address"].rsplit(":", 1)[1])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    if ports.get("metrics") != port:
        fail(f"the config listens on {port}, the container's metrics port is {ports.get('metrics')}")
    log(f"ConfigMap: check-config passes, listens on the metrics port {port}")
    return ports


def check_scraping(service, monitor, ds, ports):
    pod_labels = ds["spec"]["template"]["metadata"]["labels"]
    if not service["spec"]["selector"].items() <= pod_labels.items():
        fail("the Service does not select the DaemonSet's pods")
    service_ports = {p["name"]: p for p in service["spec"]["ports"]}
    for p in service_ports.values():
        if p["targetPort"] not in ports and p["targetPort"] not in ports.values():
            fail(f"the Service targets {p['targetPort']}, no container port of that name")
    if not monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items():
        fail("the ServiceMonitor does not select the Service")
    if service["metadata"]["namespace"] not in monitor["spec"]["namespaceSelector"]["matchNames"]:
        fail("the ServiceMonitor looks in another namespace than the Service's")
    for endpoint in monitor["spec"]["endpoints"]:
        if endpoint["port"] not in service_ports:
            fail(f"the ServiceMonitor scrapes port {endpoint['port']}, which the Service lacks")
    log("Service and ServiceMonitor: select the pods, scrape the metrics port")


def check_prometheus_config(ds, ports):
    """Debian's Prometheus is built without Kubernetes discovery, so promtool checks the rest
    of the file with the discovery swapped for a static target, and the discovery block is
    checked against the DaemonSet here."""
    need_tools("promtool")
    with open(os.path.join(K8S, "prometheus-kubernetes.yml")) as f:
        config = yaml.safe_load(f)
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "stagewatch"]
    (sd,) = job.pop("kubernetes_sd_configs")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    wanted = ",".join(f"{k}={v}" for k, v in labels.items())
    if sd["role"] != "pod" or sd["selectors"] != [{"role": "pod", "label": wanted}]:
        fail(f"kubernetes_sd_configs must find pods labelled {wanted}: {sd}")
    if ds["metadata"]["namespace"] not in sd["namespaces"]["names"]:
        fail(f"kubernetes_sd_configs does not look in {ds['metadata']['namespace']}")
    keep_port = [r for r in job["relabel_configs"] if r.get("action") == "keep" and
                 r["source_labels"] == ["__meta_kubernetes_pod_container_port_name"]]
    if not keep_port or keep_port[0]["regex"] not in ports:
        fail("the scrape job does not keep the container's metrics port")
    job["static_configs"] = [{"targets": ["node-1:9617"]}]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prometheus-kubernetes.yml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        shutil.copy(os.path.join(REPO, "alerts", "stagewatch.rules.yml"), tmp)
        run(["promtool", "check", "config", path])
    log("prometheus-kubernetes.yml: discovery finds the pods; promtool check config passes")


NODE = "node-1"  # the node a pod of the DaemonSet runs on, in this rendering


def rendered_args(container):
    """The container's args as the kubelet passes them: env from the downward API (the pod's
    spec.nodeName is NODE) substituted for $(VAR), as Kubernetes expands it."""
    env = {}
    for e in container.get("env", []):
        field = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        env[e["name"]] = NODE if field == "spec.nodeName" else e.get("value", "")
    return [re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), a)
            for a in container.get("args", [])]


def scraped_instance(monitor):
    """What the shipped scrape configs set `instance` to, for a pod on NODE."""
    meta = {"__meta_kubernetes_pod_node_name": NODE}
    with open(os.path.join(K8S, "prometheus-kubernetes.yml")) as f:
        (job,) = [j for j in yaml.safe_load(f)["scrape_configs"] if j["job_name"] == "stagewatch"]
    relabels = [(r["source_labels"], r.get("target_label")) for r in job["relabel_configs"]]
    relabels_sm = [(r["sourceLabels"], r.get("targetLabel"))
                   for e in monitor["spec"]["endpoints"] for r in e.get("relabelings", [])]
    found = set()
    for rules, where in ((relabels, "prometheus-kubernetes.yml"), (relabels_sm, "servicemonitor.yaml")):
        sets = [src for src, target in rules if target == "instance"]
        if len(sets) != 1 or len(sets[0]) != 1:
            fail(f"{where} must set instance from one label, it sets it from {sets}")
        found.add(meta.get(sets[0][0]))
    if len(found) != 1 or None in found:
        fail(f"the scrape configs set instance to {found}, not the node name")
    return found.pop()


def check_page_labels(configmap, container, monitor, binary):
    """The agent's pages carry the instance the scrapes carry: else Alertmanager's inhibit rule
    (equal: [alertname, pipeline_stage, instance]) never matches and on-call is paged twice."""
    instance = scraped_instance(monitor)
    need_root("starting the agent with the DaemonSet's args")
    with tempfile.TemporaryDirectory() as tmp:
        config = yaml.safe_load(configmap["data"]["config.yaml"])
        # An Alertmanager that refuses: the agent pages (and logs what its pages carry).
        config.setdefault("alerting", {})["alertmanagers"] = ["http://127.0.0.1:9"]
        config_file = os.path.join(tmp, "config.yaml")
        with open(config_file, "w") as f:
            yaml.safe_dump(config, f)
        args = [f"--config.file={config_file}" if a.startswith("--config.file=") else a
                for a in rendered_args(container)]
        log_file = os.path.join(tmp, "agent.log")
        scrape_agent([binary] + args + ["--web.listen-address=127.0.0.1:0", "--log.format=logfmt"],
                     log_file)
        with open(log_file) as f:
            text = f.read()
    m = re.search(r'msg="paging alertmanager" labels=(\S+)', text)
    if not m:
        fail(f"the agent did not say what its pages carry:\n{text}")
    labels = dict(pair.split("=", 1) for pair in m.group(1).strip('"').split(","))
    if labels.get("instance") != instance:
        fail(f"pages carry instance={labels.get('instance')}, scrapes instance={instance}: "
             "Alertmanager would notify both copies")
    log(f"pages and scrapes both carry instance={instance}")


def main():
    binary = os.path.abspath(sys.argv[1])
    objects = load_objects()
    check_kustomization(objects)
    ds = one(objects, "DaemonSet")
    container, volumes = check_daemonset(ds, binary)
    ports = check_config(one(objects, "ConfigMap"), container, volumes, binary)
    check_scraping(one(objects, "Service"), one(objects, "ServiceMonitor"), ds, ports)
    check_prometheus_config(ds, ports)
    check_page_labels(one(objects, "ConfigMap"), container, one(objects, "ServiceMonitor"), binary)
    log("PASS")


if __name__ == "__main__":
    main()
