#include "config/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <cmath>
#include <limits>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bounded_file.h"
#include "config/config_validate.h"
#include "config/yaml_diagnostics.h"
#include "yaml-cpp/yaml.h"

namespace stagewatch {
namespace {

using namespace config_internal;  // NOLINT: the Check* helpers exist only for this file

using Check = std::function<absl::Status(std::string_view)>;

// A value, where to blame it, and its dotted name for messages ("web.listen_address").
struct Value {
  YAML::Node node;
  YAML::Mark mark;
  std::string name;
};

// Quoted scalars ("true", "32") are strings in YAML; accepting them as bools or numbers would
// hide a mistake. yaml-cpp tags non-plain scalars "!".
bool IsPlainScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() != "!"; }

class ConfigParser {
 public:
  ConfigParser(std::string_view source, const std::vector<std::string>& collectors)
      : diag_(source), known_collectors_(collectors) {}

  absl::StatusOr<Config> Parse(std::string_view text) {
    Config config;
    for (const std::string& name : known_collectors_) config.collectors[name] = true;
    ParseTop(LoadOneDocument(text, diag_), config);
    if (absl::Status status = diag_.ToStatus(); !status.ok()) return status;
    return config;
  }

 private:
  struct Field {
    std::string key;
    std::function<void(const Value&)> handle;
    bool listed = true;  // false: a removed key, handled only to say so, never suggested
  };

  // Dispatches each key of a map to its field; reports unknown and repeated keys.
  void ParseMap(const Value& map, std::string_view where, const std::vector<Field>& fields,
                std::string_view noun = "key", std::string_view allowed_label = "allowed") {
    if (map.node.IsNull()) return;  // `section:` alone keeps the defaults
    if (!map.node.IsMap()) {
      diag_.Add(map.mark, absl::StrFormat("%s must be a map of keys",
                                          map.name.empty() ? "the configuration" : map.name));
      return;
    }
    std::vector<std::string> allowed, seen;
    for (const Field& field : fields) {
      if (field.listed) allowed.push_back(field.key);
    }
    for (auto it = map.node.begin(); it != map.node.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      const std::string name = key.IsScalar() ? key.Scalar() : "";
      const auto field = std::find_if(fields.begin(), fields.end(),
                                      [&](const Field& f) { return f.key == name; });
      if (field == fields.end()) {
        diag_.Add(key.Mark(), UnknownNameMessage(noun, name, where, allowed, allowed_label));
      } else if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
        diag_.Add(key.Mark(), absl::StrFormat("%s \"%s\"%s is set twice", noun, name, where));
      } else {
        seen.push_back(name);
        // A null value (`key:` alone) is marked at the next token, so blame its key instead.
        field->handle(Value{value, value.IsNull() ? key.Mark() : value.Mark(),
                            map.name.empty() ? name : absl::StrCat(map.name, ".", name)});
      }
    }
  }

  bool ReadString(const Value& v, std::string& out) {
    if (!v.node.IsScalar()) {
      diag_.Add(v.mark, absl::StrFormat("%s must be a string", v.name));
      return false;
    }
    out = v.node.Scalar();
    return true;
  }

  // Reads a string and keeps it only if `check` finds no problem.
  void ReadChecked(const Value& v, std::string& out, const Check& check) {
    std::string text;
    if (!ReadString(v, text)) return;
    if (const absl::Status problem = check(text); !problem.ok()) {
      diag_.Add(v.mark, std::string(problem.message()));
      return;
    }
    out = text;
  }

  void ReadBool(const Value& v, bool& out) {
    if (!IsPlainScalar(v.node) || !YAML::convert<bool>::decode(v.node, out)) {
      diag_.Add(v.mark, absl::StrFormat("%s must be true or false", v.name));
    }
  }

