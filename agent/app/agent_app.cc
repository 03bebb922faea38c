#include "app/agent_app.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "anomaly/anomaly_engine.h"
#include "app/agent_runs.h"
#include "bounded_file.h"
#include "capabilities.h"
#include "anomaly/anomaly_feeder.h"
#include "cgroup/cgroup_events.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/layout.h"
#include "cgroup/path_cache.h"
#include "exporters/agent_collector.h"
#include "exporters/alertmanager_client.h"
#include "exporters/anomaly_pager.h"
#include "exporters/anomaly_collector.h"
#include "exporters/collector.h"
#include "exporters/http_server.h"
#include "exporters/metric_builders.h"
#include "exporters/oom_collector.h"
#include "exporters/process_collector.h"
#include "exporters/runs_collector.h"
#include "exporters/runs_pages.h"
#include "exporters/memory_collector.h"
#include "exporters/sched_collector.h"
#include "exporters/web_config.h"
#include "log.h"
#include "oom/oom_tracker.h"
#include "probes/cgroup_probe.h"
#include "probes/libbpf_log.h"
#include "memory/memory_sampler.h"
#include "memory/memory_tracker.h"
#include "probes/memory_probe.h"
#include "probes/program_stats.h"
#include "probes/oom_probe.h"
#include "probes/sched_probe.h"
#include "runs/runs_source.h"
#include "sched/sched_tracker.h"
#include "stages/stage_resolver.h"
#include "version.h"

namespace stagewatch {
namespace {

constexpr int kPollTimeoutMs = 100;

// Blocks the shutdown signals in every thread (threads inherit the mask), so that only the
// main thread's sigwait() sees them.
sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// The `instance` label of direct pages: this host and the port Prometheus scrapes.
std::string InstanceName(const std::string& bound_address) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return absl::StrCat(host, bound_address.substr(bound_address.rfind(':')));
}

void LogAnomaly(const AnomalyChange& c) {
  if (c.active) {
    Log::Warn("anomaly", {{"pipeline_stage", c.stage.name}, {"rule", AnomalyRuleName(c.rule)},
                          {"state", "firing"}, {"summary", c.summary}});
  } else {
    Log::Info("anomaly", {{"pipeline_stage", c.stage.name}, {"rule", AnomalyRuleName(c.rule)},
                          {"state", "resolved"}});
  }
}

// What each probe module says of its probes and programs, asked at every scrape.
struct ProbeReport {
  std::function<std::vector<ProbeStatus>()> statuses;
  std::function<std::vector<ProgramStats>()> programs;
};

// Keeps a started probe module, or the reason it could not start, in `reports`.
template <typename Probe>
std::unique_ptr<Probe> Adopt(absl::StatusOr<std::unique_ptr<Probe>> started,
                             std::vector<ProbeReport>* reports) {
  if (!started.ok()) {
    reports->push_back(
        {[why = std::string(started.status().message())] { return Probe::NotStarted(why); },
         [] { return std::vector<ProgramStats>(); }});
    return nullptr;
  }
  const Probe* probe = started->get();
  reports->push_back({[probe] { return probe->statuses(); },
                      [probe] { return probe->program_stats(); }});
  return *std::move(started);
}

void LogProbe(const ProbeStatus& p) {
  if (p.attached) {
    Log::Info("probe attached", {{"probe", p.name}, {"attach_type", p.attach_type}});
  } else {
    Log::Warn("probe not attached", {{"probe", p.name}, {"err", p.error}});
  }
}

}  // namespace

absl::Status CheckCanLoadBpf(const KernelFeatures& f, const std::string& btf_path) {
  if (!f.privileged) {
    return absl::PermissionDeniedError(
        "stagewatch needs root, or CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), to load its BPF "
        "programs; run it as root, or as a service user with AmbientCapabilities=CAP_BPF "
        "CAP_PERFMON (deploy/stagewatch.service)");
  }
  if (!f.btf) {
    if (!btf_path.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot read BTF from ", btf_path, " (--bpf.btf-path); give a BTF file that "
          "matches this kernel (", f.kernel_release, ")"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "this kernel (", f.kernel_release, ") has no BTF at /sys/kernel/btf/vmlinux, which "
        "stagewatch needs to relocate its BPF programs (CONFIG_DEBUG_INFO_BTF=y); pass "
        "--bpf.btf-path=FILE with a BTF file for this kernel, for example from BTFHub"));
  }
  return absl::OkStatus();
}

