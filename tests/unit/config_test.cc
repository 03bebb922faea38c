#include "config/config.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "signals/signal.h"
#include "source_scan.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::StartsWith;

// Raw strings below start with a newline for readability; line 1 is the line after it.
absl::StatusOr<Config> Parse(std::string_view yaml) {
  if (!yaml.empty() && yaml.front() == '\n') yaml.remove_prefix(1);
  return ParseConfig(yaml, "cfg.yaml", CollectorFlagNames());
}

// The whole error text of a configuration that must fail.
std::string ErrorOf(std::string_view yaml) {
  const absl::StatusOr<Config> config = Parse(yaml);
  if (config.ok()) return "<parsed without error>";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

std::vector<std::string> ErrorLines(std::string_view yaml) {
  return absl::StrSplit(ErrorOf(yaml), '\n');
}

TEST(ConfigDefaultTest, EmbeddedDefaultParsesWithExpectedValues) {
  const absl::StatusOr<Config> config = DefaultConfig(CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->web.listen_address, ":9617");
  EXPECT_EQ(config->web.telemetry_path, "/metrics");
  EXPECT_EQ(config->log.level, "info");
  EXPECT_EQ(config->log.format, "logfmt");
  EXPECT_EQ(config->cgroup.rescan_min_interval, absl::Milliseconds(200));
  EXPECT_EQ(config->cgroup.cache_max_entries, 65536);
  EXPECT_TRUE(config->discovery.enabled);
  EXPECT_EQ(config->discovery.directory, "stagewatch");
  EXPECT_EQ(config->discovery.pipeline, "");
  EXPECT_EQ(config->discovery.max_stages, 32);
  EXPECT_EQ(config->discovery.forget_after, absl::Minutes(15));
  EXPECT_TRUE(config->cgroup.lifecycle_events);
  EXPECT_TRUE(config->stages.empty());
  EXPECT_THAT(config->collectors, ElementsAre(Pair("memory", true), Pair("oom", true),
                                              Pair("placement", true), Pair("sched", true)));
  EXPECT_THAT(config->oom.userspace_killers, ElementsAre("systemd-oomd", "earlyoom", "oomd"));
}

TEST(ConfigDefaultTest, TheCollectorsItIsToldAreTheOnesItKnows) {
  // Names the configuration is told, not a list of its own: any set of them parses.
  const std::vector<std::string> names = {"gpu", "net"};
  absl::StatusOr<Config> config = ParseConfig("collectors:\n  net: false\n", "cfg.yaml", names);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->collectors, ElementsAre(Pair("gpu", true), Pair("net", false)));
  EXPECT_THAT(ParseConfig("collectors:\n  oom: false\n", "cfg.yaml", names).status().message(),
              HasSubstr("cfg.yaml:2:3: unknown collector \"oom\" (known collectors: gpu, net)"));
}

TEST(ConfigParseTest, EmptyDocumentsGiveDefaults) {
  for (std::string_view yaml : {"", "# only a comment\n", "---\n", "web:\nstages:\n"}) {
    const absl::StatusOr<Config> config = Parse(yaml);
    ASSERT_TRUE(config.ok()) << yaml << ": " << config.status();
    EXPECT_EQ(config->web.listen_address, ":9617");
    EXPECT_EQ(config->cgroup.cache_max_entries, 65536);
    EXPECT_EQ(config->discovery.max_stages, 32);
    EXPECT_THAT(config->collectors, ElementsAre(Pair("memory", true), Pair("oom", true),
                                                Pair("placement", true), Pair("sched", true)));
    EXPECT_EQ(config->oom.userspace_killers.size(), 3u);
  }
}

TEST(ConfigParseTest, FullValidConfig) {
  const absl::StatusOr<Config> config = Parse(R"(
web:
  listen_address: "[::1]:9700"
  telemetry_path: /stagewatch/metrics
log: {level: debug, format: json}
cgroup:
  lifecycle_events: false
  rescan_min_interval: 1.5s
  cache_max_entries: 16
discovery:
  enabled: false
  directory: sw.stages
  pipeline: batch
  max_stages: 0
stages:
  - name: train
    pipeline: nightly
    cgroup_paths: ["/research.slice/**/train", "/k8s/*/train-[0-9]"]
    systemd_units: ["train-*.service"]
  - name: _etl.v2-x
    systemd_units: [etl.service]
collectors:
  oom: false
oom:
  userspace_killers: [my-oom-killer, abcdefghijklmno]
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->web.listen_address, "[::1]:9700");
  EXPECT_EQ(config->web.telemetry_path, "/stagewatch/metrics");
  EXPECT_EQ(config->log.level, "debug");
  EXPECT_EQ(config->log.format, "json");
  EXPECT_EQ(config->cgroup.rescan_min_interval, absl::Milliseconds(1500));
  EXPECT_EQ(config->cgroup.cache_max_entries, 16);
  EXPECT_FALSE(config->cgroup.lifecycle_events);
  EXPECT_FALSE(config->discovery.enabled);
  EXPECT_EQ(config->discovery.directory, "sw.stages");
  EXPECT_EQ(config->discovery.pipeline, "batch");
  EXPECT_EQ(config->discovery.max_stages, 0);
  ASSERT_EQ(config->stages.size(), 2u);
  const StageConfig& train = config->stages[0];
  EXPECT_EQ(train.name, "train");
  EXPECT_EQ(train.pipeline, "nightly");
  EXPECT_THAT(train.cgroup_paths, ElementsAre("/research.slice/**/train", "/k8s/*/train-[0-9]"));
  EXPECT_THAT(train.systemd_units, ElementsAre("train-*.service"));
  EXPECT_EQ(train.line, 15);
  const StageConfig& etl = config->stages[1];
  EXPECT_EQ(etl.name, "_etl.v2-x");
  EXPECT_EQ(etl.pipeline, "");
  EXPECT_TRUE(etl.cgroup_paths.empty());
  EXPECT_THAT(etl.systemd_units, ElementsAre("etl.service"));
  EXPECT_EQ(etl.line, 19);
  EXPECT_THAT(config->collectors, ElementsAre(Pair("memory", true), Pair("oom", false),
                                              Pair("placement", true), Pair("sched", true)));
  EXPECT_THAT(config->oom.userspace_killers, ElementsAre("my-oom-killer", "abcdefghijklmno"));
}

