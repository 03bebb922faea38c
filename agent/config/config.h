// The agent's configuration: YAML, from --config.file or the embedded default.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/anomaly_config.h"
#include "config/pipelines_config.h"
#include "config/runs_config.h"

namespace stagewatch {

// A stage: a name, an optional pipeline, and the cgroups it owns. A cgroup belongs to the
// stage if it or one of its ancestors matches (see agent/stages/stage_resolver.h).
struct StageConfig {
  std::string name;
  std::string pipeline;                    // optional; empty when not set
  std::vector<std::string> cgroup_paths;   // globs over the path from the hierarchy root
  std::vector<std::string> systemd_units;  // globs over one path component, e.g. "train*.service"
  int line = 0;                            // where it was defined, for messages

  // The same stage wherever the file defines it.
  bool operator==(const StageConfig& o) const {
    return name == o.name && pipeline == o.pipeline && cgroup_paths == o.cgroup_paths &&
           systemd_units == o.systemd_units;
  }
};

// Stages named by the `.../<directory>/<stage>/...` convention that `stagewatch run` creates.
struct DiscoveryConfig {
  bool enabled = true;
  std::string directory = "stagewatch";
  std::string pipeline;  // optional pipeline label for discovered stages
  int max_stages = 32;   // more distinct names fold into `unattributed`, counted
  // A discovered stage with no cgroup left this long is dropped and its slot freed; 0: never.
  absl::Duration forget_after = absl::Minutes(15);

  bool operator==(const DiscoveryConfig&) const = default;
};

struct WebConfig {
  std::string listen_address = ":9617";
  std::string telemetry_path = "/metrics";
  // Where users reach the agent's pages (--web.external-url), for the links in its pages to
  // Alertmanager; "": http(s)://<hostname>:<port> of the listen address.
  std::string external_url;

  bool operator==(const WebConfig&) const = default;
};

struct LogConfig {
  std::string level = "info";    // debug | info | warn | error
  std::string format = "logfmt";  // logfmt | json

  bool operator==(const LogConfig&) const = default;
};

// Where cgroupfs is mounted is no setting: every reader takes the mount points the kernel
// lists in /proc/self/mountinfo (cgroup/layout.h).
struct CgroupConfig {
  absl::Duration rescan_min_interval = absl::Milliseconds(200);  // rate limit on cache misses
  int cache_max_entries = 65536;
  // Learn cgroups from the kernel's cgroup_mkdir/cgroup_rmdir tracepoints (walks only at
  // start and after lost events); false names them by walks, as where they cannot attach.
  bool lifecycle_events = true;

  bool operator==(const CgroupConfig&) const = default;
};

struct OomConfig {
  // Processes whose SIGKILLs count as user-space OOM kills (kind="userspace"). A sender counts
  // only when its name is listed, its executable is one of the killers' (the name found in
  // the system's program directories, or a userspace_killer_paths entry) and it runs as a
  // user at most userspace_killer_max_uid: a process that merely names itself so does not.
  std::vector<std::string> userspace_killers = {"systemd-oomd", "earlyoom", "oomd"};
  std::vector<std::string> userspace_killer_paths;  // absolute paths of killers installed elsewhere
  int userspace_killer_max_uid = 999;               // system accounts (Debian policy: 0-999)

  bool operator==(const OomConfig&) const = default;
};

// Where stagewatch_page_faults_total comes from (memory.fault_source).
enum class PageFaultSource {
  kAuto,   // memory.stat where the memory controller covers the tree, else BPF
  kMemcg,  // memory.stat only: no program runs per fault
  kBpf,    // BPF programs on every fault, for every stage
};
absl::StatusOr<PageFaultSource> ParsePageFaultSource(std::string_view text);
std::string_view PageFaultSourceName(PageFaultSource source);  // "auto" | "memcg" | "bpf"

struct MemoryConfig {
  // Time counts as near the limit while usage is at least this fraction of it.
  double near_limit_fraction = 0.9;
  // How often usage is sampled for near-limit time, peaks and the detectors.
  absl::Duration sample_interval = absl::Seconds(1);
  // Limit domains (stage tops plus their cgroups with a limit of their own) sampled at most;
  // limited cgroups beyond it are counted, not watched.
  int max_limit_domains = 256;
  // Count task states (stagewatch_tasks) with one pass of a BPF task iterator per scrape;
  // false reads each cgroup's task list and /proc/<tid>/stat, as where it cannot load.
  bool task_iterator = true;
  PageFaultSource fault_source = PageFaultSource::kAuto;

  bool operator==(const MemoryConfig&) const = default;
};

// Where the agent pages directly (Alertmanager v2 API); no URLs: no direct pages.
struct AlertingConfig {
  std::vector<std::string> alertmanagers;  // e.g. http://127.0.0.1:9093; an HA pair gets both
  std::string basic_auth_username;
  std::string basic_auth_password;
  std::string basic_auth_password_file;  // read at start; exclusive with basic_auth_password
  std::string bearer_token;
  std::string tls_ca_file, tls_cert_file, tls_key_file;
  bool tls_insecure_skip_verify = false;
  std::string tls_min_version = "TLS12";  // or TLS13
  absl::Duration timeout = absl::Seconds(5);
  absl::Duration resend_interval = absl::Seconds(30);
  // Each page's runbook_url annotation is <runbook_url_base>/<alertname>.md, as the rules'
  // (alerts/config.yaml's runbook_url_base, which this default matches).
  std::string runbook_url_base = "docs/runbooks";
  // Labels every page carries, as Prometheus' external_labels; `instance` here replaces the
  // agent's hostname:port (a DaemonSet sets it to the node name, as its scrapes do).
  std::map<std::string, std::string> labels;

  bool operator==(const AlertingConfig&) const = default;
};

struct Config {
  WebConfig web;
  LogConfig log;
  CgroupConfig cgroup;
  DiscoveryConfig discovery;
  OomConfig oom;
  MemoryConfig memory;
  AnomalyConfig anomalies;
  AlertingConfig alerting;
  RunsConfig runs;
  PipelinesConfig pipelines;
  std::vector<StageConfig> stages;
  std::map<std::string, bool> collectors;  // every known collector, on or off

  bool operator==(const Config&) const = default;
};

// Parses YAML text. `source_name` prefixes every error ("file:line:col: message"); all errors
// found are reported together, one per line. `collectors`: the names `collectors:` may switch,
// in the order an error lists them. The configuration sits below the signals, so it is told
// them: the agent passes the signal registry's CollectorFlagNames() (agent/signals/signal.h).
absl::StatusOr<Config> ParseConfig(std::string_view yaml_text, std::string_view source_name,
                                   const std::vector<std::string>& collectors);
absl::StatusOr<Config> LoadConfigFile(const std::string& path,
                                      const std::vector<std::string>& collectors);

// The configuration used when no --config.file is given.
std::string_view DefaultConfigYaml();
absl::StatusOr<Config> DefaultConfig(const std::vector<std::string>& collectors);

}  // namespace stagewatch