namespace {

// Everything the agent needs from the user, checked before it binds or loads anything, so a
// mistake is one clear message and exit 1, never a half-started agent.
struct StartInputs {
  exporters::WebServerConfig web;
  exporters::AlertmanagerOptions alerting;
};

absl::StatusOr<StartInputs> CheckStartInputs(const AgentOptions& options) {
  StartInputs in;
  if (!options.web_config_file.empty()) {
    absl::StatusOr<exporters::WebServerConfig> web =
        exporters::LoadWebConfigFile(options.web_config_file);
    if (!web.ok()) return web.status();
    in.web = *std::move(web);
  }
  const AlertingConfig& a = options.config.alerting;
  in.alerting = {.urls = a.alertmanagers,
                 .basic_auth_user = a.basic_auth_username,
                 .basic_auth_password = a.basic_auth_password,
                 .bearer_token = a.bearer_token,
                 .tls = {.ca_file = a.tls_ca_file, .cert_file = a.tls_cert_file,
                         .key_file = a.tls_key_file,
                         .insecure_skip_verify = a.tls_insecure_skip_verify,
                         .min_version = a.tls_min_version},
                 .timeout = a.timeout,
                 .resend_interval = a.resend_interval};
  if (!a.basic_auth_password_file.empty()) {
    absl::StatusOr<std::string> password =
        ReadBoundedFile(a.basic_auth_password_file, "alerting.basic_auth.password_file", 4096);
    if (!password.ok()) return password.status();
    std::string& p = in.alerting.basic_auth_password = *std::move(password);
    while (!p.empty() && (p.back() == '\n' || p.back() == '\r')) p.pop_back();
  }
  if (auto valid = exporters::AlertmanagerClient::Validate(in.alerting); !valid.ok()) {
    return valid.status();
  }
  return in;
}

}  // namespace