TEST(ConfigParseTest, PartialSectionsKeepOtherDefaults) {
  const absl::StatusOr<Config> config = Parse("web:\n  telemetry_path: /m\noom:\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->web.listen_address, ":9617");
  EXPECT_EQ(config->web.telemetry_path, "/m");
  EXPECT_THAT(config->oom.userspace_killers, ElementsAre("systemd-oomd", "earlyoom", "oomd"));
  EXPECT_THAT(config->collectors, ElementsAre(Pair("memory", true), Pair("oom", true),
                                              Pair("placement", true), Pair("sched", true)));
}

TEST(ConfigParseTest, ListenAddressForms) {
  for (std::string_view good : {":9617", "0.0.0.0:9617", "localhost:0", "[::]:65535",
                                "[fe80::1%eth0]:80"}) {
    const absl::StatusOr<Config> config =
        Parse("web:\n  listen_address: \"" + std::string(good) + "\"\n");
    EXPECT_TRUE(config.ok()) << good << ": " << config.status();
  }
  EXPECT_THAT(ErrorOf("web:\n  listen_address: \"9617\"\n"),
              StartsWith("cfg.yaml:2:19: listen address \"9617\" must be host:port, :port or "
                         "[ipv6]:port"));
  EXPECT_THAT(ErrorOf("web:\n  listen_address: \"host:65536\"\n"),
              HasSubstr("cfg.yaml:2:19: port \"65536\" in listen address \"host:65536\" must be "
                        "a number from 0 to 65535"));
  EXPECT_THAT(ErrorOf("web:\n  listen_address: \"host:\"\n"), HasSubstr("cfg.yaml:2:19: port"));
  EXPECT_THAT(ErrorOf("web:\n  listen_address: \"host:http\"\n"), HasSubstr("port \"http\""));
  EXPECT_THAT(ErrorOf("web:\n  listen_address: \"::1:9617\"\n"),
              HasSubstr("put an IPv6 address in brackets"));
  EXPECT_THAT(ErrorOf("web:\n  listen_address: \"[]:1\"\n"), HasSubstr("must be host:port"));
}

TEST(ConfigErrorTest, UnknownKeySuggestsClosest) {
  EXPECT_EQ(ErrorOf(R"(
web:
  listen_adress: ":1"
)"),
            "cfg.yaml:2:3: unknown key \"listen_adress\" in web; did you mean "
            "\"listen_address\"? (allowed: listen_address, telemetry_path)");
}

TEST(ConfigErrorTest, UnknownKeyWithoutCloseMatchListsAllowed) {
  const std::string error = ErrorOf("\nweb: {}\nprometheus: {}\n");
  EXPECT_THAT(error, StartsWith("cfg.yaml:2:1: unknown key \"prometheus\" at top level"));
  EXPECT_THAT(error, Not(HasSubstr("did you mean")));
  EXPECT_THAT(error,
              HasSubstr("(allowed: web, log, cgroup, discovery, stages, collectors, oom, memory, "
                        "anomalies, alerting, runs, pipelines)"));
}

TEST(ConfigErrorTest, UnknownKeysAtEveryLevel) {
  EXPECT_THAT(ErrorOf("log:\n  levle: info\n"),
              HasSubstr("cfg.yaml:2:3: unknown key \"levle\" in log; did you mean \"level\"?"));
  EXPECT_THAT(ErrorOf("cgroup:\n  roots: /x\n"), HasSubstr("cfg.yaml:2:3: unknown key \"roots\""));
  EXPECT_THAT(ErrorOf("discovery:\n  enable: true\n"), HasSubstr("did you mean \"enabled\"?"));
  EXPECT_THAT(ErrorOf("oom:\n  killers: []\n"), HasSubstr("in oom"));
  EXPECT_THAT(ErrorOf("stages:\n  - name: a\n    cgroup_path: [/a]\n"),
              HasSubstr("cfg.yaml:3:5: unknown key \"cgroup_path\" in stage \"a\"; did you mean "
                        "\"cgroup_paths\"?"));
  EXPECT_THAT(ErrorOf("stagse: []\n"), HasSubstr("did you mean \"stages\"?"));
}

TEST(ConfigErrorTest, DuplicateKey) {
  EXPECT_THAT(ErrorOf("web:\n  telemetry_path: /a\n  telemetry_path: /b\n"),
              HasSubstr("cfg.yaml:3:3: key \"telemetry_path\" in web is set twice"));
}

TEST(ConfigErrorTest, WrongTypes) {
  EXPECT_THAT(ErrorOf("stages:\n  name: train\n"),
              HasSubstr("cfg.yaml:2:3: stages must be a list"));
  EXPECT_THAT(ErrorOf("web: [a, b]\n"), HasSubstr("cfg.yaml:1:6: web must be a map of keys"));
  EXPECT_THAT(ErrorOf("- a\n- b\n"), HasSubstr("cfg.yaml:1:1: the configuration must be a map"));
  EXPECT_THAT(ErrorOf("web:\n  telemetry_path: {a: 1}\n"),
              HasSubstr("cfg.yaml:2:19: web.telemetry_path must be a string"));
  EXPECT_THAT(ErrorOf("web:\n  telemetry_path:\n"),
              HasSubstr("cfg.yaml:2:3: web.telemetry_path must be a string"));
  EXPECT_THAT(ErrorOf("oom:\n  userspace_killers: oomd\n"),
              HasSubstr("cfg.yaml:2:22: oom.userspace_killers must be a list of strings"));
  EXPECT_THAT(ErrorOf("oom:\n  userspace_killers: [[a]]\n"),
              HasSubstr("cfg.yaml:2:23: each entry of oom.userspace_killers must be a string"));
  EXPECT_THAT(ErrorOf("stages:\n  - train\n"), HasSubstr("cfg.yaml:2:5: stages[0] must be a map"));
}

TEST(ConfigErrorTest, BooleansMustBeBooleans) {
  EXPECT_THAT(ErrorOf("collectors:\n  oom: maybe\n"),
              HasSubstr("cfg.yaml:2:8: collectors.oom must be true or false"));
  EXPECT_THAT(ErrorOf("collectors:\n  oom: \"true\"\n"),
              HasSubstr("collectors.oom must be true or false"));
  EXPECT_THAT(ErrorOf("discovery:\n  enabled: 1\n"),
              HasSubstr("cfg.yaml:2:12: discovery.enabled must be true or false"));
}

TEST(ConfigErrorTest, UnknownCollectorListsKnownOnes) {
  EXPECT_THAT(ErrorOf("collectors:\n  oom: true\n  gpu: false\n"),
              HasSubstr("cfg.yaml:3:3: unknown collector \"gpu\" (known collectors: oom, sched, "
                        "placement, memory)"));
  EXPECT_THAT(ErrorOf("collectors:\n  om: true\n"),
              HasSubstr("unknown collector \"om\"; did you mean \"oom\"?"));
}

TEST(ConfigErrorTest, StageNames) {
  EXPECT_THAT(ErrorOf("stages:\n  - name: \"\"\n    cgroup_paths: [/a]\n"),
              HasSubstr("cfg.yaml:2:11: stage name must not be empty"));
  EXPECT_THAT(ErrorOf("stages:\n  - name: unattributed\n    cgroup_paths: [/a]\n"),
              HasSubstr("cfg.yaml:2:11: stage name \"unattributed\" is reserved"));
  EXPECT_THAT(ErrorOf("stages:\n  - name: 9lives\n    cgroup_paths: [/a]\n"),
              HasSubstr("cfg.yaml:2:11: stage name \"9lives\" is not valid; use letters"));
  EXPECT_THAT(ErrorOf("stages:\n  - name: a b\n    cgroup_paths: [/a]\n"),
              HasSubstr("stage name \"a b\" is not valid"));
  EXPECT_THAT(ErrorOf("stages:\n  - cgroup_paths: [/a]\n"),
              HasSubstr("cfg.yaml:2:5: stages[0] has no name"));
}

TEST(ConfigErrorTest, DuplicateStageName) {
  EXPECT_EQ(ErrorOf(R"(
stages:
  - name: train
    cgroup_paths: [/a]
  - name: train
    systemd_units: [b.service]
)"),
            "cfg.yaml:4:11: duplicate stage name \"train\"; the stage at line 2 has it already");
}

TEST(ConfigErrorTest, StageWithoutMatcher) {
  EXPECT_THAT(ErrorOf("stages:\n  - name: train\n    pipeline: p\n"),
              HasSubstr("cfg.yaml:2:5: stage \"train\" has no matcher"));
  EXPECT_THAT(ErrorOf("stages:\n  - name: train\n    cgroup_paths: []\n    systemd_units: []\n"),
              HasSubstr("give it cgroup_paths or systemd_units"));
}

TEST(ConfigErrorTest, StageGlobs) {
  EXPECT_THAT(ErrorOf("stages:\n  - name: t\n    cgroup_paths: [\"/a/[bc\"]\n"),
              HasSubstr("cfg.yaml:3:20: invalid glob in stage \"t\": "));
  EXPECT_THAT(ErrorOf("stages:\n  - name: t\n    cgroup_paths: [\"/a/x**/b\"]\n"),
              HasSubstr("cfg.yaml:3:20: invalid glob in stage \"t\""));
  EXPECT_THAT(ErrorOf("stages:\n  - name: t\n    cgroup_paths: [train]\n"),
              HasSubstr("cfg.yaml:3:20: cgroup path glob \"train\" in stage \"t\" must start "
                        "with \"/\""));
  EXPECT_THAT(ErrorOf("stages:\n  - name: t\n    systemd_units: [\"sys/train.service\"]\n"),
              HasSubstr("cfg.yaml:3:21: systemd unit glob \"sys/train.service\" in stage \"t\" "
                        "must be non-empty and without \"/\""));
  EXPECT_THAT(ErrorOf("stages:\n  - name: t\n    systemd_units: [\"a[.service\"]\n"),
              HasSubstr("cfg.yaml:3:21: invalid glob in stage \"t\""));
}

TEST(ConfigErrorTest, WebPaths) {
  EXPECT_THAT(ErrorOf("web:\n  telemetry_path: metrics\n"),
              HasSubstr("cfg.yaml:2:19: telemetry path \"metrics\" must start with \"/\""));
  EXPECT_THAT(ErrorOf("web:\n  telemetry_path: /\n"), HasSubstr("must not be \"/\""));
}

TEST(ConfigErrorTest, LogSettings) {
  EXPECT_EQ(ErrorOf("log:\n  level: verbose\n"),
            "cfg.yaml:2:10: unknown log level \"verbose\"; use one of debug, info, warn, error");
  EXPECT_EQ(ErrorOf("log:\n  format: text\n"),
            "cfg.yaml:2:11: unknown log format \"text\"; use one of logfmt, json");
}

// cgroup.root was accepted but never read (mount points come from /proc/self/mountinfo), so it
// is refused, at its position, with what to do; a typo near it is not steered back to it.
TEST(ConfigErrorTest, CgroupRootIsRefusedWithWhatToDo) {
  for (const char* root : {"/sys/fs/cgroup", "/mnt/cgroup", "relative"}) {
    const std::string error = ErrorOf(absl::StrCat("cgroup:\n  root: ", root, "\n"));
    EXPECT_THAT(error, StartsWith("cfg.yaml:2:9: cgroup.root is not supported: stagewatch finds "
                                  "every cgroup filesystem in /proc/self/mountinfo"));
    EXPECT_THAT(error, HasSubstr("delete the key"));
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;  // one line, one problem
  }
  const std::string typo = ErrorOf("cgroup:\n  rot: /x\n");
  EXPECT_THAT(typo, HasSubstr("cfg.yaml:2:3: unknown key \"rot\" in cgroup (allowed: "
                              "rescan_min_interval, cache_max_entries, lifecycle_events)"));
  EXPECT_THAT(typo, Not(HasSubstr("root")));
}

TEST(ConfigErrorTest, CgroupSettings) {
  EXPECT_THAT(ErrorOf("cgroup:\n  rescan_min_interval: fast\n"),
              HasSubstr("cfg.yaml:2:24: cgroup.rescan_min_interval \"fast\" is not a duration; "
                        "write e.g. 200ms, 1m30s, 24h or 7d"));
  EXPECT_THAT(ErrorOf("cgroup:\n  rescan_min_interval: 200\n"), HasSubstr("is not a duration"));
  EXPECT_THAT(ErrorOf("cgroup:\n  rescan_min_interval: -1s\n"),
              HasSubstr("cgroup.rescan_min_interval must not be negative"));
  EXPECT_THAT(ErrorOf("cgroup:\n  cache_max_entries: 15\n"),
              HasSubstr("cfg.yaml:2:22: cgroup.cache_max_entries must be at least 16 (got 15)"));
  EXPECT_THAT(ErrorOf("cgroup:\n  cache_max_entries: lots\n"),
              HasSubstr("cgroup.cache_max_entries must be an integer"));
  EXPECT_THAT(ErrorOf("cgroup:\n  cache_max_entries: 99999999999\n"),
              HasSubstr("cgroup.cache_max_entries must be at least 16"));
  const absl::StatusOr<Config> zero = Parse("cgroup:\n  rescan_min_interval: 0s\n");
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ(zero->cgroup.rescan_min_interval, absl::ZeroDuration());
}

TEST(ConfigErrorTest, DiscoverySettings) {
  EXPECT_THAT(ErrorOf("discovery:\n  max_stages: 1001\n"),
              HasSubstr("cfg.yaml:2:15: discovery.max_stages must be between 0 and 1000 "
                        "(got 1001)"));
  EXPECT_THAT(ErrorOf("discovery:\n  max_stages: -1\n"), HasSubstr("between 0 and 1000"));
  EXPECT_THAT(ErrorOf("discovery:\n  directory: \"\"\n"),
              HasSubstr("cfg.yaml:2:14: discovery directory \"\" must be one directory name"));
  EXPECT_THAT(ErrorOf("discovery:\n  directory: a/b\n"),
              HasSubstr("discovery directory \"a/b\" must be one directory name"));
}

TEST(ConfigErrorTest, ForgetAfterMustBeANonNegativeDuration) {
  EXPECT_EQ(ErrorOf("discovery:\n  forget_after: -5m\n"),
            "cfg.yaml:2:17: discovery.forget_after must not be negative (got \"-5m\")");
  EXPECT_EQ(ErrorOf("discovery:\n  forget_after: soon\n"),
            "cfg.yaml:2:17: discovery.forget_after \"soon\" is not a duration; write e.g. "
            "200ms, 1m30s, 24h or 7d");
  EXPECT_THAT(ErrorOf("discovery:\n  forget_after: 15\n"), HasSubstr("is not a duration"));
  // Days as `runs list --since 7d` takes them: one duration syntax everywhere.
  const absl::StatusOr<Config> day = Parse("discovery:\n  forget_after: 1d\n");
  ASSERT_TRUE(day.ok()) << day.status();
  EXPECT_EQ(day->discovery.forget_after, absl::Hours(24));
  const absl::StatusOr<Config> never = Parse("discovery:\n  forget_after: 0s\n");
  ASSERT_TRUE(never.ok()) << never.status();
  EXPECT_EQ(never->discovery.forget_after, absl::ZeroDuration());
  const absl::StatusOr<Config> soon = Parse("discovery:\n  forget_after: 90s\n");
  ASSERT_TRUE(soon.ok()) << soon.status();
  EXPECT_EQ(soon->discovery.forget_after, absl::Seconds(90));
}

// Every duration key of the configuration, as its dotted path.
constexpr const char* kDurationKeys[] = {
    "cgroup.rescan_min_interval", "discovery.forget_after", "memory.sample_interval",
    "alerting.timeout", "alerting.resend_interval", "anomalies.memory_climb.window",
    "anomalies.memory_climb.warmup", "anomalies.limit_eta.window", "anomalies.limit_eta.warmup",
    "anomalies.limit_eta.min_span", "anomalies.limit_eta.threshold",
    "anomalies.pressure_spike.window", "anomalies.pressure_spike.sustain",
    "anomalies.fault_storm.window", "anomalies.fault_storm.warmup",
    "anomalies.cpu_starvation.window", "anomalies.cpu_starvation.warmup", "anomalies.oom_kill.hold",
    "anomalies.memory_climb.baseline_half_life", "anomalies.memory_climb.clear_hold",
    "anomalies.limit_eta.clear_hold", "anomalies.fault_storm.baseline_half_life",
    "anomalies.fault_storm.clear_hold", "anomalies.cpu_starvation.baseline_half_life",
    "anomalies.cpu_starvation.clear_hold", "anomalies.limit_eta.short_warmup",
};

// `path: value` as nested YAML mappings; the value's line is the last, at column 2 × depth + 1.
std::string NestedYaml(const std::string& path, const std::string& value) {
  std::string yaml, indent;
  const std::vector<std::string> keys = absl::StrSplit(path, '.');
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::StrAppend(&yaml, indent, keys[i], ":", i + 1 == keys.size() ? " " + value : "", "\n");
    indent += "  ";
  }
  return yaml;
}