  void ReadInt(const Value& v, int min, int max, int& out) {
    long long number = 0;
    if (!IsPlainScalar(v.node) || !YAML::convert<long long>::decode(v.node, number)) {
      diag_.Add(v.mark, absl::StrFormat("%s must be an integer", v.name));
    } else if (number < min || number > max) {
      const std::string range = max == std::numeric_limits<int>::max()
                                    ? absl::StrFormat("at least %d", min)
                                    : absl::StrFormat("between %d and %d", min, max);
      diag_.Add(v.mark, absl::StrFormat("%s must be %s (got %d)", v.name, range, number));
    } else {
      out = static_cast<int>(number);
    }
  }

  void ReadDuration(const Value& v, absl::Duration& out) {
    std::string text;
    if (!ReadString(v, text)) return;
    absl::Duration duration;
    if (!absl::ParseDuration(text, &duration) || duration == absl::InfiniteDuration()) {
      diag_.Add(v.mark, absl::StrFormat("%s \"%s\" is not a duration; write e.g. \"200ms\" or "
                                        "\"1s\"", v.name, text));
    } else if (duration < absl::ZeroDuration()) {
      diag_.Add(v.mark, absl::StrFormat("%s must not be negative (got \"%s\")", v.name, text));
    } else {
      out = duration;
    }
  }

  // Reads a list of strings, keeping the entries `check` finds no problem with.
  void ReadStringList(const Value& v, std::vector<std::string>& out, const Check& check) {
    out.clear();
    if (v.node.IsNull()) return;
    if (!v.node.IsSequence()) {
      diag_.Add(v.mark, absl::StrFormat("%s must be a list of strings, e.g. [a, b]", v.name));
      return;
    }
    for (const YAML::Node& item : v.node) {
      if (!item.IsScalar()) {
        diag_.Add(item.Mark(), absl::StrFormat("each entry of %s must be a string", v.name));
      } else if (const absl::Status problem = check(item.Scalar()); !problem.ok()) {
        diag_.Add(item.Mark(), std::string(problem.message()));
      } else {
        out.push_back(item.Scalar());
      }
    }
  }

  void ParseTop(const YAML::Node& root, Config& c) {
    ParseMap(Value{root, root.Mark(), ""}, " at top level", {
        {"web", [&](const Value& v) { ParseWeb(v, c.web); }},
        {"log", [&](const Value& v) { ParseLog(v, c.log); }},
        {"cgroup", [&](const Value& v) { ParseCgroup(v, c.cgroup); }},
        {"discovery", [&](const Value& v) { ParseDiscovery(v, c.discovery); }},
        {"stages", [&](const Value& v) { ParseStages(v, c.stages); }},
        {"collectors", [&](const Value& v) { ParseCollectors(v, c.collectors); }},
        {"oom", [&](const Value& v) { ParseOom(v, c.oom); }},
        {"memory", [&](const Value& v) { ParseMemory(v, c.memory); }},
        {"anomalies", [&](const Value& v) { ParseAnomalies(v, c.anomalies); }},
        {"alerting", [&](const Value& v) { ParseAlerting(v, c.alerting); }},
        {"runs", [&](const Value& v) { ParseRuns(v, c.runs); }},
    });
  }

  void ParseWeb(const Value& section, WebConfig& web) {
    ParseMap(section, " in web", {
        {"listen_address",
         [&](const Value& v) { ReadChecked(v, web.listen_address, CheckListenAddress); }},
        {"telemetry_path",
         [&](const Value& v) { ReadChecked(v, web.telemetry_path, CheckTelemetryPath); }},
    });
  }

  void ParseLog(const Value& section, LogConfig& log) {
    ParseMap(section, " in log", {
        {"level", [&](const Value& v) { ReadChecked(v, log.level, CheckLogLevel); }},
        {"format", [&](const Value& v) { ReadChecked(v, log.format, CheckLogFormat); }},
    });
  }

  void ParseCgroup(const Value& section, CgroupConfig& cgroup) {
    ParseMap(section, " in cgroup", {
        {.key = "root", .handle = [&](const Value& v) { RejectCgroupRoot(v); }, .listed = false},
        {"rescan_min_interval",
         [&](const Value& v) { ReadDuration(v, cgroup.rescan_min_interval); }},
        {"cache_max_entries", [&](const Value& v) {
           ReadInt(v, 16, std::numeric_limits<int>::max(), cgroup.cache_max_entries);
         }},
        {"lifecycle_events", [&](const Value& v) { ReadBool(v, cgroup.lifecycle_events); }},
    });
  }