int RunAgent(const AgentOptions& options) {
  const Config& config = options.config;
  const sigset_t shutdown_signals = BlockShutdownSignals();
  RouteLibbpfLogs();
  Log::Info("starting stagewatch", {{"version", kVersion}, {"revision", kRevision}});

  absl::StatusOr<StartInputs> inputs = CheckStartInputs(options);
  if (!inputs.ok()) {
    Log::Error("cannot start", {{"err", inputs.status().message()}});
    return 1;
  }
  const KernelFeatures features =
      ApplyAttachPolicy(ProbeKernelFeatures(options.btf_path), options.attach);
  if (absl::Status s = CheckCanLoadBpf(features, options.btf_path); !s.ok()) {
    Log::Error("cannot start", {{"err", s.message()}});
    return 1;
  }
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  if (!layout.ok()) {
    Log::Error("cannot start", {{"err", layout.status().message()}});
    return 1;
  }
  Log::Info("cgroups", {{"mode", CgroupModeName(layout->mode)}, {"keyed_on", layout->key_root}});
  std::unique_ptr<BpfStatsHold> bpf_stats;  // counts BPF run time until the agent returns
  if (options.bpf_stats) {
    absl::StatusOr<std::unique_ptr<BpfStatsHold>> held = BpfStatsHold::Acquire();
    if (held.ok()) {
      bpf_stats = *std::move(held);
      Log::Info("counting BPF program run time while running (--bpf.stats)");
    } else {
      Log::Warn("--bpf.stats: not counting BPF program run time", {{"err", held.status().message()}});
    }
  }

  CgroupPathCache paths(layout->key_root,
                        {.min_rescan_interval = config.cgroup.rescan_min_interval,
                         .max_entries = static_cast<size_t>(config.cgroup.cache_max_entries)});
  StageResolver stages(config.stages, config.discovery);
  OomTracker oom(&paths, &stages, layout->key);
  std::vector<ProbeReport> probe_reports;
  std::atomic<RunWatcher*> runs = nullptr;  // set once the probes it reads are up

  // Attached before the start walk, so that no cgroup made meanwhile is missed.
  std::unique_ptr<CgroupProbe> cgroup_probe = Adopt(
      CgroupProbe::Start(
          {.enabled = config.cgroup.lifecycle_events, .key = layout->key, .features = features},
          [&paths, &runs](const cgroup_event& e) {
            if (RunWatcher* w = runs.load()) w->OnCgroupEvent(e);  // before its entries go
            ApplyCgroupEvent(e, &paths);
          },
          [&paths] {
            Log::Warn("cgroup events lost; walking the hierarchy again", {});
            paths.Resync();
          }),
      &probe_reports);
  if (cgroup_probe) paths.UseEvents([probe = cgroup_probe.get()] { probe->Drain(); });
  Log::Info("cgroup naming", {{"source", paths.uses_events() ? "lifecycle_events" : "walks"}});

  // Served from here on (/-/healthy answers while probes attach); /-/ready waits for the
  // probes and the first snapshot.
  std::atomic<bool> ready = false;
  exporters::CollectorRegistry registry;
  // The run pages open the ledger at their first request; until it is readable they say why
  // (503) and the agent runs on.
  LedgerRunsSource runs_source(config.runs.ledger_path);  // --ledger.path sets it
  exporters::HttpServerOptions http_options{
      .listen_address = config.web.listen_address,
      .telemetry_path = config.web.telemetry_path,
      .web = inputs->web,
      .render_metrics = [&registry] { return exporters::SerializeText(registry.CollectAll()); },
      .ready = [&ready] { return ready.load(); },
      .handlers = exporters::RunsHandlers(&runs_source, config.runs)};
  absl::StatusOr<std::unique_ptr<exporters::HttpServer>> http =
      exporters::HttpServer::Start(std::move(http_options));
  if (!http.ok()) {
    Log::Error("cannot start", {{"err", http.status().message()}});
    return 1;
  }

  exporters::AlertmanagerOptions alerting = inputs->alerting;
  alerting.instance = InstanceName((*http)->address());
  exporters::AlertmanagerClient alertmanager(alerting);
  exporters::AnomalyPager pager(&alertmanager);
  registry.Add(std::make_unique<exporters::AlertmanagerCollector>(&alertmanager));

  CgroupNamer namer(&paths, &stages);
  AnomalyEngine anomalies(config.anomalies, [&pager, &runs](const AnomalyChange& c) {
    LogAnomaly(c);
    pager.OnChange(c);
    RunWatcher* w = runs.load();
    if (w && c.active) w->OnAnomaly(c.stage.name, {AnomalyRuleName(c.rule), c.at, c.summary});
  });
  auto sampler = std::make_unique<MemorySampler>(&namer, *layout, config.memory);

  std::unique_ptr<OomProbe> oom_probe;
  if (config.collectors.at("oom")) {
    // Kills the kernel counted before the agent started are the baseline, not news.
    (void)oom.RefreshKernelCounts();
    auto started = OomProbe::Start(
        {.key = layout->key, .userspace_killers = config.oom.userspace_killers,
         .userspace_killer_paths = config.oom.userspace_killer_paths,
         .userspace_killer_max_uid = config.oom.userspace_killer_max_uid,
         .features = features},
        [&oom, &anomalies, &runs](const oom_event& e) {
          auto [stage, summary] = oom.OnEvent(e);
          anomalies.OnOomKill(stage, absl::Now(), summary);
          if (RunWatcher* w = runs.load()) w->OnOomKill(e.victim_cgroup_id, OomVictimOf(e));
        });
    oom_probe = Adopt(std::move(started), &probe_reports);
    registry.Add(std::make_unique<exporters::OomCollector>(&oom, &stages));
  }

  std::unique_ptr<SchedProbe> sched_probe;
  std::unique_ptr<SchedTracker> sched;
  if (config.collectors.at("sched")) {
    sched_probe = Adopt(SchedProbe::Start({.key = layout->key, .features = features}),
                        &probe_reports);
    if (sched_probe) sched = std::make_unique<SchedTracker>(sched_probe.get(), &namer);
    // Without the probe, the cgroupfs half (throttling, usage, PSI) still runs.
    registry.Add(std::make_unique<exporters::SchedCollector>(sched.get(), sched_probe.get(),
                                                             &namer, *layout));
  }

  std::unique_ptr<MemoryProbe> memory_probe;
  std::unique_ptr<MemoryTracker> memory;
  if (config.collectors.at("memory")) {
    memory_probe = Adopt(MemoryProbe::Start({.key = layout->key, .features = features}),
                         &probe_reports);
    if (memory_probe) memory = std::make_unique<MemoryTracker>(memory_probe.get(), &namer);
    // Registered after "sched", whose collection refreshes the tasks running right now.
    registry.Add(std::make_unique<exporters::MemoryCollector>(exporters::MemoryCollectorSources{
        .tracker = memory.get(), .probe = memory_probe.get(), .sampler = sampler.get(),
        .sched = sched.get(), .namer = &namer, .layout = *layout}));
  }

  std::unique_ptr<RunWatcher> run_watcher = StartRunWatcher(
      config, *layout, &stages, MakeRunProbeReaders(sched_probe.get(), memory_probe.get(), &namer),
      oom_probe != nullptr);
  if (run_watcher) {
    runs = run_watcher.get();
    registry.Add(std::make_unique<exporters::RunsCollector>(
        [w = run_watcher.get()] { return w->Snapshot(); }));
  }

  // The sampler's clock drives near-limit time, peaks and the anomaly detectors.
  AnomalyFeeder feeder(&anomalies, &stages, memory.get(), sched.get());
  sampler->Start(
      [&feeder, &ready](absl::Time now, const std::map<std::string, StageMemory>& sampled) {
        feeder.Feed(now, sampled);
        ready = true;  // the probes attached before the sampler started
      });
  registry.Add(std::make_unique<exporters::AnomalyCollector>(&anomalies, &stages));

  for (const ProbeReport& report : probe_reports) {
    for (const ProbeStatus& p : report.statuses()) LogProbe(p);
  }
  registry.Add(std::make_unique<exporters::AgentCollector>(exporters::AgentHealthSources{
      .probes =
          [&probe_reports] {
            std::vector<ProbeStatus> all;
            for (const ProbeReport& report : probe_reports) {
              for (ProbeStatus& p : report.statuses()) all.push_back(std::move(p));
            }
            return all;
          },
      .programs =
          [&probe_reports] {
            std::vector<ProgramStats> all;
            for (const ProbeReport& report : probe_reports) {
              for (ProgramStats& p : report.programs()) all.push_back(std::move(p));
            }
            return all;
          },
      .unknown_cgroup_events =
          [&] {
            return oom.unknown_cgroups() + (sched ? sched->unknown_cgroups() : 0) +
                   (memory ? memory->unknown_cgroups() : 0);
          },
      .path_cache = &paths,
      .stages = &stages}));
  registry.Add(std::make_unique<exporters::ProcessCollector>());
  registry.SetErrorHandler([](std::string_view collector, const absl::Status& s) {
    Log::Warn("collector failed", {{"collector", collector}, {"err", s.message()}});
  });

  // Every probe is attached: no capability is needed any more (maps and links are used
  // through the descriptors held), so none is kept unless asked for.
  if (absl::Status s = DropCapabilities(options.keep_capabilities); !s.ok()) {
    Log::Error("cannot start", {{"err", s.message()}});
    return 1;
  }
  Log::Info("capabilities dropped", {{"effective", EffectiveCapabilityNames()}});

  std::atomic<bool> stopping = false;
  auto poll_loop = [&stopping](auto* probe, const char* name) {
    while (probe && !stopping.load()) {
      int rc = probe->Poll(kPollTimeoutMs);
      if (rc < 0 && rc != -EINTR) {
        Log::Error("polling a ring buffer failed", {{"probe", name}, {"err", strerror(-rc)}});
        break;
      }
    }
  };
  std::thread poller([&] { poll_loop(oom_probe.get(), "oom"); });
  std::thread cgroup_poller([&] { poll_loop(cgroup_probe.get(), "cgroup"); });

  Log::Info("listening", {{"address", (*http)->address()},
                          {"telemetry_path", config.web.telemetry_path}});
  int signal = 0;
  sigwait(&shutdown_signals, &signal);
  Log::Info("shutting down", {{"signal", strsignal(signal)}});

  http->reset();  // stop serving before the collectors' sources go away
  stopping = true;
  poller.join();
  cgroup_poller.join();
  sampler.reset();  // the last caller of the watcher (through the anomaly engine)
  runs = nullptr;
  run_watcher.reset();
  oom_probe.reset();  // detaches the BPF programs
  sched.reset();
  sched_probe.reset();
  memory.reset();
  memory_probe.reset();
  cgroup_probe.reset();
  Log::Info("stopped");
  return 0;
}

}  // namespace stagewatch