// Where NestedYaml puts the value of `path`: "cfg.yaml:<line>:<column>".
std::string ValuePosition(const std::string& path) {
  const std::vector<std::string> keys = absl::StrSplit(path, '.');
  const size_t depth = keys.size() - 1;
  return absl::StrCat("cfg.yaml:", keys.size(), ":", 2 * depth + keys.back().size() + 3);
}

// No duration is infinite, not a number or negative, whichever key it is for: each is refused
// with the key's name and position and what to write instead.
TEST(ConfigErrorTest, EveryDurationKeyRefusesInfiniteNanAndNegative) {
  for (const char* key : kDurationKeys) {
    for (const char* text : {"inf", "+inf", "nan", "infinite"}) {
      EXPECT_THAT(ErrorOf(NestedYaml(key, text)),
                  HasSubstr(absl::StrCat(ValuePosition(key), ": ", key, " \"", text,
                                         "\" is not a duration; write e.g.")))
          << key << ": " << text;
    }
    for (const char* text : {"-inf", "-1s", "-1ns"}) {
      EXPECT_THAT(ErrorOf(NestedYaml(key, text)),
                  HasSubstr(absl::StrCat(ValuePosition(key), ": ", key,
                                         " must not be negative (got \"", text, "\")")))
          << key << ": " << text;
    }
  }
}

