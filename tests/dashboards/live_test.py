#!/usr/bin/env python3
"""Live check of the Grafana dashboards against a real agent and a real Prometheus.

Starts the stagewatch agent and a Prometheus server that scrapes it every second, makes two
pipeline stages (`train` and `validate`) do real work in cgroups beneath this process's own
cgroup -- both stages pinned by their cpusets to one CPU (CPU hogs sharing it), a CPU-throttled
stage, major page faults, and a memory climb that ends in an OOM kill -- and then evaluates every
panel query and annotation query of every dashboard through Prometheus's HTTP API, with the
template variables substituted. It fails if any query is rejected by Prometheus or returns no
series with a value, if a panel about events (OOM kills, anomalies, pages: EVENT_FAMILIES) shows
only zeros though the scenario caused them, if a rules file does not load, if Prometheus never
scrapes the kill and its anomaly, if the OOM kill's StagewatchOOMKill alert does not fire with
the severity each configuration gives it, or if the fleet's Recent runs data link, filled from
its query's fields, does not open the page of the `stagewatch run` (of pipeline run night-1) it
names on the agent.

Prometheus scrapes the agent under two job names: `stagewatch`, for the committed dashboards
and rules (the defaults of alerts/config.yaml), and `research-nodes`, for the dashboards and
rules dashboards/generate.py writes with a site's configuration
(tests/dashboards/site-config.yaml, selector job="research-nodes"). Both sets are evaluated.

Needs root (BPF, cgroupfs). Python 3 with PyYAML (for the generator). Usage:

    live_test.py [--binary build/stagewatch] [--prometheus /usr/bin/prometheus]

Exit status: 0 all queries returned data, 1 failure, 77 skipped (not root and
STAGEWATCH_REQUIRE_PRIVILEGED is not 1).
"""

import argparse
import ctypes
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB = "stagewatch"  # the job the committed (default) dashboards and rules select
SITE_CONFIG = os.path.join(REPO, "tests", "dashboards", "site-config.yaml")
PIPELINE = "nightly"  # the pipeline label of the discovered stages
PIPELINE_RUN = "night-1"  # the pipeline run of the one launcher run
STAGES = ("train", "validate")
MIB = 1 << 20

# The memory climb in `train`: flat for IDLE_S after the workloads start (they start WARMUP_S
# before the agent, so the detectors never see their start-up growth), then CLIMB_STEP bytes
# every CLIMB_PERIOD_S until the kernel OOM-kills it at TRAIN_LIMIT. memory_climb fires on the
# climb against a flat baseline (train's CPU limit slows the climb to ~7 MiB/s, hence the 8 MiB
# min_growth_bytes over 5 s). limit_eta needs 30 s of samples (its min_span, unless the agent
# accepts a shorter one) and a steady climb: the climb lasts past 30 s of agent time.
WARMUP_S = 2
TRAIN_LIMIT = 384 * MIB
IDLE_S = 18
CLIMB_STEP = 4 * MIB
CLIMB_PERIOD_S = 0.25
# CPU limits per 100 ms period: both hogs get throttled (the drill-down test looks at train).
CPU_QUOTA_US = {"train": 50000, "validate": 20000}
FAULT_FILE_BYTES = 48 * MIB
# Both stages' cpusets hold only this CPU: pinned, and sharing it (the placement row's shared
# CPUs). Each workload starts on the other CPUs and its cpuset moves it here: a migration.
PINNED_CPU = 0

# Panels about events: in this scenario (an OOM kill, the anomalies it and the climb raise, the
# pages they send) each query that reads one of these families must show a non-zero value at
# some step, not only the zero every stage starts at.
EVENT_FAMILIES = (
    "stagewatch_oom_kills_total",
    "stagewatch_oom_kills_cgroup_total",
    "stagewatch_oom_last_kill_timestamp_seconds",
    "stagewatch_anomaly_active",
    "stagewatch_anomalies_total",
    "stagewatch_alertmanager_requests_total",
    "stagewatch_alertmanager_last_success_timestamp_seconds",
)

# Grafana's built-in variables, as substituted for the live queries (a scrape interval of 1 s).
RATE_INTERVAL = "15s"
INTERVAL = "1s"

