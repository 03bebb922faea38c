// The signal registry (agent/signals/) against the lists that must agree with it: the
// configuration's collector names, the default configuration, the probes' own names, and what
// each phase of the agent's start may use.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "app/collector_flags.h"
#include "config.h"
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
  for (const char* known : {"oom", "sched", "memory", "cgroup", "runs"}) {
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
    EXPECT_TRUE(s.try_probes != nullptr || !s.collector.empty()) << "it would do nothing";
    // A collector switched by collectors.<name> is the one labelled collector="<name>".
    if (s.collector_flag) EXPECT_EQ(s.collector, s.name);
    // The first phase runs before the agent has a collector registry to add to.
    if (s.starts_first) EXPECT_THAT(s.collector, IsEmpty());
  }
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