// The list above is every duration key: each key that agent/config/ reads with ReadDuration
// is the leaf of one listed.
TEST(ConfigErrorTest, TheDurationKeysListedAreEveryDurationKey) {
  std::set<std::string> listed;
  for (const char* key : kDurationKeys) {
    const std::vector<std::string> keys = absl::StrSplit(key, '.');
    listed.insert(keys.back());
  }
  // {"key", [&](const ConfigValue& v) { ... r.ReadDuration(v, ...
  const std::regex read(
      R"re(\{"(\w+)",\s*\[&\]\(const ConfigValue& \w+\) \{\s*r\.ReadDuration\()re");
  int found = 0;
  for (const std::string& file : testing::SourceFiles("agent/config")) {
    const std::string text = testing::SourceText(file);
    for (std::sregex_iterator it(text.begin(), text.end(), read), end; it != end; ++it) {
      ++found;
      EXPECT_TRUE(listed.contains((*it)[1].str())) << file << ": " << (*it)[1].str();
    }
  }
  EXPECT_EQ(found, 22);  // call sites; anomalies' rate baselines share theirs
}

TEST(ConfigErrorTest, LifecycleEventsIsABoolean) {
  EXPECT_THAT(ErrorOf("cgroup:\n  lifecycle_events: maybe\n"), HasSubstr("cfg.yaml:2:21"));
  const absl::StatusOr<Config> walks = Parse("cgroup:\n  lifecycle_events: false\n");
  ASSERT_TRUE(walks.ok()) << walks.status();
  EXPECT_FALSE(walks->cgroup.lifecycle_events);
}