# The stages are configured by path, not discovered: discovery would also name the
# .../stagewatch/<stage> cgroups of anything else running on the host, and past
# discovery.max_stages this test's stages would fold into unattributed.
AGENT_CONFIG = """\
discovery:
  enabled: false
stages:
{stages}
memory:
  sample_interval: 200ms
anomalies:
  memory_climb: {{warmup: 5s, window: 5s, min_growth_bytes: 8388608}}
  limit_eta: {{warmup: 5s, window: 40s{min_span}}}
runs:
  ledger_path: {ledger}
alerting:
  # The first accepts every batch (a stand-in Alertmanager in this test); nothing listens
  # on the second, so pushes to it fail. The agent-health dashboard shows both.
  alertmanagers: ["http://127.0.0.1:{am_ok_port}", "http://127.0.0.1:{am_down_port}"]
  timeout: 1s
  resend_interval: 5s
"""

PROMETHEUS_CONFIG = """\
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: {rule_files}
scrape_configs:
  - job_name: {job}
    static_configs:
      - targets: ["{target}"]
  - job_name: {site_job}
    static_configs:
      - targets: ["{target}"]
"""

# ---- workloads (run as `python3 -c CODE args...`, each in one stage's cgroups) ------------

HOG = r"""
import time
# Busy 20 ms, asleep 2 ms: wake-ups for run-queue latency, preemptions on the shared CPU.
while True:
    end = time.perf_counter() + 0.020
    while time.perf_counter() < end:
        pass
    time.sleep(0.002)
"""

FAULTS = r"""
import mmap, os, sys, time
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY)
size = os.fstat(fd).st_size
# Drop the file from the page cache, then touch every page through a mapping: each first
# touch is a major fault that waits for the disk.
while True:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    total = 0
    for off in range(0, size, 4096):
        total += m[off]
    m.close()
    time.sleep(0.2)
"""

CLIMB = r"""
import sys, time
idle, step, period = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
time.sleep(idle)
held = []
while True:  # until the kernel OOM-kills this process
    held.append(bytearray(b"\x5a") * step)  # written, so every page is charged
    time.sleep(period)
"""

# ---- small helpers ---------------------------------------------------------------------------


