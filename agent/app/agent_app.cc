#include "app/agent_app.h"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "anomaly/anomaly_engine.h"
#include "bounded_file.h"
#include "capabilities.h"
#include "anomaly/anomaly_feeder.h"
#include "app/config_reload.h"
#include "app/ring_pollers.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/layout.h"
#include "cgroup/path_cache.h"
#include "exporters/metrics/agent_collector.h"
#include "exporters/alerting/alertmanager_client.h"
#include "exporters/alerting/anomaly_pager.h"
#include "exporters/metrics/anomaly_collector.h"
#include "exporters/metrics/collector.h"
#include "exporters/http/http_server.h"
#include "exporters/metrics/metric_builders.h"
#include "exporters/metrics/process_collector.h"
#include "exporters/pages/pipelines_pages.h"
#include "exporters/pages/runs_pages.h"
#include "exporters/http/web_config.h"
#include "log.h"
#include "probes/libbpf_log.h"
#include "sampler/memory_sampler.h"
#include "probes/program_stats.h"
#include "runs/runs_source.h"
#include "signals/signal.h"
#include "signals/signal_bus.h"
#include "signals/snapshot_source.h"
#include "stages/stage_resolver.h"
#include "version.h"

namespace stagewatch {
namespace {

// Blocks the shutdown and reload signals in every thread (threads inherit the mask), so that
// only the main thread's sigwait() sees them.
sigset_t BlockAgentSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

// The `instance` label of direct pages: this host and the port Prometheus scrapes.
std::string InstanceName(const std::string& bound_address) {
  return absl::StrCat(HostName(), bound_address.substr(bound_address.rfind(':')));
}

// Where the links in pages point: --web.external-url, else this host at the bound port, as
// Prometheus and Alertmanager default theirs.
std::string ExternalUrl(const std::string& flag, const std::string& bound_address, bool tls) {
  std::string url = flag.empty() ? absl::StrCat(tls ? "https://" : "http://",
                                                InstanceName(bound_address))
                                 : flag;
  while (absl::EndsWith(url, "/")) url.pop_back();
  return url;
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

// What every direct page carries, once at start: the labels Alertmanager's inhibit rules
// compare with the scraped copies' (instance above all), and where its links point.
void LogPaging(const std::map<std::string, std::string>& labels,
               const exporters::PageLinks& links) {
  std::vector<std::string> pairs;
  for (const auto& [name, value] : labels) pairs.push_back(absl::StrCat(name, "=", value));
  Log::Info("paging alertmanager", {{"labels", absl::StrJoin(pairs, ",")},
                                    {"runbook_url_base", links.runbook_url_base},
                                    {"external_url", links.external_url}});
  const std::string& base = links.runbook_url_base;
  if (!base.starts_with("http://") && !base.starts_with("https://")) {
    // The default is the repository's folder: a link on-call cannot open from a page.
    Log::Warn("runbook links open nowhere",
              {{"runbook_url_base", base},
               {"fix", "set alerting.runbook_url_base (and alerts/config.yaml's runbook_url_base) "
                       "to where your site publishes the runbooks; the .deb installs them in "
                       "/usr/share/doc/stagewatch/runbooks/"}});
  }
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

// What the agent starts on: the user's inputs, the kernel's features as the attach policy
// leaves them, the host's cgroup layout. Any of them wrong is one message and exit 1.
struct Host {
  StartInputs inputs;
  KernelFeatures features;
  CgroupLayout layout;
};

absl::StatusOr<Host> CheckHost(const AgentOptions& options) {
  absl::StatusOr<StartInputs> inputs = CheckStartInputs(options);
  if (!inputs.ok()) return inputs.status();
  const KernelFeatures features =
      ApplyAttachPolicy(ProbeKernelFeatures(options.btf_path), options.attach);
  if (absl::Status s = CheckCanLoadBpf(features, options.btf_path); !s.ok()) return s;
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  if (!layout.ok()) return layout.status();
  return Host{*std::move(inputs), features, *std::move(layout)};
}

// Counts BPF run time until the agent returns, when asked (--bpf.stats); a failure is said and
// the agent runs on.
std::unique_ptr<BpfStatsHold> HoldBpfStatsIfAsked(bool asked) {
  if (!asked) return nullptr;
  absl::StatusOr<std::unique_ptr<BpfStatsHold>> held = BpfStatsHold::Acquire();
  if (!held.ok()) {
    Log::Warn("--bpf.stats: not counting BPF program run time", {{"err", held.status().message()}});
    return nullptr;
  }
  Log::Info("counting BPF program run time while running (--bpf.stats)");
  return *std::move(held);
}

// The parts of the sampler's snapshot the signals that are on adapt.
unsigned SnapshotPartsOn(const Config& config) {
  unsigned parts = 0;
  for (const Signal& s : Signals()) {
    if (!s.collector_flag || config.collectors.at(std::string(s.name))) parts |= s.snapshot_parts;
  }
  return parts;
}

// The agent's own health, summed over every signal's probes.
exporters::AgentHealthSources HealthOf(const RunningSignals& running, CgroupPathCache* paths,
                                       StageResolver* stages,
                                       const exporters::HttpServer* server,
                                       const std::string& external_url) {
  return {.probes =
              [&running] {
                std::vector<ProbeStatus> all;
                for (const ProbeReport& report : running.probe_reports) {
                  for (ProbeStatus& p : report.statuses()) all.push_back(std::move(p));
                }
                return all;
              },
          .programs =
              [&running] {
                std::vector<ProgramStats> all;
                for (const ProbeReport& report : running.probe_reports) {
                  for (ProgramStats& p : report.programs()) all.push_back(std::move(p));
                }
                return all;
              },
          .unknown_cgroup_events =
              [&running] {
                uint64_t n = 0;
                for (const auto& count : running.unknown_cgroup_counts) n += count();
                return n;
              },
          .path_cache = paths,
          .stages = stages,
          .http_auth = [server] { return server->auth_stats(); },
          .external_url = external_url};
}

}  // namespace

int RunAgent(const AgentOptions& options) {
  const Config& config = options.config;
  const sigset_t agent_signals = BlockAgentSignals();
  RouteLibbpfLogs();
  Log::Info("starting stagewatch", {{"version", kVersion}, {"revision", kRevision}});

  absl::StatusOr<Host> host = CheckHost(options);
  if (!host.ok()) {
    Log::Error("cannot start", {{"err", host.status().message()}});
    return 1;
  }
  const StartInputs* inputs = &host->inputs;
  const KernelFeatures& features = host->features;
  const CgroupLayout* layout = &host->layout;
  Log::Info("cgroups", {{"mode", CgroupModeName(layout->mode)}, {"keyed_on", layout->key_root}});
  const std::unique_ptr<BpfStatsHold> bpf_stats = HoldBpfStatsIfAsked(options.bpf_stats);

  CgroupPathCache paths(layout->key_root,
                        {.min_rescan_interval = config.cgroup.rescan_min_interval,
                         .max_entries = static_cast<size_t>(config.cgroup.cache_max_entries)});
  StageResolver stages(config.stages, config.discovery);
  SignalBus bus;
  // The sampler's snapshots as the run watcher's thread asks for them: attached once the
  // sampler is made, detached before it goes.
  SnapshotSource snapshots;
  exporters::CollectorRegistry registry;
  RunningSignals running;
  SignalContext signals{.config = config, .layout = *layout, .features = features,
                        .paths = &paths, .stages = &stages, .bus = &bus, .running = &running};
  auto start_signals = [&signals](bool first) {
    // A signal whose collector is misnamed is a bug in it: said, and the agent runs on.
    absl::Status s = StartSignals(Signals(), signals, first);
    if (!s.ok()) Log::Error("signal misdeclared", {{"err", s.message()}});
  };
  start_signals(/*first=*/true);  // the probes that name cgroups, before the start walk
  Log::Info("cgroup naming", {{"source", paths.uses_events() ? "lifecycle_events" : "walks"}});

  // Served from here on (/-/healthy answers while probes attach); /-/ready waits for the
  // probes and the first snapshot.
  std::atomic<bool> ready = false;
  // The run pages open the ledger at their first request; until it is readable they say why
  // (503) and the agent runs on.
  LedgerRunsSource runs_source(config.runs.ledger_path, config.runs);  // --ledger.path sets it
  exporters::HttpServerOptions http_options{
      .listen_address = config.web.listen_address,
      .telemetry_path = config.web.telemetry_path,
      .web = inputs->web,
      .web_config_file = options.web_config_file,
      .render_metrics = [&registry](std::string* out) {
        exporters::SerializeTextInto(registry.CollectAll(), out);
        // The families a scrape builds (about 600 bytes a series) are freed here in small
        // blocks that the server thread's malloc arena would keep until the next scrape: 35 MiB
        // at 10,000 cgroups in 500 stages. Giving them back costs about 4 ms of the scrape's 19
        // (bench/README.md, RSS at 10,000 cgroups).
        malloc_trim(0);
      },
      .ready = [&ready] { return ready.load(); },
      .handlers = exporters::RunsHandlers(&runs_source, config.runs)};
  LedgerPipelinesSource pipelines_source(&runs_source, config.runs, config.pipelines);
  for (exporters::ExtraHandler& h : exporters::PipelinesHandlers(&pipelines_source, config.runs)) {
    http_options.handlers.push_back(std::move(h));
  }
  absl::StatusOr<std::unique_ptr<exporters::HttpServer>> http =
      exporters::HttpServer::Start(std::move(http_options));
  if (!http.ok()) {
    Log::Error("cannot start", {{"err", http.status().message()}});
    return 1;
  }

  exporters::AlertmanagerOptions alerting = inputs->alerting;
  alerting.labels = config.alerting.labels;
  alerting.labels.try_emplace("instance", InstanceName((*http)->address()));
  exporters::AlertmanagerClient alertmanager(alerting);
  const exporters::PageLinks links{
      .runbook_url_base = config.alerting.runbook_url_base,
      .external_url = ExternalUrl(config.web.external_url, (*http)->address(),
                                  inputs->web.tls.has_value())};
  if (alertmanager.enabled()) LogPaging(alerting.labels, links);
  exporters::AnomalyPager pager(&alertmanager, links);
  registry.Add(std::make_unique<exporters::AlertmanagerCollector>(&alertmanager));

  CgroupNamer namer(&paths, &stages);
  AnomalyEngine anomalies(config.anomalies, [&pager, &bus](const AnomalyChange& c) {
    LogAnomaly(c);
    pager.OnChange(c);
    bus.PublishAnomaly(c);
  });
  auto sampler = std::make_unique<MemorySampler>(&namer, *layout, config.memory, SampleReader{},
                                                 SnapshotPartsOn(config));
  snapshots.Attach(sampler.get());
  absl::Cleanup detach_snapshots = [&snapshots] { snapshots.Detach(); };

  signals.namer = &namer;
  signals.anomalies = &anomalies;
  signals.sampler = sampler.get();
  signals.snapshots = &snapshots;
  signals.collectors = &registry;
  start_signals(/*first=*/false);

  // The sampler's clock drives near-limit time, peaks and the anomaly detectors.
  AnomalyFeeder feeder(&anomalies, &stages, running.sample_hooks);
  sampler->Start(
      [&feeder, &ready](absl::Time now, const Snapshot& sampled) {
        feeder.Feed(now, sampled);
        ready = true;  // the probes attached before the sampler started
      });
  registry.Add(std::make_unique<exporters::AnomalyCollector>(&anomalies, &stages));

  for (const ProbeReport& report : running.probe_reports) {
    for (const ProbeStatus& p : report.statuses()) LogProbe(p);
  }
  registry.Add(std::make_unique<exporters::AgentCollector>(
      HealthOf(running, &paths, &stages, http->get(), links.external_url)));
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

  RingPollers rings;
  if (absl::Status s = rings.Start(running.pollers); !s.ok()) {
    Log::Error("cannot start", {{"err", s.message()}});
    return 1;
  }

  Log::Info("listening", {{"address", (*http)->address()},
                          {"telemetry_path", config.web.telemetry_path}});
  ConfigReload reload(config, options.reload_config);
  int signal = 0;
  for (;;) {
    sigwait(&agent_signals, &signal);
    if (signal != SIGHUP) break;
    Log::Info("reloading the configuration", {{"signal", strsignal(signal)}});
    reload.Reload();
    (*http)->ReloadWebConfig();
  }
  Log::Info("shutting down", {{"signal", strsignal(signal)}});

  http->reset();  // stop serving before the collectors' sources go away
  rings.Stop();
  snapshots.Detach();  // the run watcher reads on without it
  sampler.reset();     // the last publisher of anomalies (through the anomaly engine)
  bus.Close();
  running.Stop();  // detaches the BPF programs
  Log::Info("stopped");
  return 0;
}

}  // namespace stagewatch