TEST(ConfigErrorTest, UserspaceKillers) {
  EXPECT_THAT(ErrorOf("oom:\n  userspace_killers: [oomd, \"\"]\n"),
              HasSubstr("cfg.yaml:2:29: oom.userspace_killers entries must not be empty"));
  EXPECT_THAT(ErrorOf("oom:\n  userspace_killers: [abcdefghijklmnop]\n"),
              HasSubstr("cfg.yaml:2:23: oom.userspace_killers entry \"abcdefghijklmnop\" is 16 "
                        "characters; the kernel keeps only the first 15 characters of a process "
                        "name (comm)"));
}

TEST(ConfigErrorTest, AllErrorsReportedTogetherInOrder) {
  const std::vector<std::string> lines = ErrorLines(R"(
web:
  listen_address: nope
log:
  level: loud
stages:
  - name: unattributed
    cgroup_paths: [relative]
collectors:
  bogus: true
)");
  ASSERT_EQ(lines.size(), 5u) << absl::StrJoin(lines, "\n");
  EXPECT_THAT(lines[0], StartsWith("cfg.yaml:2:19: listen address \"nope\""));
  EXPECT_THAT(lines[1], StartsWith("cfg.yaml:4:10: unknown log level \"loud\""));
  EXPECT_THAT(lines[2], StartsWith("cfg.yaml:6:11: stage name \"unattributed\" is reserved"));
  EXPECT_THAT(lines[3], StartsWith("cfg.yaml:7:20: cgroup path glob \"relative\""));
  EXPECT_THAT(lines[4], StartsWith("cfg.yaml:9:3: unknown collector \"bogus\""));
}

