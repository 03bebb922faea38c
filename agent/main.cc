// stagewatch: the command line. Parses flags, loads the configuration and hands over to the
// agent, `check-config`, `features` or the run subcommands (app/runs_cli). Everything else lives
// in the libraries.
#include <malloc.h>

#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "app/agent_app.h"
#include "app/collector_flags.h"
#include "app/config_reload.h"
#include "app/exit_codes.h"
#include "app/features_report.h"
#include "app/pipelines_cli.h"
#include "app/results_cli.h"
#include "app/runs_cli.h"
#include "capabilities.h"
#include "config/config.h"
#include "config/config_validate.h"
#include "exporters/http/web_config.h"
#include "log.h"
#include "signals/signal.h"
#include "version.h"

namespace {

// Flags that override the configuration file; unset ones leave it alone.
struct Overrides {
  std::optional<std::string> listen_address, telemetry_path, external_url, log_level, log_format;
  std::vector<std::string> page_labels;  // NAME=VALUE each, over alerting.labels
};

// --alerting.label NAME=VALUE into the labels every page carries.
absl::Status ApplyPageLabels(const std::vector<std::string>& flags,
                             std::map<std::string, std::string>* labels) {
  for (const std::string& flag : flags) {
    const size_t eq = flag.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--alerting.label \"", flag, "\" must be NAME=VALUE, e.g. instance=node-1"));
    }
    const std::string name = flag.substr(0, eq);
    if (absl::Status s = stagewatch::config_internal::CheckLabelName(name); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--alerting.label: ", s.message()));
    }
    if (name == "alertname") {
      return absl::InvalidArgumentError("--alerting.label: alertname is each page's own name");
    }
    (*labels)[name] = flag.substr(eq + 1);
  }
  return absl::OkStatus();
}

absl::Status ApplyOverrides(const Overrides& o, const stagewatch::CollectorFlags& collectors,
                            stagewatch::Config* config) {
  namespace check = stagewatch::config_internal;
  for (const absl::Status& problem :
       {o.listen_address ? check::CheckListenAddress(*o.listen_address) : absl::OkStatus(),
        o.telemetry_path ? check::CheckTelemetryPath(*o.telemetry_path) : absl::OkStatus(),
        o.external_url ? check::CheckExternalUrl(*o.external_url) : absl::OkStatus()}) {
    if (!problem.ok()) return problem;
  }
  if (o.listen_address) config->web.listen_address = *o.listen_address;
  if (o.telemetry_path) config->web.telemetry_path = *o.telemetry_path;
  if (o.external_url) config->web.external_url = *o.external_url;
  if (absl::Status s = ApplyPageLabels(o.page_labels, &config->alerting.labels); !s.ok()) {
    return s;
  }
  if (o.log_level) config->log.level = *o.log_level;
  if (o.log_format) config->log.format = *o.log_format;
  collectors.ApplyTo(config);
  if (absl::StatusOr<stagewatch::LogLevel> l = stagewatch::ParseLogLevel(config->log.level);
      !l.ok()) {
    return l.status();
  }
  return stagewatch::ParseLogFormat(config->log.format).status();
}