  // The agent used to accept cgroup.root but never read it: every reader takes the mount
  // points from /proc/self/mountinfo, so a configured root could only disagree with them.
  void RejectCgroupRoot(const Value& v) {
    diag_.Add(v.mark, "cgroup.root is not supported: stagewatch finds every cgroup filesystem in "
                      "/proc/self/mountinfo, wherever it is mounted; delete the key (in a "
                      "container, mount the host's /sys/fs/cgroup into it, as "
                      "deploy/kubernetes/daemonset.yaml does)");
  }

  void ParseDiscovery(const Value& section, DiscoveryConfig& discovery) {
    ParseMap(section, " in discovery", {
        {"enabled", [&](const Value& v) { ReadBool(v, discovery.enabled); }},
        {"directory",
         [&](const Value& v) { ReadChecked(v, discovery.directory, CheckDiscoveryDirectory); }},
        {"pipeline", [&](const Value& v) { ReadString(v, discovery.pipeline); }},
        {"max_stages", [&](const Value& v) { ReadInt(v, 0, 1000, discovery.max_stages); }},
        {"forget_after", [&](const Value& v) { ReadDuration(v, discovery.forget_after); }},
    });
  }

  void ParseStages(const Value& v, std::vector<StageConfig>& stages) {
    if (v.node.IsNull()) return;
    if (!v.node.IsSequence()) {
      diag_.Add(v.mark, "stages must be a list, e.g. [{name: train, cgroup_paths: [/train]}]");
      return;
    }
    size_t index = 0;
    for (const YAML::Node& item : v.node) {
      StageConfig stage;
      stage.line = item.Mark().line + 1;
      const Value value{item, item.Mark(), absl::StrFormat("stages[%d]", index++)};
      if (ParseStage(value, stage, stages)) stages.push_back(std::move(stage));
    }
  }

  // Returns whether the stage has a valid, unique name (its other errors are recorded).
  bool ParseStage(const Value& v, StageConfig& stage, const std::vector<StageConfig>& earlier) {
    if (!v.node.IsMap()) {
      diag_.Add(v.mark, absl::StrFormat("%s must be a map with name, pipeline, cgroup_paths and "
                                        "systemd_units", v.name));
      return false;
    }
    const YAML::Node name_node = v.node["name"];  // invalid (not just null) when absent
    const std::string label = name_node.IsDefined() && name_node.IsScalar() &&
                                      !name_node.Scalar().empty()
                                  ? absl::StrFormat("stage \"%s\"", name_node.Scalar())
                                  : v.name;
    bool name_seen = false, name_ok = false, has_matcher = false;
    // A non-empty list, or one of the wrong type (reported already), counts as a matcher.
    auto note_matcher = [&](const Value& n) {
      has_matcher |= !n.node.IsNull() && !(n.node.IsSequence() && n.node.size() == 0);
    };
    auto in_stage = [&](auto check) {
      return [check, &label](std::string_view glob) { return check(glob, label); };
    };
    ParseMap(v, absl::StrCat(" in ", label), {
        {"name", [&](const Value& n) {
           name_seen = true;
           name_ok = ReadStageName(n, stage.name, earlier);
         }},
        {"pipeline", [&](const Value& n) { ReadString(n, stage.pipeline); }},
        {"cgroup_paths", [&](const Value& n) {
           note_matcher(n);
           ReadStringList(n, stage.cgroup_paths, in_stage(CheckCgroupPathGlob));
         }},
        {"systemd_units", [&](const Value& n) {
           note_matcher(n);
           ReadStringList(n, stage.systemd_units, in_stage(CheckSystemdUnitGlob));
         }},
    });
    if (!name_seen) {
      diag_.Add(v.mark, absl::StrFormat("%s has no name; add \"name: <stage>\"", v.name));
    }
    if (!has_matcher) {
      diag_.Add(v.mark, absl::StrFormat("%s has no matcher, so no cgroup would belong to it; "
                                        "give it cgroup_paths or systemd_units", label));
    }
    return name_ok;
  }