TEST(ConfigErrorTest, SyntaxErrorHasPosition) {
  const std::string error = ErrorOf(R"(
web:
  listen_address: ":9617"
stages: [a, b
log:
  level: info
)");
  EXPECT_THAT(error, StartsWith("cfg.yaml:"));
  EXPECT_THAT(error, HasSubstr("end of sequence flow not found"));
  // The unclosed flow list opened on line 3; yaml-cpp notices it at or after that line.
  const int line = std::stoi(error.substr(std::string("cfg.yaml:").size()));
  EXPECT_GE(line, 3);
  EXPECT_LE(line, 6);
  EXPECT_EQ(ErrorOf("web:\n  a: 1\n   b: 2\n"), "cfg.yaml:3:5: illegal map value");
}

TEST(ConfigErrorTest, MoreThanOneDocument) {
  EXPECT_THAT(ErrorOf("web: {}\n---\nlog: {}\n"),
              HasSubstr("expected one YAML document, found more"));
}

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/stagewatch_config_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
  }
  void TearDown() override {
    for (const std::string& file : files_) std::remove(file.c_str());
    rmdir(dir_.c_str());
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }
  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(ConfigFileTest, MissingFile) {
  const std::string path = dir_ + "/absent.yaml";
  const absl::StatusOr<Config> config = LoadConfigFile(path, CollectorFlagNames());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(config.status().message(),
            "cannot read config file \"" + path + "\": No such file or directory");
}

TEST_F(ConfigFileTest, DirectoryIsNotAFile) {
  const absl::StatusOr<Config> config = LoadConfigFile(dir_, CollectorFlagNames());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("is a directory"));
}

TEST_F(ConfigFileTest, LoadsAndNamesTheFileInErrors) {
  const std::string good = Write("good.yaml", "web:\n  listen_address: \":9000\"\n");
  const absl::StatusOr<Config> config = LoadConfigFile(good, CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->web.listen_address, ":9000");

  const std::string bad = Write("bad.yaml", "\n\nlog:\n  level: loud\n");
  const absl::StatusOr<Config> failed = LoadConfigFile(bad, CollectorFlagNames());
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()), StartsWith(bad + ":4:10: unknown log level"));
}

}  // namespace
}  // namespace stagewatch