def log(msg):
    print(f"[live_test] {msg}", flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def die_with_parent():
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# ---- cgroups -----------------------------------------------------------------------------


class Cgroups:
    """Stage cgroups beneath this process's own cgroup, in the hierarchy the agent keys on,
    mirrored under the cpu, cpuacct, cgroup2 and cpuset hierarchies, each stage's cpuset
    PINNED_CPU. Removes what it created."""

    def __init__(self):
        self.created = []  # every directory made, in creation order
        self.roots = []    # hierarchy mount points mirrored (keyed one first)
        self.relative = None
        self.v2_only = False
        self.v1_cpuset = None

    @staticmethod
    def _mounts():
        """mount point → (fstype, super options) for cgroup filesystems."""
        out = {}
        with open("/proc/self/mountinfo") as f:
            for line in f:
                pre, post = line.split(" - ", 1)
                mount_point = pre.split()[4]
                fstype, _, sopts = post.split()[:3]
                if fstype in ("cgroup", "cgroup2"):
                    out[mount_point] = (fstype, sopts.split(","))
        return out

    def setup(self):
        own = {}  # controller (or "" for cgroup2) → path
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    own[c] = path
        mounts = self._mounts()
        v1 = {c: mp for mp, (t, opts) in mounts.items() if t == "cgroup"
              for c in opts if c in ("memory", "cpu", "cpuacct", "cpuset")}
        v2 = [mp for mp, (t, _) in mounts.items() if t == "cgroup2"]
        if "memory" in v1 and "memory" in own:
            # Hybrid or v1 host: the agent keys on the v1 memory hierarchy.
            key_path = own["memory"]
            self.roots = [v1["memory"]] + [v1[c] for c in ("cpu", "cpuacct") if c in v1] + v2
            # Last: a task joins its cpuset (and moves to PINNED_CPU) once in all the others.
            self.v1_cpuset = v1.get("cpuset")
            if self.v1_cpuset:
                self.roots.append(self.v1_cpuset)
        elif v2 and "" in own:
            self.v2_only = True
            key_path = own[""]
            self.roots = v2[:1]
        else:
            raise RuntimeError("cannot find this process's cgroup in a memory hierarchy")
        self.roots = list(dict.fromkeys(self.roots))
        base = (key_path.rstrip("/") or "") + f"/sw-dash-{os.getpid()}/stagewatch"
        self.relative = base
        for root in self.roots:
            for stage in STAGES:
                self._makedirs(root, f"{base}/{stage}")
        if self.v2_only:
            # Controllers must be enabled top-down on the directories this test made.
            parts = [p for p in base.split("/") if p]
            dirs = [self.roots[0] + "/" + "/".join(parts[:i]) for i in range(len(parts) + 1)]
            for d in dirs:
                for controllers in ("+memory +cpu", "+cpuset"):
                    try:
                        write(d + "/cgroup.subtree_control", controllers)
                    except OSError as e:
                        if d in self.created:
                            raise RuntimeError(f"cannot enable {controllers} in {d}: {e}")
        for stage in STAGES:
            self.pin(stage)

    def pin(self, stage):
        for d in self.dirs(stage):
            if os.path.exists(d + "/cpuset.cpus"):
                write(d + "/cpuset.cpus", str(PINNED_CPU))
                return
        raise RuntimeError(f"no cpuset for stage {stage}: neither a v1 cpuset hierarchy nor "
                           "the cgroup2 cpuset controller")

    def _makedirs(self, root, path):
        d = root
        for part in [p for p in path.split("/") if p]:
            d = f"{d}/{part}"
            try:
                os.mkdir(d, 0o755)
                self.created.append(d)
            except FileExistsError:
                continue
            if root == self.v1_cpuset:
                # A new v1 cpuset starts empty and takes no task: give it its parent's.
                parent = os.path.dirname(d)
                for f in ("cpuset.cpus", "cpuset.mems"):
                    with open(f"{parent}/{f}") as src:
                        write(f"{d}/{f}", src.read().strip())

    def dirs(self, stage):
        return [f"{root}{self.relative}/{stage}" for root in self.roots]

    def key_dir(self, stage):
        return self.dirs(stage)[0]

    def set_memory_limit(self, stage, limit):
        d = self.key_dir(stage)
        if os.path.exists(d + "/memory.limit_in_bytes"):
            write(d + "/memory.limit_in_bytes", str(limit))
        else:
            write(d + "/memory.max", str(limit))

    def set_cpu_quota(self, stage, quota_us, period_us=100000):
        for d in self.dirs(stage):
            if os.path.exists(d + "/cpu.cfs_quota_us"):
                write(d + "/cpu.cfs_period_us", str(period_us))
                write(d + "/cpu.cfs_quota_us", str(quota_us))
                return
            if os.path.exists(d + "/cpu.max"):
                write(d + "/cpu.max", f"{quota_us} {period_us}")
                return
        raise RuntimeError(f"no CPU bandwidth control for stage {stage}")

    def cleanup(self):
        errors = []
        for d in reversed(self.created):  # deepest first
            for attempt in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if attempt == 49:
                        errors.append(f"cannot remove {d}: {e}")
                    time.sleep(0.1)
        self.created = []
        return errors


class Workloads:
    """Processes this test starts, each joined to one stage's cgroups before it runs."""

    def __init__(self, cgroups):
        self.cgroups = cgroups
        self.procs = {}

    def start(self, name, stage, code, args=(), cpu=None):
        dirs = self.cgroups.dirs(stage)

        def join():
            die_with_parent()
            pid = str(os.getpid())
            elsewhere = os.sched_getaffinity(0) - {PINNED_CPU}
            if elsewhere:  # the stage's cpuset then moves it to PINNED_CPU
                os.sched_setaffinity(0, elsewhere)
            for d in dirs:
                with open(d + "/cgroup.procs", "w") as f:
                    f.write(pid)
            if cpu is not None:
                os.sched_setaffinity(0, {cpu})

        p = subprocess.Popen([sys.executable, "-c", code, *map(str, args)], preexec_fn=join,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.procs[name] = p
        return p

    def short_run(self, stage, name, seconds):
        """A run the agent sees born and die (for the runs panels): a cgroup made beneath the
        stage's top in the keyed hierarchy, one short process in it, then removed."""
        d = f"{self.cgroups.key_dir(stage)}/{name}"
        os.mkdir(d, 0o755)
        try:
            def join():
                die_with_parent()
                with open(d + "/cgroup.procs", "w") as f:
                    f.write(str(os.getpid()))

            subprocess.run([sys.executable, "-c", f"import time; time.sleep({seconds})"],
                           preexec_fn=join, stdin=subprocess.DEVNULL, check=True)
        finally:
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)

    def launched_run(self, binary, config_path, stage, pipeline_run, seconds):
        """A `stagewatch run` of stage in a pipeline run (for the pipeline-run panels), its
        cgroup made beneath this test's own, outside the stages' tops."""
        parent = os.path.dirname(self.cgroups.relative)
        r = subprocess.run([binary, "--config.file", config_path, "run", "--stage", stage,
                            "--pipeline", PIPELINE, "--pipeline-run", pipeline_run,
                            "--cgroup.parent", parent, "--",
                            sys.executable, "-c", f"import time; time.sleep({seconds})"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           preexec_fn=die_with_parent)
        if r.returncode != 0:
            raise RuntimeError(f"stagewatch run --stage {stage} --pipeline-run {pipeline_run} "
                               f"exited with {r.returncode}:\n{r.stdout}{r.stderr}")

    def stop_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.wait()


# ---- agent and Prometheus ------------------------------------------------------------------


class Server:
    def __init__(self, name, argv, log_path):
        self.name = name
        self.log_path = log_path
        self.log_file = open(log_path, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log_file,
                                     stderr=subprocess.STDOUT, preexec_fn=die_with_parent)

    def log_text(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log_file.close()


def start_agent(binary, config_path, log_path):
    agent = Server("agent", [binary, "--web.listen-address=127.0.0.1:0",
                             "--config.file", config_path], log_path)
    deadline = time.time() + 30
    while time.time() < deadline:
        m = re.search(r'msg="listening" address=(\S+):(\d+)', agent.log_text())
        if m:
            return agent, f"{m.group(1)}:{m.group(2)}"
        if agent.proc.poll() is not None:
            break
        time.sleep(0.1)
    text = agent.log_text()
    agent.stop()
    raise RuntimeError(f"agent did not start listening; its log:\n{text}")


def agent_config(binary, workdir, am_ok_port, cgroups):
    """The agent configuration; a short limit_eta min_span where the agent accepts the key."""
    min_span = ", min_span: 5s"
    probe = os.path.join(workdir, "probe.yaml")
    write(probe, "anomalies: {limit_eta: {min_span: 5s}}\n")
    r = subprocess.run([binary, "check-config", probe], capture_output=True, text=True)
    if r.returncode != 0:
        min_span = ""
    stages = "\n".join(f"  - {{name: {st}, pipeline: {PIPELINE}, "
                       f"cgroup_paths: [{json.dumps(cgroups.relative + '/' + st)}]}}"
                       for st in STAGES)
    return AGENT_CONFIG.format(min_span=min_span, am_ok_port=am_ok_port,
                               am_down_port=free_port(), stages=stages,
                               ledger=json.dumps(os.path.join(workdir, "ledger.db")))


FAKE_ALERTMANAGER = r"""
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200 if self.path.endswith("/api/v2/alerts") else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class FakeAlertmanager:
    """A process that accepts every POST to /api/v2/alerts with 200, as Alertmanager does."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", FAKE_ALERTMANAGER],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     text=True, preexec_fn=die_with_parent)
        self.port = int(self.proc.stdout.readline())

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc.stdout.close()


def check_rules_file(promtool, path):
    """Raises unless promtool accepts the rules file: the test needs its alerts."""
    if not os.path.exists(path):
        raise RuntimeError(f"rules file {path} does not exist")
    if not os.access(promtool, os.X_OK):
        raise RuntimeError(f"cannot check {path}: {promtool} is not an executable")
    r = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"promtool check rules {path} failed:\n{r.stdout}{r.stderr}")