  bool ReadStageName(const Value& v, std::string& out, const std::vector<StageConfig>& earlier) {
    if (!ReadString(v, out)) return false;
    absl::Status problem = CheckStageName(out);
    for (const StageConfig& other : earlier) {
      if (problem.ok() && other.name == out) {
        problem = absl::InvalidArgumentError(absl::StrFormat(
            "duplicate stage name \"%s\"; the stage at line %d has it already", out, other.line));
      }
    }
    if (problem.ok()) return true;
    diag_.Add(v.mark, std::string(problem.message()));
    return false;
  }

  void ParseCollectors(const Value& v, std::map<std::string, bool>& collectors) {
    std::vector<Field> fields;
    for (const std::string& name : known_collectors_) {
      fields.push_back({name, [this, &collectors, name](const Value& n) {
                          ReadBool(n, collectors[name]);
                        }});
    }
    ParseMap(v, "", fields, "collector", "known collectors");
  }

  void ParseOom(const Value& section, OomConfig& oom) {
    ParseMap(section, " in oom", {
        {"userspace_killers", [&](const Value& v) {
           ReadStringList(v, oom.userspace_killers, CheckUserspaceKiller);
         }},
        {"userspace_killer_paths", [&](const Value& v) {
           ReadStringList(v, oom.userspace_killer_paths, CheckUserspaceKillerPath);
         }},
        {"userspace_killer_max_uid", [&](const Value& v) {
           ReadInt(v, 0, std::numeric_limits<int>::max(), oom.userspace_killer_max_uid);
         }},
    });
  }

  void ParseMemory(const Value& section, MemoryConfig& memory) {
    ParseMap(section, " in memory", {
        {"near_limit_fraction",
         [&](const Value& v) { ReadFraction(v, memory.near_limit_fraction); }},
        {"sample_interval", [&](const Value& v) {
           ReadDuration(v, memory.sample_interval);
           if (memory.sample_interval < absl::Milliseconds(100)) {
             diag_.Add(v.mark, absl::StrFormat("%s must be at least 100ms: faster sampling "
                                               "costs more CPU than it tells", v.name));
             memory.sample_interval = absl::Milliseconds(100);
           }
         }},
        {"max_limit_domains",
         [&](const Value& v) { ReadInt(v, 1, 100000, memory.max_limit_domains); }},
        {"task_iterator", [&](const Value& v) { ReadBool(v, memory.task_iterator); }},
    });
  }