// With --web.config.file before the subcommand, that file is checked as well.
int CheckConfig(const std::string& path, const std::string& web_config_file) {
  absl::StatusOr<stagewatch::Config> config =
      stagewatch::LoadConfigFile(path, stagewatch::CollectorFlagNames());
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return 1;
  }
  std::cout << path << ": valid (" << config->stages.size() << " configured stages)\n";
  if (web_config_file.empty()) return 0;
  auto web = stagewatch::exporters::LoadWebConfigFile(web_config_file);
  if (!web.ok()) {
    std::cerr << web.status().message() << "\n";
    return 1;
  }
  std::cout << web_config_file << ": valid (" << (web->tls ? "TLS" : "no TLS") << ", "
            << web->basic_auth_users.size() << " basic auth users)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A fixed mmap threshold (glibc's initial one): glibc otherwise raises it to the size of each
  // large block freed, and a cgroup churn's large tables and queues are then carved from the
  // heap, where they stay as fragments no trim returns (bench/README.md, RSS over a churn).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  CLI::App app{"stagewatch: per-pipeline-stage OOM, memory and CPU contention metrics from eBPF"};
  app.set_version_flag("--version",
                       std::string("stagewatch ") + stagewatch::kVersion + " (" +
                           stagewatch::kRevision + ")");
  app.require_subcommand(0, 1);

  std::string config_file, btf_path, web_config_file, keep_capabilities;
  Overrides overrides;
  // Not CLI::ExistingFile: the loader says what is wrong with the file, and exits as for any
  // other configuration error.
  app.add_option("--config.file", config_file, "YAML configuration file (default: embedded)");
  app.add_option("--web.listen-address", overrides.listen_address,
                 "Address to serve metrics on (default :9617)");
  app.add_option("--web.telemetry-path", overrides.telemetry_path,
                 "Path of the metrics (default /metrics)");
  app.add_option("--web.external-url", overrides.external_url,
                 "The URL users reach the agent's pages at (behind a proxy, say), for the links "
                 "in its pages to Alertmanager (default: http://<hostname>:<port>)");
  app.add_option("--alerting.label", overrides.page_labels,
                 "NAME=VALUE: a label every page to Alertmanager carries, over alerting.labels "
                 "(repeatable); e.g. instance=$(NODE_NAME) in a DaemonSet");
  app.add_option("--web.config.file", web_config_file,
                 "Web configuration (TLS, basic auth) in the exporter-toolkit format; see "
                 "docs/security.md");
  app.add_option("--capabilities.keep", keep_capabilities,
                 "Capabilities to keep after the probes are attached, comma-separated, or none "
                 "(the default); all is refused");
  app.add_option("--log.level", overrides.log_level, "debug, info, warn or error");
  app.add_option("--log.format", overrides.log_format, "logfmt or json");
  app.add_option("--bpf.btf-path", btf_path,
                 "BTF of the running kernel, when it has none at /sys/kernel/btf/vmlinux");
  std::string attach = "auto";
  app.add_option("--bpf.attach", attach,
                 "auto: the fastest attach type this kernel offers (tp_btf where it can); "
                 "raw_tp: raw tracepoints even there")
      ->envname("STAGEWATCH_BPF_ATTACH");
  std::string ledger_path;
  app.add_option("--ledger.path", ledger_path,
                 "The run ledger the agent records runs in and its /runs pages read (default: "
                 "runs.ledger_path, "
                 "/var/lib/stagewatch/ledger.db); one it cannot open is a warning: no runs");
  bool bpf_stats = false;
  app.add_flag("--bpf.stats", bpf_stats,
               "Count the run time of BPF programs while the agent runs (BPF_ENABLE_STATS; "
               "needs CAP_SYS_ADMIN), without setting kernel.bpf_stats_enabled");
  stagewatch::CollectorFlags collector_flags(app);

  CLI::App* agent = app.add_subcommand("agent", "Run the exporter (the default)")->fallthrough();
  std::string check_file;
  CLI::App* check = app.add_subcommand("check-config", "Validate a configuration file");
  check->add_option("file", check_file, "The YAML file")->required();
  bool json = false;
  CLI::App* features = app.add_subcommand("features", "What this kernel supports, which probes attach")
                           ->fallthrough();
  features->add_flag("--json", json, "Print JSON");
  stagewatch::RunsCli runs_cli(app);  // run, runs list|show, advise
  stagewatch::ResultsCli results_cli(app);  // results, runs compare
  stagewatch::PipelinesCli pipelines_cli(app);  // pipelines list|show

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the help, the version or the error
    if (code == 0) return 0;
    return runs_cli.Launching() ? stagewatch::kExitLauncherRefused : stagewatch::kExitRefused;
  }
  const int refused =
      runs_cli.Launching() ? stagewatch::kExitLauncherRefused : stagewatch::kExitRefused;

  if (*check) return CheckConfig(check_file, web_config_file);

  // The configuration as the file and the flags make it; the agent loads it again on SIGHUP.
  auto load_config = [&]() -> absl::StatusOr<stagewatch::Config> {
    const std::vector<std::string> collectors = stagewatch::CollectorFlagNames();
    absl::StatusOr<stagewatch::Config> config =
        config_file.empty() ? stagewatch::DefaultConfig(collectors)
                            : stagewatch::LoadConfigFile(config_file, collectors);
    if (!config.ok()) return config.status();
    if (absl::Status s = ApplyOverrides(overrides, collector_flags, &*config); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("stagewatch: ", s.message()));
    }
    if (!ledger_path.empty()) config->runs.ledger_path = ledger_path;
    return config;
  };
  absl::StatusOr<stagewatch::Config> config = load_config();
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return refused;
  }
  if (absl::Status s = stagewatch::ApplyLogConfig(config->log); !s.ok()) {
    std::cerr << "stagewatch: " << s.message() << "\n";
    return refused;
  }
  absl::StatusOr<stagewatch::AttachPolicy> policy = stagewatch::ParseAttachPolicy(attach);
  if (!policy.ok()) {
    std::cerr << "stagewatch: " << policy.status().message() << "\n";
    return refused;
  }
  if (*features) {
    return stagewatch::RunFeaturesReport({.json = json,
                                          .btf_path = btf_path,
                                          .attach = *policy,
                                          .lifecycle_events = config->cgroup.lifecycle_events,
                                          .task_iterator = config->memory.task_iterator,
                                          .fault_source = config->memory.fault_source},
                                         std::cout);
  }
  if (std::optional<int> code = runs_cli.Dispatch(*config)) return *code;
  if (std::optional<int> code = results_cli.Dispatch(*config)) return *code;
  if (std::optional<int> code = pipelines_cli.Dispatch(*config)) return *code;
  (void)agent;  // no subcommand and `agent` both run the exporter
  absl::StatusOr<std::vector<int>> keep = stagewatch::ParseCapabilityList(keep_capabilities);
  if (!keep.ok()) {
    std::cerr << "stagewatch: " << keep.status().message() << "\n";
    return 1;
  }
  return stagewatch::RunAgent({.config = *std::move(config),
                               .btf_path = btf_path,
                               .attach = *policy,
                               .web_config_file = web_config_file,
                               .keep_capabilities = *std::move(keep),
                               .bpf_stats = bpf_stats,
                               .reload_config = load_config});
}