namespace stagewatch {
namespace {

TEST(ConfigMemoryTest, NearLimitFractionAndSampleInterval) {
  absl::StatusOr<Config> config =
      Parse("memory:\n  near_limit_fraction: 0.8\n  sample_interval: 500ms\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_DOUBLE_EQ(config->memory.near_limit_fraction, 0.8);
  EXPECT_EQ(config->memory.sample_interval, absl::Milliseconds(500));

  absl::StatusOr<Config> bad =
      Parse("memory:\n  near_limit_fraction: 1.5\n  sample_interval: 10ms\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("cfg.yaml:2:24: memory.near_limit_fraction must be a number above 0"));
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("cfg.yaml:3:20: memory.sample_interval must be at least 100ms"));
}

TEST(ConfigMemoryTest, MaxLimitDomainsIsABoundedCount) {
  EXPECT_EQ(Parse("")->memory.max_limit_domains, 256);
  absl::StatusOr<Config> config = Parse("memory:\n  max_limit_domains: 8\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->memory.max_limit_domains, 8);
  absl::StatusOr<Config> bad = Parse("memory:\n  max_limit_domains: 0\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("memory.max_limit_domains must be between 1 and 100000 (got 0)"));
}

TEST(ConfigMemoryTest, TaskIteratorIsOnByDefaultAndABoolean) {
  EXPECT_TRUE(Parse("")->memory.task_iterator);
  absl::StatusOr<Config> off = Parse("memory:\n  task_iterator: false\n");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->memory.task_iterator);
  absl::StatusOr<Config> bad = Parse("memory:\n  task_iterator: sometimes\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("cfg.yaml:2:18"));
}

TEST(ConfigMemoryTest, FaultSourceIsAutoByDefaultAndOneOfThree) {
  EXPECT_EQ(Parse("")->memory.fault_source, PageFaultSource::kAuto);
  for (auto [text, source] : {std::pair{"auto", PageFaultSource::kAuto},
                              std::pair{"memcg", PageFaultSource::kMemcg},
                              std::pair{"bpf", PageFaultSource::kBpf}}) {
    absl::StatusOr<Config> c = Parse(std::string("memory:\n  fault_source: ") + text + "\n");
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->memory.fault_source, source);
    EXPECT_EQ(PageFaultSourceName(source), text);
  }
  absl::StatusOr<Config> bad = Parse("memory:\n  fault_source: ebpf\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("cfg.yaml:2:17: memory.fault_source: unknown page fault "
                                   "source \"ebpf\"; use auto"));
}

}  // namespace
}  // namespace stagewatch

namespace stagewatch {
namespace {

TEST(ConfigAnomaliesTest, DetectorSettingsAndAlerting) {
  absl::StatusOr<Config> config = ParseConfig(
      "anomalies:\n"
      "  memory_climb: {warmup: 5s, window: 10s, k: 4, min_growth_bytes: 1048576}\n"
      "  limit_eta: {threshold: 5m, min_span: 10s}\n"
      "  fault_storm: {enabled: false}\n"
      "  cpu_starvation: {min_level: 0.1}\n"
      "  oom_kill: {hold: 1m}\n"
      "alerting:\n"
      "  alertmanagers: [\"http://am-1:9093\", \"http://am-2:9093\"]\n"
      "  basic_auth: {username: pager, password: secret}\n"
      "  timeout: 2s\n",
      "cfg.yaml", CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->anomalies.memory_climb.warmup, absl::Seconds(5));
  EXPECT_EQ(config->anomalies.memory_climb.window, absl::Seconds(10));
  EXPECT_DOUBLE_EQ(config->anomalies.memory_climb.k, 4);
  EXPECT_DOUBLE_EQ(config->anomalies.memory_climb.min_growth_bytes, 1048576);
  EXPECT_EQ(config->anomalies.limit_eta.threshold, absl::Minutes(5));
  EXPECT_EQ(config->anomalies.limit_eta.min_span, absl::Seconds(10));
  EXPECT_FALSE(config->anomalies.fault_storm.enabled);
  EXPECT_DOUBLE_EQ(config->anomalies.cpu_starvation.min_level, 0.1);
  EXPECT_EQ(config->anomalies.oom_kill_hold, absl::Minutes(1));
  EXPECT_THAT(config->alerting.alertmanagers, ElementsAre("http://am-1:9093", "http://am-2:9093"));
  EXPECT_EQ(config->alerting.basic_auth_username, "pager");
  EXPECT_EQ(config->alerting.timeout, absl::Seconds(2));
}

TEST(ConfigAlertingTest, LabelsEveryPageCarriesAndTheRunbookBase) {
  absl::StatusOr<Config> config = ParseConfig(
      "alerting:\n"
      "  runbook_url_base: https://wiki.example.org/runbooks/\n"
      "  labels: {instance: node-7, cluster: eu-1}\n",
      "cfg.yaml", CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->alerting.runbook_url_base, "https://wiki.example.org/runbooks");
  EXPECT_EQ(config->alerting.labels, (std::map<std::string, std::string>{
                                         {"cluster", "eu-1"}, {"instance", "node-7"}}));

  absl::StatusOr<Config> bad = ParseConfig(
      "alerting:\n  labels:\n    node-name: x\n    __meta: y\n    alertname: z\n"
      "    team: [a]\n",
      "cfg.yaml", CollectorFlagNames());
  ASSERT_FALSE(bad.ok());
  const std::string message(bad.status().message());
  EXPECT_THAT(message, HasSubstr("cfg.yaml:3:5: alerting.labels: label name \"node-name\" is "
                                 "not valid"));
  EXPECT_THAT(message, HasSubstr("cfg.yaml:4:5: alerting.labels: label name \"__meta\" is "
                                 "reserved"));
  EXPECT_THAT(message, HasSubstr("cfg.yaml:5:5: alerting.labels: alertname is each page's own"));
  EXPECT_THAT(message, HasSubstr("alerting.labels.team must be a string"));
  EXPECT_THAT(ParseConfig("alerting:\n  labels: [a]\n", "cfg.yaml", CollectorFlagNames())
                  .status().message(),
              HasSubstr("alerting.labels must be a map"));
}

// The agent's pages and the rules' must link the same runbooks: their defaults agree.
TEST(ConfigAlertingTest, DefaultRunbookBaseIsTheRulesOne) {
  std::ifstream file(STAGEWATCH_SOURCE_DIR "/alerts/config.yaml");
  const std::string rules_config((std::istreambuf_iterator<char>(file)), {});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(rules_config, m, std::regex(R"re(\nrunbook_url_base: (\S+))re")));
  absl::StatusOr<Config> config = ParseConfig("", "cfg.yaml", CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->alerting.runbook_url_base, m[1].str());
}

TEST(ConfigAnomaliesTest, BadValuesNameTheKey) {
  absl::StatusOr<Config> bad = ParseConfig(
      "anomalies:\n  memory_climb: {k: -1}\n  limit_eta: {treshold: 5m}\n"
      "alerting:\n  alertmanagers: [am-1:9093]\n",
      "cfg.yaml", CollectorFlagNames());
  ASSERT_FALSE(bad.ok());
  const std::string message(bad.status().message());
  EXPECT_THAT(message, HasSubstr("memory_climb.k must be a number, 0 or more"));
  EXPECT_THAT(message, HasSubstr("did you mean \"threshold\"?"));
  EXPECT_THAT(message, HasSubstr("alertmanager URL \"am-1:9093\": no scheme"));
}

// The keys docs/detectors.md documents besides the common ones, each read into its field.
TEST(ConfigAnomaliesTest, EveryDetectorFieldIsSettable) {
  absl::StatusOr<Config> config = ParseConfig(
      "anomalies:\n"
      "  memory_climb: {baseline_half_life: 20m, clear_hold: 1m}\n"
      "  limit_eta: {min_points: 20, max_release_fraction: 0.1, min_recent_growth_ratio: 0.25,\n"
      "              clear_hold: 45s}\n"
      "  pressure_spike: {clear_ratio: 0.8}\n"
      "  fault_storm: {baseline_half_life: 1h, trim_fraction: 0, clear_hold: 10s}\n"
      "  cpu_starvation: {baseline_half_life: 1d, clear_hold: 2m}\n",
      "cfg.yaml", CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  const AnomalyConfig& a = config->anomalies;
  EXPECT_EQ(a.memory_climb.baseline_half_life, absl::Minutes(20));
  EXPECT_EQ(a.memory_climb.clear_hold, absl::Minutes(1));
  EXPECT_EQ(a.limit_eta.min_points, 20u);
  EXPECT_DOUBLE_EQ(a.limit_eta.max_release_fraction, 0.1);
  EXPECT_DOUBLE_EQ(a.limit_eta.min_recent_growth_ratio, 0.25);
  EXPECT_EQ(a.limit_eta.clear_hold, absl::Seconds(45));
  EXPECT_DOUBLE_EQ(a.pressure_spike.clear_ratio, 0.8);
  EXPECT_EQ(a.fault_storm.baseline_half_life, absl::Hours(1));
  EXPECT_DOUBLE_EQ(a.fault_storm.trim_fraction, 0);
  EXPECT_EQ(a.fault_storm.clear_hold, absl::Seconds(10));
  EXPECT_EQ(a.cpu_starvation.baseline_half_life, absl::Hours(24));
  EXPECT_EQ(a.cpu_starvation.clear_hold, absl::Minutes(2));
}

TEST(ConfigAnomaliesTest, DetectorFieldsAreValidatedWithTheirPosition) {
  const absl::StatusOr<Config> bad = ParseConfig(
      "anomalies:\n"
      "  memory_climb: {baseline_half_life: 0s}\n"
      "  limit_eta: {min_points: 1, max_release_fraction: 0, min_recent_growth_ratio: -1}\n"
      "  pressure_spike: {clear_ratio: 1.5}\n"
      "  fault_storm: {trim_fraction: 1, clear_hold: -1s}\n"
      "  cpu_starvation: {trim_fraction: 0.1}\n",
      "cfg.yaml", CollectorFlagNames());
  ASSERT_FALSE(bad.ok());
  const std::string message(bad.status().message());
  EXPECT_THAT(message, HasSubstr("cfg.yaml:2:38: anomalies.memory_climb.baseline_half_life "
                                 "must be at least 1s (got \"0s\")"));
  EXPECT_THAT(message, HasSubstr("cfg.yaml:3:27: anomalies.limit_eta.min_points must be "
                                 "between 2 and 100000 (got 1)"));
  EXPECT_THAT(message, HasSubstr("anomalies.limit_eta.max_release_fraction must be a number "
                                 "above 0 and at most 1"));
  EXPECT_THAT(message, HasSubstr("anomalies.limit_eta.min_recent_growth_ratio must be a number, "
                                 "0 or more"));
  EXPECT_THAT(message, HasSubstr("cfg.yaml:4:33: anomalies.pressure_spike.clear_ratio must be"));
  EXPECT_THAT(message, HasSubstr("anomalies.fault_storm.trim_fraction must be a number from 0 "
                                 "up to (not including) 1"));
  EXPECT_THAT(message, HasSubstr("anomalies.fault_storm.clear_hold must not be negative"));
  // A gauge's median trims nothing: the key is not there to set.
  EXPECT_THAT(message, HasSubstr("cfg.yaml:6:20: unknown key \"trim_fraction\" in "
                                 "anomalies.cpu_starvation"));
}

}  // namespace
}  // namespace stagewatch
