// stagewatch_context_switches_total at the built agent's /metrics, by ctxswitchtype, against
// the kernel's own voluntary_ctxt_switches and nonvoluntary_ctxt_switches of the one task in
// the stage: a task that both sleeps and is preempted, so swapped labels cannot agree.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::Scrape;
using testing::TestCgroup;
using testing::ValueOr;

// Stages are discovered beneath a directory only these tests use.
constexpr const char* kDiscoveryDir = "sw-ctxswitch";

uint64_t StatusField(pid_t pid, const std::string& key) {
  std::istringstream in(testing::ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(key + ":")) return std::stoull(line.substr(key.size() + 1));
  }
  ADD_FAILURE() << "no " << key << " in /proc/" << pid << "/status";
  return 0;
}

TEST(ContextSwitchTypesE2E, EachTypeMatchesTheKernelsCountForTheTask) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  constexpr int kSleeps = 150;
  const std::string stage = "sw-ctxswitch-types-" + std::to_string(getpid());
  TestCgroup cgroup(kDiscoveryDir + std::string("/") + stage);
  testing::OwnDiscoveryConfig config(kDiscoveryDir);
  AgentProcess agent({"--config.file", config.path, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  const std::string series = R"(stagewatch_context_switches_total{pipeline_stage=")" + stage;
  const std::string voluntary = series + R"(",ctxswitchtype="voluntary"})";
  const std::string nonvoluntary = series + R"(",ctxswitchtype="nonvoluntary"})";
  Scrape m;
  auto scrape = [&] {
    std::optional<std::string> body = agent.Get("/metrics");
    if (body) m = ParseExposition(*body);
  };
  // Known before the task starts, so none of its switches falls before the first snapshot.
  ASSERT_TRUE(testing::WaitUntil([&] { return scrape(), m.contains(voluntary); }, 15000))
      << agent.log();

  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  // A hog on CPU 0 outside any stage preempts the task while it spins there.
  pid_t hog = testing::SpawnIn({}, "sw-ctx-hog", [] {
    testing::PinTo(0);
    testing::BusyFor(std::chrono::milliseconds(1500));
  });
  pid_t task = cgroup.Spawn("sw-ctx-task", [&] {
    testing::PinTo(0);
    for (int i = 0; i < kSleeps; i++) usleep(1000);
    testing::BusyFor(std::chrono::milliseconds(500));
    char c = 'r';
    if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(3);
  });
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  // Let it block in read(): from then on it makes no switch until told to go.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double v = StatusField(task, "voluntary_ctxt_switches");
  const double n = StatusField(task, "nonvoluntary_ctxt_switches");
  auto agrees = [](double exported, double kernel) {
    return std::abs(exported - kernel) <= 3 + 0.02 * kernel;
  };
  const bool matched = testing::WaitUntil(
      [&] {
        scrape();
        return agrees(ValueOr(m, voluntary, -1), v) && agrees(ValueOr(m, nonvoluntary, -1), n);
      },
      5000);
  (void)!write(go[1], &c, 1);
  EXPECT_EQ(testing::WaitForChild(task), 0);
  EXPECT_EQ(testing::WaitForChild(hog), 0);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);

  std::printf("[ figures  ] voluntary %.0f (kernel %.0f), nonvoluntary %.0f (kernel %.0f)\n",
              ValueOr(m, voluntary, -1), v, ValueOr(m, nonvoluntary, -1), n);
  EXPECT_GE(v, kSleeps);
  EXPECT_GE(n, 10) << "the hog never preempted the task: the test cannot tell the types apart";
  EXPECT_TRUE(matched) << "exported voluntary " << ValueOr(m, voluntary, -1) << " vs " << v
                       << ", nonvoluntary " << ValueOr(m, nonvoluntary, -1) << " vs " << n;
}

}  // namespace
}  // namespace stagewatch