  void ParseAnomalies(const Value& section, AnomalyConfig& a) {
    ParseMap(section, " in anomalies", {
        {"memory_climb", [&](const Value& v) {
           ParseMap(v, " in anomalies.memory_climb", {
               {"enabled", [&](const Value& f) { ReadBool(f, a.memory_climb.enabled); }},
               {"window", [&](const Value& f) { ReadDuration(f, a.memory_climb.window); }},
               {"warmup", [&](const Value& f) { ReadDuration(f, a.memory_climb.warmup); }},
               {"k", [&](const Value& f) { ReadPositive(f, a.memory_climb.k); }},
               {"min_growth_bytes",
                [&](const Value& f) { ReadPositive(f, a.memory_climb.min_growth_bytes); }},
           });
         }},
        {"limit_eta", [&](const Value& v) {
           ParseMap(v, " in anomalies.limit_eta", {
               {"enabled", [&](const Value& f) { ReadBool(f, a.limit_eta.enabled); }},
               {"window", [&](const Value& f) { ReadDuration(f, a.limit_eta.window); }},
               {"warmup", [&](const Value& f) { ReadDuration(f, a.limit_eta.warmup); }},
               {"min_span", [&](const Value& f) { ReadDuration(f, a.limit_eta.min_span); }},
               {"threshold", [&](const Value& f) { ReadDuration(f, a.limit_eta.threshold); }},
               {"min_usage_fraction",
                [&](const Value& f) { ReadFraction(f, a.limit_eta.min_usage_fraction); }},
           });
         }},
        {"pressure_spike", [&](const Value& v) {
           ParseMap(v, " in anomalies.pressure_spike", {
               {"enabled", [&](const Value& f) { ReadBool(f, a.pressure_spike.enabled); }},
               {"window", [&](const Value& f) { ReadDuration(f, a.pressure_spike.window); }},
               {"threshold", [&](const Value& f) { ReadFraction(f, a.pressure_spike.threshold); }},
               {"sustain", [&](const Value& f) { ReadDuration(f, a.pressure_spike.sustain); }},
           });
         }},
        {"fault_storm", [&](const Value& v) { ParseRateBaseline(v, "fault_storm", a.fault_storm); }},
        {"cpu_starvation",
         [&](const Value& v) { ParseRateBaseline(v, "cpu_starvation", a.cpu_starvation); }},
        {"oom_kill", [&](const Value& v) {
           ParseMap(v, " in anomalies.oom_kill", {
               {"enabled", [&](const Value& f) { ReadBool(f, a.oom_kill); }},
               {"hold", [&](const Value& f) { ReadDuration(f, a.oom_kill_hold); }},
           });
         }},
    });
  }

  // min_level: major faults per second, or p99 run-queue latency in seconds.
  void ParseRateBaseline(const Value& v, const std::string& name, RateBaselineConfig& r) {
    ParseMap(v, " in anomalies." + name, {
        {"enabled", [&](const Value& f) { ReadBool(f, r.enabled); }},
        {"window", [&](const Value& f) { ReadDuration(f, r.window); }},
        {"warmup", [&](const Value& f) { ReadDuration(f, r.warmup); }},
        {"k", [&](const Value& f) { ReadPositive(f, r.k); }},
        {"min_level", [&](const Value& f) { ReadPositive(f, r.min_level); }},
    });
  }

  void ParseAlerting(const Value& section, AlertingConfig& a) {
    ParseMap(section, " in alerting", {
        {"alertmanagers", [&](const Value& v) {
           ReadStringList(v, a.alertmanagers, CheckAlertmanagerUrl);
         }},
        {"basic_auth", [&](const Value& v) {
           ParseMap(v, " in alerting.basic_auth", {
               {"username", [&](const Value& f) { ReadString(f, a.basic_auth_username); }},
               {"password", [&](const Value& f) { ReadString(f, a.basic_auth_password); }},
               {"password_file", [&](const Value& f) {
                  ReadChecked(f, a.basic_auth_password_file, CheckAbsolutePath);
                }},
           });
           if (!a.basic_auth_password.empty() && !a.basic_auth_password_file.empty()) {
             diag_.Add(v.mark, "alerting.basic_auth: set password or password_file, not both");
           }
         }},
        {"tls", [&](const Value& v) {
           ParseMap(v, " in alerting.tls", {
               {"ca_file", [&](const Value& f) { ReadChecked(f, a.tls_ca_file, CheckAbsolutePath); }},
               {"cert_file",
                [&](const Value& f) { ReadChecked(f, a.tls_cert_file, CheckAbsolutePath); }},
               {"key_file", [&](const Value& f) { ReadChecked(f, a.tls_key_file, CheckAbsolutePath); }},
               {"insecure_skip_verify", [&](const Value& f) { ReadBool(f, a.tls_insecure_skip_verify); }},
               {"min_version",
                [&](const Value& f) { ReadChecked(f, a.tls_min_version, CheckTlsMinVersion); }},
           });
           if (a.tls_cert_file.empty() != a.tls_key_file.empty()) {
             diag_.Add(v.mark, "alerting.tls: cert_file and key_file must be set together");
           }
         }},
        {"bearer_token", [&](const Value& v) { ReadString(v, a.bearer_token); }},
        {"timeout", [&](const Value& v) { ReadDuration(v, a.timeout); }},
        {"resend_interval", [&](const Value& v) { ReadDuration(v, a.resend_interval); }},
    });
  }

