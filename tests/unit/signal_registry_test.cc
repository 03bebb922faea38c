// The signal registry (agent/signals/) against the lists that must agree with it: the
// configuration's collector names, the default configuration, the probes' own names, and what
// each phase of the agent's start may use.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "app/collector_flags.h"
#include "cgroup/layout.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "signals/signal.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

TEST(SignalRegistryTest, NamesAreUniqueAndTheKnownOnesAreListed) {
  std::set<std::string> names;
  for (const Signal& s : Signals()) {
    EXPECT_FALSE(s.name.empty());
    EXPECT_TRUE(names.insert(std::string(s.name)).second) << "listed twice: " << s.name;
  }
  // The signals the agent had when the registry was made; one gone missing is a lost signal.
  for (const char* known : {"oom", "sched", "memory", "lifecycle", "runs"}) {
    EXPECT_EQ(names.count(known), 1u) << known;
  }
}

TEST(SignalRegistryTest, ConfigurationCollectorsAreTheSwitchableSignals) {
  absl::StatusOr<Config> config = DefaultConfig(CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  std::vector<std::string> defaulted;
  for (const auto& [name, on] : config->collectors) defaulted.push_back(name);
  std::vector<std::string> flagged = CollectorFlagNames();
  std::sort(flagged.begin(), flagged.end());
  EXPECT_THAT(defaulted, ElementsAreArray(flagged));
}

// Adding a switchable signal is its module alone: `collectors.<name>` in the YAML and the
// --collector.<name> / --no-collector.<name> flags come from the registry.
TEST(SignalRegistryTest, EverySwitchableSignalIsSwitchedByTheYamlAndByItsFlags) {
  int switchable = 0;
  for (const Signal& s : Signals()) {
    const std::string name(s.name);
    SCOPED_TRACE(name);
    const std::string off = "collectors:\n  " + name + ": false\n";
    absl::StatusOr<Config> yaml = ParseConfig(off, "cfg.yaml", CollectorFlagNames());
    if (!s.collector_flag) {
      EXPECT_THAT(yaml.status().message(),
                  HasSubstr("cfg.yaml:2:3: unknown collector \"" + name + "\""));
      continue;
    }
    switchable++;
    ASSERT_TRUE(yaml.ok()) << yaml.status();
    for (const auto& [other, on] : yaml->collectors) EXPECT_EQ(on, other != name) << other;

    // The flags over the file: --collector.<name> turns it back on, --no-collector.<name> off.
    for (const auto& [flag, want] : {std::pair("--collector." + name, true),
                                     std::pair("--no-collector." + name, false)}) {
      CLI::App app;
      CollectorFlags flags(app);
      ASSERT_NO_THROW(app.parse(flag, false)) << flag;
      Config config = want ? *yaml : *DefaultConfig(CollectorFlagNames());
      flags.ApplyTo(&config);
      for (const auto& [other, on] : config.collectors) {
        EXPECT_EQ(on, other == name ? want : true) << flag << " left " << other;
      }
    }
    // None given: the file's choice stands.
    CLI::App app;
    CollectorFlags flags(app);
    app.parse("", false);
    Config config = *yaml;
    flags.ApplyTo(&config);
    EXPECT_FALSE(config.collectors.at(name));
  }
  EXPECT_EQ(switchable, int(CollectorFlagNames().size()));
  EXPECT_GT(switchable, 0);
}

TEST(SignalRegistryTest, EverySignalStartsAndHasAProbeOrACollector) {
  for (const Signal& s : Signals()) {
    SCOPED_TRACE(std::string(s.name));
    EXPECT_NE(s.start, nullptr);
    EXPECT_EQ(s.try_probes == nullptr, s.not_started == nullptr)
        << "a probe needs both its trial and its not-started lines";
    EXPECT_TRUE(s.try_probes != nullptr || s.adds_collector) << "it would do nothing";
    // What collectors.<name> switches off is a collector, labelled collector="<name>".
    if (s.collector_flag) {
      EXPECT_TRUE(s.adds_collector);
    }
    // The first phase runs before the agent has a collector registry to add to.
    if (s.starts_first) {
      EXPECT_FALSE(s.adds_collector);
    }
  }
}

// A collector that collects nothing, under a given name.
class NamedCollector : public exporters::Collector {
 public:
  explicit NamedCollector(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  absl::Status Collect(std::vector<prometheus::MetricFamily>*) override {
    return absl::OkStatus();
  }

 private:
  std::string name_;
};

// The collector="<name>" labels a scrape of `registry` gives.
std::vector<std::string> CollectorLabels(exporters::CollectorRegistry& registry) {
  std::vector<std::string> labels;
  for (const prometheus::MetricFamily& f : registry.CollectAll()) {
    if (f.name != "stagewatch_scrape_collector_success") continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      for (const prometheus::ClientMetric::Label& l : m.label) {
        if (l.name == "collector") labels.push_back(l.value);
      }
    }
  }
  return labels;
}

// StartSignals is the one place a collector's name is held to its signal's: the signal's
// name is written once, in its module, and a collector under another name is said.
TEST(SignalRegistryTest, StartSignalsAddsEachCollectorAndSaysWhereOneIsNotNamedAfterItsSignal) {
  absl::StatusOr<Config> config = DefaultConfig(CollectorFlagNames());
  ASSERT_TRUE(config.ok()) << config.status();
  config->collectors["disk"] = true;
  const CgroupLayout layout;
  const KernelFeatures features;
  RunningSignals running;
  exporters::CollectorRegistry registry;
  const SignalContext ctx{.config = *config, .layout = layout, .features = features,
                          .collectors = &registry, .running = &running};
  using Made = std::unique_ptr<exporters::Collector>;
  const Signal disk{.name = "disk", .collector_flag = true,
                    .start = [](const SignalContext&) -> Made {
                      return std::make_unique<NamedCollector>("disk");
                    },
                    .adds_collector = true};
  const Signal net{.name = "net",
                   .start = [](const SignalContext&) -> Made {
                     return std::make_unique<NamedCollector>("network");
                   },
                   .adds_collector = true};
  const Signal quiet{.name = "quiet",
                     .start = [](const SignalContext&) -> Made {
                       return std::make_unique<NamedCollector>("quiet");
                     }};
  const Signal early{.name = "early", .starts_first = true,
                     .start = [](const SignalContext&) -> Made { return nullptr; }};

  EXPECT_TRUE(StartSignals({disk, early}, ctx, /*first=*/false).ok());
  EXPECT_TRUE(StartSignals({disk, early}, ctx, /*first=*/true).ok());  // early adds none
  EXPECT_THAT(CollectorLabels(registry), ElementsAreArray({"disk"}));

  const absl::Status misnamed = StartSignals({net}, ctx, /*first=*/false);
  EXPECT_THAT(misnamed.message(), HasSubstr("signal \"net\" made a collector named \"network\""));
  EXPECT_THAT(StartSignals({quiet}, ctx, false).message(), HasSubstr("signal \"quiet\""))
      << "it does not say it adds a collector";
  // Started and added all the same: the scrape still has their figures.
  EXPECT_THAT(CollectorLabels(registry), ElementsAreArray({"disk", "network", "quiet"}));

  // Switched off by collectors.disk: not started at all.
  Config off = *config;
  off.collectors["disk"] = false;
  exporters::CollectorRegistry none;
  const SignalContext ctx_off{.config = off, .layout = layout, .features = features,
                              .collectors = &none, .running = &running};
  EXPECT_TRUE(StartSignals({disk}, ctx_off, false).ok());
  EXPECT_THAT(CollectorLabels(none), IsEmpty());
}

TEST(SignalRegistryTest, EveryProbeHasItsOwnFeaturesLines) {
  std::set<std::string> probe_names;
  for (const Signal& s : Signals()) {
    if (!s.not_started) continue;
    SCOPED_TRACE(std::string(s.name));
    const std::vector<ProbeStatus> lines = s.not_started("no BTF here");
    EXPECT_THAT(lines, Not(IsEmpty()));
    for (const ProbeStatus& p : lines) {
      EXPECT_FALSE(p.name.empty());
      EXPECT_FALSE(p.attached);
      EXPECT_EQ(p.error, "no BTF here");
      EXPECT_TRUE(probe_names.insert(p.name).second) << "two signals report " << p.name;
    }
  }
}

}  // namespace
}  // namespace stagewatch
