"""Agent health: the agent itself."""

from .board import Queries, dashboard, variables
from .panels import (PROBE_MAPPINGS, by, hide_columns, instant_target, row, stat, table, target,
                     timeseries)


def agent_health(cfg):
    q = Queries(cfg)
    p = []
    A = q.agent
    p.append(row("Agent"))
    p.append(stat(
        "Agents up",
        "Agents Prometheus scraped successfully in its last scrape, out of those selected.",
        "short", [target(f"sum(up{{{A}}})", "up"), target(f"count(up{{{A}}})", "targets")],
        w=4, red_from=None, decimals=0, color_mode="value"))
    p.append(stat(
        "Probes not attached",
        "BPF probes that failed to attach, per agent. Their signals are missing (zero), not "
        "quiet; `stagewatch features` says why.",
        "short", [target(f"sum by (instance) (1 - stagewatch_probe_attached{{{A}}})",
                         "{{instance}}")], w=4, h=8, decimals=0))
    p.append(stat(
        "Known stages",
        "Pipeline stages each agent knows (configured and discovered, plus unattributed).",
        "short", [target(f'count by (instance) (stagewatch_anomaly_active{{{A}, rule="oom_kill"}})',
                         "{{instance}}")], w=4, red_from=None, decimals=0, color_mode="value"))
    p.append(table(
        "Build",
        "Version, revision and libbpf version of each agent.",
        "none", [instant_target(f"stagewatch_build_info{{{A}}}", fmt="table")],
        [hide_columns("Time", "Value", "__name__", "job")], w=12, h=4))
    p.append(table(
        "Probes",
        "Each BPF probe of each agent, how it attaches, and whether it is attached.",
        "none", [instant_target(f"stagewatch_probe_attached{{{A}}}", fmt="table")],
        [hide_columns("Time", "__name__", "job", rename={"Value": "state"})], w=12,
        overrides=[{"matcher": {"id": "byName", "options": "state"},
                    "properties": [{"id": "mappings", "value": PROBE_MAPPINGS},
                                   {"id": "custom.cellOptions",
                                    "value": {"type": "color-text"}}]}]))
    p.append(timeseries(
        "Events lost",
        "Ring-buffer events each probe dropped per second (the buffer was full), and kernel-side "
        "updates refused because a bounded BPF map was full. Counts are too low while these "
        "are above zero.",
        "ops", [
            target(f"sum by (instance, probe) ({q.rate('stagewatch_probe_lost_events_total', A)})",
                   "{{probe}} ring buffer ({{instance}})"),
            target(f"sum by (instance, map) ({q.rate('stagewatch_sched_map_overflows_total', A)})",
                   "sched {{map}} map full ({{instance}})"),
            target(f"sum by (instance, map) ({q.rate('stagewatch_memory_map_overflows_total', A)})",
                   "memory {{map}} map full ({{instance}})"),
        ]))

    p.append(row("Agent footprint"))
    p.append(timeseries(
        "Agent CPU",
        "Share of one CPU the agent process uses (user and system), probes' in-kernel time not "
        "included (see BPF program run time).",
        "percentunit", [target(f"sum by (instance) ({q.rate('process_cpu_seconds_total', A)})",
                               "{{instance}}")], w=12))
    p.append(timeseries(
        "Agent resident memory",
        "Resident memory of the agent process.",
        "bytes", [target(f"max by (instance) (process_resident_memory_bytes{{{A}}})",
                         "{{instance}}")], w=12))

    p.append(row("BPF programs"))
    p.append(timeseries(
        "BPF program run time",
        "Share of one CPU each of the agent's BPF programs takes in the kernel. The kernel "
        "counts it only while `sysctl kernel.bpf_stats_enabled=1` (see the next panel); "
        "otherwise it reads zero.",
        "percentunit", [target(f"sum by (instance, program) "
                               f"({q.rate('stagewatch_bpf_program_run_seconds_total', A)})",
                               "{{program}} ({{instance}})")], w=12))
    p.append(timeseries(
        "BPF program runs and stats switch",
        "Runs per second of each BPF program, and whether the kernel is counting them "
        "(stagewatch_bpf_stats_enabled).",
        "ops", [target(f"sum by (instance, program) "
                       f"({q.rate('stagewatch_bpf_program_runs_total', A)})",
                       "{{program}} ({{instance}})"),
                target(f"max by (instance) (stagewatch_bpf_stats_enabled{{{A}}})",
                       "stats enabled ({{instance}})")], w=12))

    p.append(row("Scrapes"))
    p.append(timeseries(
        "Collector scrape duration",
        "Time each collector took in the agent's latest scrape (reading BPF maps and "
        "cgroupfs).",
        "s", [target(f"max by (instance, collector) "
                     f"(stagewatch_scrape_collector_duration_seconds{{{A}}})",
                     "{{collector}} ({{instance}})")], w=8))
    p.append(timeseries(
        "Collector scrape success",
        "Whether each collector succeeded in the agent's latest scrape (1) or failed (0).",
        "bool", [target(f"min by (instance, collector) "
                        f"(stagewatch_scrape_collector_success{{{A}}})",
                        "{{collector}} ({{instance}})")], w=8, max_=1, step=True))
    p.append(timeseries(
        "Prometheus scrape duration",
        "How long Prometheus took to scrape each agent, end to end.",
        "s", [target(f"max by (instance) (scrape_duration_seconds{{{A}}})", "{{instance}}")],
        w=8))

    p.append(row("Cgroups and stages"))
    p.append(timeseries(
        "Unknown cgroups",
        "Events and map entries per second whose cgroup died before the agent could name it; "
        "counted under the unattributed stage.",
        "ops", [target(f"sum by (instance) ({q.rate('stagewatch_unknown_cgroup_events_total', A)})",
                       "{{instance}}")], w=6))
    p.append(timeseries(
        "Cgroup tree rescans",
        "Walks of the cgroup hierarchy per second, made when an event names a cgroup id not in "
        "the cache.",
        "ops", [target(f"sum by (instance) ({q.rate('stagewatch_cgroup_cache_rescans_total', A)})",
                       "{{instance}}")], w=6))
    p.append(timeseries(
        "Cgroups left out of the cache",
        "Cgroups left out of the last rescan because the cache (cgroup.cache_max_entries) is "
        "full; their events count as unattributed.",
        "short", [target(f"max by (instance) (stagewatch_cgroup_cache_truncated{{{A}}})",
                         "{{instance}}")], w=6))
    p.append(timeseries(
        "Stage discovery overflows",
        "Cgroups per second whose discovered stage name was beyond discovery.max_stages and "
        "counted under unattributed.",
        "ops", [target(f"sum by (instance) "
                       f"({q.rate('stagewatch_stage_discovery_overflows_total', A)})",
                       "{{instance}}")], w=6))

    p.append(row("Alertmanager"))
    p.append(timeseries(
        "Alertmanager pushes",
        "Alert batches the agent posted to each Alertmanager per second, by result.",
        "ops", [target(f"sum by (instance, alertmanager, result) "
                       f"({q.rate('stagewatch_alertmanager_requests_total', A)})",
                       "{{result}} {{alertmanager}} ({{instance}})")], w=8))
    p.append(timeseries(
        "Alertmanager push failures",
        "Share of alert batches each Alertmanager did not accept (unreachable, timeout, HTTP "
        "error). Failed batches are retried; alerts are lost only when the queue overflows.",
        "percentunit", [target(
            by("instance, alertmanager", "sum",
               q.rate("stagewatch_alertmanager_requests_total", A, 'result="failure"')) + " / " +
            by("instance, alertmanager", "sum", q.rate("stagewatch_alertmanager_requests_total", A)),
            "{{alertmanager}} ({{instance}})")], w=8, max_=1))
    p.append(stat(
        "Last accepted push",
        "When each Alertmanager last accepted an alert batch; absent when none has yet.",
        "dateTimeFromNow", [target(
            f"max by (instance, alertmanager) "
            f"(stagewatch_alertmanager_last_success_timestamp_seconds{{{A}}}) * 1000 > 0",
            "{{alertmanager}} ({{instance}})")], w=8, h=8, red_from=None, color_mode="value"))
    p.append(timeseries(
        "Alerts dropped",
        "Alert updates per second never sent: the oldest dropped when the queue was full, or "
        "rejected by Alertmanager as invalid.",
        "ops", [target(f"sum by (instance) "
                       f"({q.rate('stagewatch_alertmanager_alerts_dropped_total', A)})",
                       "{{instance}}")]))
    p.append(timeseries(
        "Alert queue length",
        "Alert updates queued and not yet taken by every Alertmanager's sender.",
        "short", [target(f"max by (instance) (stagewatch_alertmanager_queue_length{{{A}}})",
                         "{{instance}}")], decimals=0))
    return dashboard(
        "stagewatch-agent-health", "stagewatch / Agent health",
        "The stagewatch agent itself: probes attached, events lost, per-collector scrapes, "
        "cgroup naming, and pushes to Alertmanager.",
        p, variables(q, pipeline=False))

