// Every signal of the registry (agent/signals/) as the built binary shows it: its probes in
// `stagewatch features`, its probes and collector on /metrics, and its --no-collector.<name>
// flag taking them away.
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "signals/signal.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::ValueOr;

// The registry's probe names, in the order `stagewatch features` must list them.
std::vector<std::string> RegistryProbeNames() {
  std::vector<std::string> names;
  for (const Signal& s : Signals()) {
    if (!s.not_started) continue;
    for (const ProbeStatus& p : s.not_started("")) names.push_back(p.name);
  }
  return names;
}

std::string SuccessSeries(std::string_view collector) {
  return "stagewatch_scrape_collector_success{collector=\"" + std::string(collector) + "\"}";
}

bool ReportsProbe(const std::string& metrics, const std::string& probe) {
  return metrics.find("stagewatch_probe_lost_events_total{probe=\"" + probe + "\"}") !=
         std::string::npos;
}

std::string TempLedger() {
  char path[] = "/tmp/stagewatch-e2e-signals-XXXXXX";
  EXPECT_NE(mkdtemp(path), nullptr);
  return std::string(path) + "/ledger.db";
}

TEST(SignalsE2E, FeaturesListsEveryRegisteredProbeInOrder) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  AgentProcess features({"features", "--json"});
  ASSERT_NE(features.WaitExit(60000), -1) << features.log();
  const std::string log = features.log();
  std::vector<std::string> listed;
  const std::regex probe(R"re(\{"name":"([^"]+)","attach_type")re");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), probe); it != std::sregex_iterator();
       ++it) {
    listed.push_back((*it)[1]);
  }
  EXPECT_EQ(listed, RegistryProbeNames()) << log;
}

TEST(SignalsE2E, EverySignalIsOnMetricsAndItsFlagTakesItAway) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const std::string ledger = TempLedger();
  std::vector<std::string> off = {"--web.listen-address", "127.0.0.1:0", "--ledger.path", ledger};
  for (const std::string& name : CollectorFlagNames()) off.push_back("--no-collector." + name);
  AgentProcess all({"--web.listen-address", "127.0.0.1:0", "--ledger.path", ledger});
  ASSERT_TRUE(all.WaitListening()) << all.log();
  std::optional<std::string> body = all.Get("/metrics");
  ASSERT_TRUE(body) << all.log();
  const std::string metrics_all = *body;
  all.Stop();

  AgentProcess without(off);
  ASSERT_TRUE(without.WaitListening()) << without.log();
  body = without.Get("/metrics");
  ASSERT_TRUE(body) << without.log();
  const std::string metrics_without = *body;

  for (const Signal& s : Signals()) {
    SCOPED_TRACE(std::string(s.name));
    std::vector<std::string> probes;
    if (s.not_started) {
      for (const ProbeStatus& p : s.not_started("")) probes.push_back(p.name);
    }
    for (const std::string& p : probes) EXPECT_TRUE(ReportsProbe(metrics_all, p)) << p;
    if (s.adds_collector) {
      EXPECT_EQ(ValueOr(ParseExposition(metrics_all), SuccessSeries(s.name), -1), 1)
          << metrics_all;
    }
    // Switched off, the signal leaves neither its probes nor its collector; the rest stay.
    for (const std::string& p : probes) {
      EXPECT_EQ(ReportsProbe(metrics_without, p), !s.collector_flag) << p;
    }
    if (s.adds_collector) {
      EXPECT_EQ(ValueOr(ParseExposition(metrics_without), SuccessSeries(s.name), -1),
                s.collector_flag ? -1 : 1);
    }
  }
  without.Stop();  // first: an agent makes a ledger removed under it anew
  std::filesystem::remove_all(ledger.substr(0, ledger.rfind('/')));
}

}  // namespace
}  // namespace stagewatch
