// The lifecycle probe against the running kernel: every mkdir and rmdir in the keyed hierarchy
// arrives with the directory's inode number and its path, and other hierarchies stay out; a
// cgroup's first task and its last task's exit arrive as populated flips, at the kernel's time.
#include "signals/lifecycle/lifecycle_probe.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TestCgroup;

struct Seen {
  uint64_t id;
  uint16_t kind;
  uint32_t hierarchy;
  std::string path;
  uint64_t at_ns;
};

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class CgroupProbeRun {
 public:
  explicit CgroupProbeRun(cgroup_key_hierarchy key) {
    auto probe = LifecycleProbe::Start({.key = key, .features = ProbeKernelFeatures()},
                                    [this](const cgroup_event& e) {
                                      absl::MutexLock lock(&mu_);
                                      seen_.push_back({e.cgroup_id, e.kind, e.hierarchy_id,
                                                       std::string(e.path, e.path_len),
                                                       e.at_ns});
                                    },
                                    nullptr);
    EXPECT_TRUE(probe.ok()) << probe.status();
    if (probe.ok()) probe_ = std::move(*probe);
  }
  LifecycleProbe* probe() { return probe_.get(); }

  std::vector<Seen> Under(const std::string& prefix) {
    probe_->Drain();
    absl::MutexLock lock(&mu_);
    std::vector<Seen> out;
    for (const Seen& s : seen_) {
      if (s.path.starts_with(prefix)) out.push_back(s);
    }
    return out;
  }

 private:
  std::unique_ptr<LifecycleProbe> probe_;
  absl::Mutex mu_;
  std::vector<Seen> seen_;
};

TEST(LifecycleProbeTest, MkdirAndRmdirArriveWithTheInodeAndPathOfTheKeyedHierarchyOnly) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup parent("lifecycle", {"cpu"});
  CgroupProbeRun run(parent.layout().key);
  ASSERT_NE(run.probe(), nullptr);
  ASSERT_EQ(run.probe()->statuses().size(), 2u);
  EXPECT_TRUE(run.probe()->statuses()[0].attached);

  const std::string child = parent.dir() + "/child";
  ASSERT_EQ(mkdir(child.c_str(), 0755), 0) << strerror(errno);
  const uint64_t inode = CgroupIdOfDirectory(child).value_or(0);
  // The same path in another hierarchy (cpu) makes no event of ours.
  const std::string mirror = parent.dir("cpu") + "/child";
  const bool mirrored = !parent.dir("cpu").empty() && parent.dir("cpu") != parent.dir() &&
                        mkdir(mirror.c_str(), 0755) == 0;
  ASSERT_EQ(rmdir(child.c_str()), 0) << strerror(errno);
  if (mirrored) rmdir(mirror.c_str());

  std::vector<Seen> seen;
  testing::WaitUntil([&] { return (seen = run.Under(parent.path())).size() >= 2; }, 2000);
  ASSERT_EQ(seen.size(), 2u) << "one mkdir and one rmdir, none from the cpu hierarchy";
  EXPECT_EQ(seen[0].kind, CGROUP_EVENT_MKDIR);
  EXPECT_EQ(seen[1].kind, CGROUP_EVENT_RMDIR);
  for (const Seen& s : seen) {
    EXPECT_EQ(s.id, inode);
    EXPECT_EQ(s.path, parent.path() + "/child");
  }
  EXPECT_EQ(run.probe()->statuses()[0].lost_events, 0u);
}

// The moment a run's last task exits, as the kernel saw it: what the agent closes a run of a
// dead launcher at. A task joining makes the cgroup populated; its exit, unpopulated.
TEST(LifecycleProbeTest, ACgroupsFirstTaskAndLastExitArriveAsPopulatedFlipsAtTheKernelsTime) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  if (!RawTracepointArgIsStruct(ProbeKernelFeatures().btf_path, "cgroup_notify_populated", 0,
                                "cgroup")) {
    GTEST_SKIP() << "the kernel has no cgroup_notify_populated tracepoint";
  }
  TestCgroup parent("populated");
  CgroupProbeRun run(parent.layout().key);
  ASSERT_NE(run.probe(), nullptr);
  ASSERT_TRUE(run.probe()->populated_events());
  EXPECT_TRUE(run.probe()->statuses()[1].attached) << run.probe()->statuses()[1].error;

  const std::string child = parent.dir() + "/job";
  ASSERT_EQ(mkdir(child.c_str(), 0755), 0) << strerror(errno);
  const uint64_t inode = CgroupIdOfDirectory(child).value_or(0);
  const uint64_t before = MonotonicNs();
  const pid_t pid = testing::SpawnIn({child}, "sw-populated", [] { usleep(200 * 1000); });
  ASSERT_EQ(testing::WaitForChild(pid), 0);
  const uint64_t reaped = MonotonicNs();
  ASSERT_EQ(rmdir(child.c_str()), 0) << strerror(errno);

  std::vector<Seen> seen;
  const std::string path = parent.path() + "/job";
  testing::WaitUntil([&] { return (seen = run.Under(path)).size() >= 4; }, 2000);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].kind, CGROUP_EVENT_MKDIR);
  EXPECT_EQ(seen[1].kind, CGROUP_EVENT_POPULATED);
  EXPECT_EQ(seen[2].kind, CGROUP_EVENT_UNPOPULATED);
  EXPECT_EQ(seen[3].kind, CGROUP_EVENT_RMDIR);
  for (const Seen& s : seen) {
    EXPECT_EQ(s.id, inode);
    EXPECT_EQ(s.path, path);
  }
  // The task lived 200 ms: its exit is after that and before it was reaped.
  EXPECT_GE(seen[2].at_ns, before + 200'000'000);
  EXPECT_LE(seen[2].at_ns, reaped);
  EXPECT_GE(seen[2].at_ns, seen[1].at_ns + 200'000'000);
}

TEST(LifecycleProbeTest, TurnedOffSaysHowToTurnItOn) {
  auto probe = LifecycleProbe::Start({.enabled = false}, [](const cgroup_event&) {}, nullptr);
  ASSERT_FALSE(probe.ok());
  EXPECT_NE(probe.status().message().find("cgroup.lifecycle_events"), std::string_view::npos);
}

}  // namespace
}  // namespace stagewatch