def start_prometheus(binary, workdir, target, rule_files, site_job):
    config_path = os.path.join(workdir, "prometheus.yml")
    write(config_path, PROMETHEUS_CONFIG.format(
        rule_files=json.dumps(rule_files), job=JOB, site_job=site_job, target=target))
    for attempt in range(3):
        port = free_port()
        data = os.path.join(workdir, f"tsdb-{attempt}")
        prom = Server("prometheus", [
            binary, f"--config.file={config_path}", f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            os.path.join(workdir, f"prometheus-{attempt}.log"))
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 30
        while time.time() < deadline and prom.proc.poll() is None:
            try:
                http_get(url + "/-/ready", timeout=1)
                return prom, url
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        text = prom.log_text()
        prom.stop()
        log(f"prometheus on port {port} did not become ready:\n{text}")
    raise RuntimeError("prometheus did not start")


def prom_api(url, path, params):
    q = urllib.parse.urlencode(params)
    try:
        body = http_get(f"{url}{path}?{q}", timeout=30)
    except urllib.error.HTTPError as e:
        body = e.read().decode()
    return json.loads(body)


def instant(url, expr):
    r = prom_api(url, "/api/v1/query", {"query": expr})
    return r.get("data", {}).get("result", []) if r.get("status") == "success" else []


# ---- dashboards ----------------------------------------------------------------------------


def iter_panels(panels):
    for p in panels or []:
        yield p
        yield from iter_panels(p.get("panels"))


def dashboard_queries(path):
    """(where, expr, instant?) for every panel target and annotation with a PromQL expr."""
    with open(path) as f:
        d = json.load(f)
    out = []
    for a in d.get("annotations", {}).get("list", []):
        expr = (a.get("target") or {}).get("expr") or a.get("expr")
        if expr:
            out.append((f"annotation '{a.get('name')}'", expr, False))
    for p in iter_panels(d.get("panels")):
        for t in p.get("targets", []) or []:
            if t.get("expr") and not t.get("hide"):
                where = f"{p.get('title')} [{t.get('refId', '?')}]"
                out.append((where, t["expr"], bool(t.get("instant")) and not t.get("range")))
    return d, out


def variable_queries(d):
    """(name, query) of every query variable."""
    out = []
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            out.append((v.get("name"), q.get("query", "") if isinstance(q, dict) else q))
    return out


def substitute(expr, values):
    """Replaces $var, ${var} and [[var]] (also ${var:format}) by values[var]."""
    def repl(m):
        name = m.group(1) or m.group(2) or m.group(3)
        name = name.split(":", 1)[0]
        if name not in values:
            raise KeyError(name)
        return values[name]
    return re.sub(r"\$\{([^}]+)\}|\[\[([^\]]+)\]\]|\$([A-Za-z_][A-Za-z0-9_]*)", repl, expr)


METRIC_NAME = re.compile(r"\b(stagewatch_[a-zA-Z0-9_:]*)")


def evaluate(prom_url, dashboards_dir, job, other_job, instance, start, end, tag):
    """Every query of every dashboard in dashboards_dir, with $job = job. The job variable
    must list job and not other_job (the dashboards' selector keeps the other one out)."""
    span = max(1, int(math.ceil(end - start)))
    rows, failures = [], []
    for name in sorted(os.listdir(dashboards_dir)):
        if not name.endswith(".json"):
            continue
        d, queries = dashboard_queries(os.path.join(dashboards_dir, name))
        name = f"{tag}/{name}"
        stage = ".+"
        for v in d.get("templating", {}).get("list", []):
            if v.get("name") == "pipeline_stage" and not v.get("includeAll"):
                stage = "train"  # a single-stage dashboard: the stage that was OOM-killed
        values = {"job": job, "instance": re.escape(instance).replace("\\", "\\\\"),
                  "pipeline": ".*", "pipeline_stage": stage, "heatmap_stage": "train",
                  "__rate_interval": RATE_INTERVAL,
                  "__interval": INTERVAL, "__range": f"{span}s", "__range_s": str(span),
                  "__range_ms": str(span * 1000), "datasource": "n/a"}
        # Variable queries: label_values(selector, label), as Grafana runs them.
        expected = {"job": job, "instance": instance, "pipeline": PIPELINE,
                    "pipeline_stage": "train", "heatmap_stage": "train"}
        for vname, vq in variable_queries(d):
            label = f"{name}: variable ${vname}"
            m = re.fullmatch(r"\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*", vq)
            if not m:
                failures.append(f"{label}: cannot evaluate variable query {vq!r}")
                rows.append((label, "?", "variable"))
                continue
            try:
                match = substitute(m.group(1), values)
            except KeyError as e:
                failures.append(f"{label}: unknown template variable ${e.args[0]} in {vq!r}")
                rows.append((label, "?", "variable"))
                continue
            r = prom_api(prom_url, f"/api/v1/label/{m.group(2)}/values",
                         {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"})
            got = (r.get("data") or []) if r.get("status") == "success" else []
            if r.get("status") != "success":
                failures.append(f"{label}: Prometheus rejected {match!r}: {r.get('error')}")
            elif expected.get(vname) not in got:
                failures.append(f"{label}: {vq!r} gives {got}, without {expected.get(vname)!r}")
            elif vname == "job" and other_job in got:
                failures.append(f"{label}: {vq!r} gives {got}: job {other_job!r} is not "
                                "selected by this configuration's selector")
            rows.append((label, len(got), "variable"))
        for where, expr, is_instant in queries:
            label = f"{name}: {where}"
            try:
                q = substitute(expr, values)
            except KeyError as e:
                failures.append(f"{label}: unknown template variable ${e.args[0]} in {expr!r}")
                rows.append((label, "?", "unknown var"))
                continue
            # Instant queries (tables) are evaluated at every step too: the test passes when the
            # panel would show data for some end of the time range within the test.
            r = prom_api(prom_url, "/api/v1/query_range",
                         {"query": q, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "1"})
            if r.get("status") != "success":
                failures.append(f"{label}: Prometheus rejected {q!r}: {r.get('error')}")
                rows.append((label, "ERR", "invalid"))
                continue
            series = nonzero = 0
            for s in r["data"]["result"]:
                points = [float(v) for _, v in s.get("values", [])]
                if any(math.isfinite(v) for v in points):
                    series += 1
                if any(math.isfinite(v) and v != 0 for v in points):
                    nonzero += 1
            mode = "instant" if is_instant else "range"
            events = sorted(set(METRIC_NAME.findall(expr)) & set(EVENT_FAMILIES))
            if series == 0:
                failures.append(f"{label}: no series with a value for {q!r}")
            elif events and nonzero == 0:
                failures.append(f"{label}: only zeros for {q!r}, though the scenario caused "
                                f"{', '.join(events)}")
                mode += ", all zero"
            rows.append((label, series, mode))
    return rows, failures


# ---- the test ------------------------------------------------------------------------------


def generate_site(site_config, workdir):
    """The rules and dashboards of a site's configuration: (directory, the job they select)."""
    out = os.path.join(workdir, "site")
    r = subprocess.run([sys.executable, os.path.join(REPO, "dashboards", "generate.py"),
                        "--config", site_config, "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"dashboards/generate.py --config {site_config} failed:\n"
                           f"{r.stdout}{r.stderr}")
    sys.path.insert(0, os.path.join(REPO, "dashboards"))
    from mixin import config  # noqa: E402 — the generator's own reading of the file
    cfg = config.load(site_config)
    if cfg.sample["job"] == JOB:
        raise RuntimeError(f"{site_config} selects job {JOB!r}, as the defaults do: it must "
                           "select another job for the test to tell the two apart")
    return out, cfg


def oom_pages(prom_url, expected, timeout_s=15):
    """Rows and failures: the firing StagewatchOOMKill alert of train under each job has the
    severity expected ({job: severity}), as Prometheus evaluated that job's rule file."""
    got = {}
    deadline = time.time() + timeout_s
    while True:
        for job in expected:
            r = instant(prom_url, 'ALERTS{alertname="StagewatchOOMKill", alertstate="firing", '
                                  f'job="{job}", pipeline_stage="train"}}')
            got[job] = sorted({a["metric"].get("severity", "") for a in r})
        if all(got[j] == [sev] for j, sev in expected.items()) or time.time() > deadline:
            break
        time.sleep(0.5)
    rows = [(f"alert StagewatchOOMKill of train, job {j}", ",".join(got[j]) or "none", "alert")
            for j in expected]
    failures = [f"StagewatchOOMKill of train under job {j}: severity {got[j] or 'not firing'}, "
                f"expected {sev}" for j, sev in expected.items() if got[j] != [sev]]
    return rows, failures


def run_links(prom_url, dashboards_dir, job, instance):
    """Rows and failures: the fleet table's data link of the launcher's run, as Grafana would
    fill it from the query's fields, opens that run's page on the agent."""
    with open(os.path.join(dashboards_dir, "fleet-overview.json")) as f:
        d = json.load(f)
    panel = next(p for p in iter_panels(d["panels"]) if p.get("title") == "Recent runs")
    link = next(prop["value"][0]["url"] for o in panel["fieldConfig"]["overrides"]
                for prop in o["properties"] if prop["id"] == "links")
    expr = substitute(panel["targets"][0]["expr"], {
        "job": job, "instance": re.escape(instance).replace("\\", "\\\\"), "pipeline": ".*"})
    rows = [r["metric"] for r in instant(prom_url, expr)
            if r["metric"].get("pipeline_run") == PIPELINE_RUN]
    label = "fleet-overview.json: Recent runs data link"
    if len(rows) != 1:
        return [(label, len(rows), "link")], [
            f"{label}: {len(rows)} rows of pipeline run {PIPELINE_RUN}, expected 1: {rows}"]
    url = re.sub(r"\$\{__data\.fields\.([a-z_]+)\}", lambda m: rows[0].get(m.group(1), ""), link)
    try:
        page = http_get(url)
    except (urllib.error.URLError, OSError) as e:
        return [(label, "ERR", "link")], [f"{label}: {url} does not open: {e}"]
    if rows[0]["run_id"] not in page:
        return [(label, 1, "link")], [f"{label}: {url} is not the page of run "
                                      f"{rows[0]['run_id']}"]
    return [(f"{label}: {url}", 1, "link")], []


def exported_families(agent_address):
    text = http_get(f"http://{agent_address}/metrics")
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}, text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.environ.get("STAGEWATCH_BINARY",
                                                       os.path.join(REPO, "build/stagewatch")))
    ap.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
    ap.add_argument("--promtool", default=shutil.which("promtool") or "/usr/bin/promtool")
    ap.add_argument("--dashboards", default=os.path.join(REPO, "dashboards"))
    ap.add_argument("--rules", default=os.path.join(REPO, "alerts/stagewatch.rules.yml"))
    ap.add_argument("--site-config", default=SITE_CONFIG,
                    help="a site's configuration for dashboards/generate.py")
    ap.add_argument("--dump-scrape", help="write the agent's last scrape to this file")
    args = ap.parse_args()

    if os.geteuid() != 0:
        msg = "live dashboard test needs root (BPF, cgroupfs)"
        if os.environ.get("STAGEWATCH_REQUIRE_PRIVILEGED") == "1":
            log(f"FAIL: {msg}, and STAGEWATCH_REQUIRE_PRIVILEGED=1")
            return 1
        log(f"SKIP: {msg}")
        return 77
    for tool in (args.binary, args.prometheus):
        if not os.access(tool, os.X_OK):
            log(f"FAIL: {tool} is not an executable")
            return 1

    t0 = time.time()
    alertmanager = None
    workdir = tempfile.mkdtemp(prefix="sw-dash-")
    cgroups = Cgroups()
    workloads = Workloads(cgroups)
    agent = prom = None
    failed = True
    try:
        cgroups.setup()
        log(f"cgroups beneath {cgroups.relative} in {', '.join(cgroups.roots)}")
        cgroups.set_memory_limit("train", TRAIN_LIMIT)
        for stage, quota in CPU_QUOTA_US.items():
            cgroups.set_cpu_quota(stage, quota)

        fault_file = os.path.join(workdir, "faults.bin")
        with open(fault_file, "wb") as f:
            chunk = os.urandom(MIB)
            for _ in range(FAULT_FILE_BYTES // MIB):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())

        # The workloads start before the agent: the detectors' baselines then start flat.
        start = time.time()
        # Both stages' hogs on PINNED_CPU: they preempt each other and wait in the run queue.
        workloads.start("train-hog", "train", HOG, cpu=PINNED_CPU)
        workloads.start("validate-hog", "validate", HOG, cpu=PINNED_CPU)
        workloads.start("validate-faults", "validate", FAULTS, [fault_file])
        climb = workloads.start("train-climb", "train", CLIMB,
                                [IDLE_S, CLIMB_STEP, CLIMB_PERIOD_S])
        log(f"workloads started, pinned to CPU {PINNED_CPU}: hogs (train, validate), CPU limits "
            f"{CPU_QUOTA_US}, major faults in validate, memory climb "
            f"in train to its {TRAIN_LIMIT // MIB} MiB limit after {IDLE_S} s")
        alertmanager = FakeAlertmanager()
        time.sleep(WARMUP_S)

        config_path = os.path.join(workdir, "agent.yaml")
        write(config_path, agent_config(args.binary, workdir, alertmanager.port, cgroups))
        agent, address = start_agent(args.binary, config_path, os.path.join(workdir, "agent.log"))
        log(f"agent pid {agent.proc.pid} listening on {address}")
        workloads.short_run("validate", "run-1", 2)
        log("a 2 s run in validate (a cgroup beneath its top) came and went")
        site_dir, site_cfg = generate_site(args.site_config, workdir)
        site_job = site_cfg.sample["job"]
        log(f"generated the rules and dashboards of {args.site_config} (job {site_job})")
        rule_files = [args.rules, os.path.join(site_dir, "stagewatch.rules.yml")]
        for r in rule_files:
            check_rules_file(args.promtool, r)
        prom, prom_url = start_prometheus(args.prometheus, workdir, address, rule_files,
                                          site_job)
        log(f"prometheus pid {prom.proc.pid} at {prom_url}, rules: {rule_files or 'none'}")
        # Once Prometheus scrapes the agent: the run-duration histogram then grows within the
        # queries' range.
        deadline = time.time() + 20
        scraped = f'stagewatch_run_duration_seconds_count{{job="{JOB}",pipeline_stage="validate"}}'
        while time.time() < deadline and not instant(prom_url, scraped):
            time.sleep(0.5)
        workloads.launched_run(args.binary, config_path, "validate", PIPELINE_RUN, 1)
        log(f"a 1 s `stagewatch run` of validate in pipeline run {PIPELINE_RUN} came and went")

        try:
            rc = climb.wait(timeout=IDLE_S + 60)
        except subprocess.TimeoutExpired:
            raise RuntimeError("the memory climb in train was not OOM-killed within "
                               f"{IDLE_S + 60} s")
        if rc != -signal.SIGKILL:
            raise RuntimeError(f"the memory climb exited with {rc}, not SIGKILL")
        log(f"train's memory climb was killed after {time.time() - start:.1f} s")

        # Until Prometheus has scraped the kill and the anomaly it raised.
        sel = f'job="{JOB}",pipeline_stage="train"'
        deadline = time.time() + 20
        checks = [f'stagewatch_oom_kills_total{{{sel},kind="kernel"}} > 0',
                  f'stagewatch_anomaly_active{{{sel},rule="oom_kill"}} == 1']
        while time.time() < deadline and not all(instant(prom_url, c) for c in checks):
            time.sleep(0.5)
        missing = [c for c in checks if not instant(prom_url, c)]
        if missing:
            raise RuntimeError("Prometheus never scraped what the scenario caused: no result "
                               f"within 20 s for {', '.join(missing)}")
        time.sleep(3)  # a few more scrapes after the kill
        end = time.time()

        fired = instant(prom_url, f'max by (pipeline_stage, rule) (max_over_time('
                                  f'stagewatch_anomaly_active{{job="{JOB}"}}[{int(end - start) + 5}s])) == 1')
        log("anomalies raised during the test: " + (", ".join(
            sorted(f"{r['metric'].get('rule')} in {r['metric'].get('pipeline_stage')}"
                   for r in fired)) or "none"))
        for line in agent.log_text().splitlines():
            if 'msg="anomaly' in line:
                log("agent: " + line)
        _, scrape = exported_families(address)
        if args.dump_scrape:
            write(args.dump_scrape, scrape)
        # Every OOM kill is critical by default; the site's severity depends on its stages.
        rows, failures = oom_pages(prom_url, {
            JOB: "critical", site_job: "critical" if site_cfg.is_critical("train") else "warning"})
        for tag, dashboards, job, other in (
                ("defaults", args.dashboards, JOB, site_job),
                ("site", os.path.join(site_dir, "dashboards"), site_job, JOB)):
            r, f = evaluate(prom_url, dashboards, job, other, address, start - 2, end, tag)
            rows += r
            failures += f

        r, f = run_links(prom_url, args.dashboards, JOB, address)
        rows += r
        failures += f

        width = max(len(r[0]) for r in rows) if rows else 10
        print(f"\n{'query (dashboard: panel [refId])':<{width}}  {'series':>6}  mode")
        print("-" * (width + 22))
        for label, n, mode in rows:
            print(f"{label:<{width}}  {n!s:>6}  {mode}")
        print(f"\n{len(rows)} queries evaluated over {end - start:.0f} s of data, "
              f"{len(failures)} failed")
        for f in failures:
            log(f"FAIL {f}")
        failed = bool(failures) or not rows
    except Exception as e:  # noqa: BLE001 — report, then clean up
        log(f"FAIL: {e}")
        if agent:
            log("agent log (tail):\n" + "\n".join(agent.log_text().splitlines()[-40:]))
    finally:
        workloads.stop_all()
        if alertmanager:
            alertmanager.stop()
        if agent:
            agent.stop()
        if prom:
            prom.stop()
        for err in cgroups.cleanup():
            log(f"FAIL: {err}")
            failed = True
        shutil.rmtree(workdir, ignore_errors=True)
    log(f"{'FAILED' if failed else 'PASSED'} in {time.time() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