  void ParseRuns(const Value& section, RunsConfig& r) {
    ParseMap(section, " in runs", {
        {"ledger_path", [&](const Value& v) {
           ReadChecked(v, r.ledger_path, [](std::string_view path) {
             return !path.empty() && path[0] == '/' && path.back() != '/'
                        ? absl::OkStatus()
                        : absl::InvalidArgumentError("runs.ledger_path must be an absolute file "
                                                     "path, e.g. /var/lib/stagewatch/ledger.db");
           });
         }},
        {"degraded_fraction", [&](const Value& v) { ReadFraction(v, r.degraded_fraction); }},
        {"normal_run_queue_wait_fraction",
         [&](const Value& v) { ReadPositive(v, r.normal_run_queue_wait_fraction); }},
        {"info_per_stage", [&](const Value& v) { ReadInt(v, 0, 100, r.info_per_stage); }},
        {"sample_reads_per_second",
         [&](const Value& v) { ReadInt(v, 0, 100000, r.sample_reads_per_second); }},
        {"advise", [&](const Value& v) {
           AdvisorConfig& a = r.advise;
           ParseMap(v, " in runs.advise", {
               {"min_runs", [&](const Value& f) { ReadInt(f, 1, 1000, a.min_runs); }},
               {"max_runs", [&](const Value& f) { ReadInt(f, 1, 10000, a.max_runs); }},
               {"memory_percentile", [&](const Value& f) { ReadFraction(f, a.memory_percentile); }},
               {"memory_margin", [&](const Value& f) { ReadPositive(f, a.memory_margin); }},
               {"oom_bump", [&](const Value& f) { ReadAtLeastOne(f, a.oom_bump); }},
               {"memory_high_fraction",
                [&](const Value& f) { ReadFraction(f, a.memory_high_fraction); }},
               {"cpu_margin", [&](const Value& f) { ReadPositive(f, a.cpu_margin); }},
           });
         }},
    });
  }

  void ReadPositive(const Value& v, double& out) { ReadAtLeast(v, 0, out); }
  void ReadAtLeastOne(const Value& v, double& out) { ReadAtLeast(v, 1, out); }

  void ReadAtLeast(const Value& v, double min, double& out) {
    double number = 0;
    if (!IsPlainScalar(v.node) || !YAML::convert<double>::decode(v.node, number) ||
        !(number >= min) || !std::isfinite(number)) {
      diag_.Add(v.mark, absl::StrFormat("%s must be a number, %g or more", v.name, min));
    } else {
      out = number;
    }
  }

  // A number in (0, 1].
  void ReadFraction(const Value& v, double& out) {
    double number = 0;
    if (!IsPlainScalar(v.node) || !YAML::convert<double>::decode(v.node, number) ||
        !(number > 0 && number <= 1)) {
      diag_.Add(v.mark, absl::StrFormat("%s must be a number above 0 and at most 1, e.g. 0.9",
                                        v.name));
    } else {
      out = number;
    }
  }

  Diagnostics diag_;
  const std::vector<std::string>& known_collectors_;
};

}  // namespace

absl::StatusOr<Config> ParseConfig(std::string_view yaml_text, std::string_view source_name,
                                   const std::vector<std::string>& collectors) {
  return ParseYamlText(yaml_text, source_name,
                       [&] { return ConfigParser(source_name, collectors).Parse(yaml_text); });
}

absl::StatusOr<Config> LoadConfigFile(const std::string& path,
                                      const std::vector<std::string>& collectors) {
  absl::StatusOr<std::string> text = ReadBoundedFile(path, "config file");
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path, collectors);
}

absl::StatusOr<Config> DefaultConfig(const std::vector<std::string>& collectors) {
  return ParseConfig(DefaultConfigYaml(), "<embedded default>", collectors);
}

}  // namespace stagewatch
