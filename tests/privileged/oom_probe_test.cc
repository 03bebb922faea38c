// The OOM probe against the running kernel: real programs, real cgroups, real OOM kills.
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cgroup/path_cache.h"
#include "gtest/gtest.h"
#include "signals/oom/oom_tracker.h"
#include "signals/oom/oom_probe.h"
#include "stages/stage_resolver.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TestCgroup;

constexpr const char* kKillerComm = "sw-test-killer";

// The killer in these tests is a fork of the test binary, so that is its executable.
std::string TestBinary() {
  char path[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, n) : "";
}

// Runs the probe with its own poll thread and keeps every event it delivers.
class ProbeRun {
 public:
  explicit ProbeRun(cgroup_key_hierarchy key, TracepointForm form = TracepointForm::kAuto) {
    auto probe = OomProbe::Start(
        {.key = key, .userspace_killers = {kKillerComm},
         .userspace_killer_paths = {TestBinary()}, .features = ProbeKernelFeatures(),
         .form = form},
        [this](const oom_event& e) {
          absl::MutexLock lock(&mu_);
          events_.push_back(e);
        });
    EXPECT_TRUE(probe.ok()) << probe.status();
    if (probe.ok()) probe_ = std::move(*probe);
  }

  OomProbe* probe() { return probe_.get(); }

  // Polls until `n` events for victims in `cgroup_id` arrived, then 300 ms more for strays.
  std::vector<oom_event> EventsFor(uint64_t cgroup_id, size_t n) {
    return EventsWhere([cgroup_id](const oom_event& e) { return e.victim_cgroup_id == cgroup_id; },
                       n);
  }
  std::vector<oom_event> EventsWhere(const std::function<bool(const oom_event&)>& match,
                                     size_t n) {
    std::vector<oom_event> matching;
    auto collect = [&] {
      probe_->Poll(10);
      absl::MutexLock lock(&mu_);
      matching.clear();
      for (const oom_event& e : events_) {
        if (match(e)) matching.push_back(e);
      }
      return matching.size() >= n;
    };
    testing::WaitUntil(collect, 5000);
    testing::WaitUntil([&] { collect(); return false; }, 300);
    return matching;
  }

 private:
  std::unique_ptr<OomProbe> probe_;
  absl::Mutex mu_;
  std::vector<oom_event> events_;
};

TEST(OomProbeTest, EveryProgramLoadsAndAttaches) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  ProbeRun run(CGROUP_KEY_DEFAULT);
  ASSERT_NE(run.probe(), nullptr);
  ASSERT_EQ(run.probe()->statuses().size(), 2u);
  for (const ProbeStatus& s : run.probe()->statuses()) {
    EXPECT_TRUE(s.attached) << s.name << ": " << s.error;
    EXPECT_FALSE(s.attach_type.empty()) << s.name;
  }
}

TEST(OomProbeTest, RealOomKillGivesExactlyOneEventWithStagePidAndComm) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup cgroup("stagewatch/train");
  ProbeRun run(cgroup.layout().key);
  ASSERT_NE(run.probe(), nullptr);
  cgroup.SetMemoryLimit(16 << 20);

  pid_t hog = cgroup.Spawn("sw-oom-hog", testing::HogMemoryForever);
  ASSERT_EQ(testing::WaitForChild(hog), SIGKILL);

  std::vector<oom_event> events = run.EventsFor(cgroup.id(), 1);
  ASSERT_EQ(events.size(), 1u);
  const oom_event& e = events[0];
  EXPECT_EQ(e.kind, OOM_KIND_KERNEL);
  EXPECT_EQ(e.victim_pid, hog);
  EXPECT_STREQ(e.victim_comm, "sw-oom-hog");
  EXPECT_EQ(e.trigger_cgroup_id, cgroup.id());  // the hog itself hit the limit
  // The victim was using about the 16 MiB limit; rss in pages of 4 KiB.
  EXPECT_GT(e.anon_rss_pages * 4096, 8u << 20);
  EXPECT_LT(e.anon_rss_pages * 4096, 32u << 20);
  EXPECT_EQ(cgroup.OomKillCount(), 1u);  // the kernel's own count agrees

  // The tracker names the stage from the cgroup path convention.
  CgroupPathCache paths(cgroup.layout().key_root);
  StageResolver stages({}, DiscoveryConfig{});
  OomTracker tracker(&paths, &stages, cgroup.layout().key);
  const Stage stage = tracker.OnEvent(e).first;
  EXPECT_EQ(stage.name, "train");
  auto totals = tracker.Totals();
  ASSERT_TRUE(totals.contains(stage.id));
  EXPECT_EQ(totals[stage.id].kernel_kills, 1u);
  EXPECT_EQ(tracker.unknown_cgroups(), 0u);
}

// Where the raw tracepoint does not pass the victim task, the classic one gives its pid: the
// victim's cgroup comes from /proc while it lives, else from the task that hit the limit. tracefs, which
// classic tracepoints need, is mounted in this test process's own mount namespace.
TEST(OomProbeTest, ClassicTracepointFallbackNamesTheVictimsStageFromProc) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  if (TracefsPath().empty()) {
    ASSERT_EQ(unshare(CLONE_NEWNS), 0) << strerror(errno);
    ASSERT_EQ(mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << strerror(errno);
    ASSERT_EQ(mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr), 0) << strerror(errno);
  }
  TestCgroup cgroup("stagewatch/features");
  ProbeRun run(cgroup.layout().key, TracepointForm::kClassic);
  ASSERT_NE(run.probe(), nullptr);
  EXPECT_EQ(run.probe()->statuses()[0].attach_type, "tracepoint");
  ASSERT_TRUE(run.probe()->statuses()[0].attached) << run.probe()->statuses()[0].error;
  cgroup.SetMemoryLimit(16 << 20);

  pid_t hog = cgroup.Spawn("sw-classic-hog", testing::HogMemoryForever);
  siginfo_t info{};
  // Dead, not yet reaped: /proc no longer names its cgroup.
  ASSERT_EQ(waitid(P_PID, hog, &info, WEXITED | WNOWAIT), 0);
  std::vector<oom_event> events =
      run.EventsWhere([hog](const oom_event& e) { return e.victim_pid == hog; }, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].flags & OOM_FLAG_VICTIM_CGROUP_UNKNOWN);
  EXPECT_STREQ(events[0].victim_comm, "sw-classic-hog");

  CgroupPathCache paths(cgroup.layout().key_root);
  StageResolver stages({}, DiscoveryConfig{});
  OomTracker tracker(&paths, &stages, cgroup.layout().key);
  const Stage stage = tracker.OnEvent(events[0]).first;
  EXPECT_EQ(stage.name, "features");
  EXPECT_EQ(tracker.Totals()[stage.id].kernel_kills, 1u);
  EXPECT_EQ(tracker.unknown_cgroups(), 0u);
  EXPECT_EQ(testing::WaitForChild(hog), SIGKILL);
}

TEST(OomProbeTest, SigkillFromConfiguredKillerCountsAsUserspaceKill) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup cgroup("stagewatch/validate");
  ProbeRun run(cgroup.layout().key);
  ASSERT_NE(run.probe(), nullptr);

  auto sleep_forever = [] { for (;;) pause(); };
  // In the cgroup before the kills: a kill that finds a child still on its way there is counted
  // in the test's own cgroup.
  pid_t spared = cgroup.SpawnJoined("sw-spared", sleep_forever);
  pid_t victim = cgroup.SpawnJoined("sw-victim", sleep_forever);
  ASSERT_GT(spared, 0);
  ASSERT_GT(victim, 0);
  // A SIGKILL from a process that is not a configured killer is not an OOM kill.
  pid_t plain = fork();
  if (plain == 0) {
    prctl(PR_SET_NAME, "sw-not-killer");
    _exit(kill(spared, SIGKILL) == 0 ? 0 : 1);
  }
  ASSERT_EQ(testing::WaitForChild(plain), 0);
  ASSERT_EQ(testing::WaitForChild(spared), SIGKILL);

  pid_t killer = fork();
  if (killer == 0) {
    prctl(PR_SET_NAME, kKillerComm);
    _exit(kill(victim, SIGKILL) == 0 ? 0 : 1);
  }
  ASSERT_EQ(testing::WaitForChild(killer), 0);
  ASSERT_EQ(testing::WaitForChild(victim), SIGKILL);

  std::vector<oom_event> events = run.EventsFor(cgroup.id(), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, OOM_KIND_USERSPACE);
  EXPECT_EQ(events[0].victim_pid, victim);
  EXPECT_STREQ(events[0].victim_comm, "sw-victim");
  EXPECT_STREQ(events[0].trigger_comm, kKillerComm);
  EXPECT_EQ(cgroup.OomKillCount(), 0u);  // the kernel's OOM killer had no part in it
}

// Any process may call itself "sw-test-killer"; only the configured executable, run by a
// system account, counts.
TEST(OomProbeTest, KillerNameAloneDoesNotCount) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup cgroup("stagewatch/impostor");
  ProbeRun run(cgroup.layout().key);
  ASSERT_NE(run.probe(), nullptr);
  constexpr uid_t kUserUid = 4242;  // above userspace_killer_max_uid (999)
  auto sleep_forever = [] { for (;;) pause(); };
  auto sleep_as_user = [] {
    if (setuid(kUserUid) != 0) _exit(1);
    for (;;) pause();
  };
  pid_t by_other_exe = cgroup.SpawnJoined("sw-victim-a", sleep_forever);
  pid_t by_user = cgroup.SpawnJoined("sw-victim-b", sleep_as_user);
  ASSERT_GT(by_other_exe, 0);
  ASSERT_GT(by_user, 0);

  // The right name from another executable (python3).
  const std::string script = "import ctypes, os; ctypes.CDLL(None).prctl(15, b'" +
                             std::string(kKillerComm) + "'); os.kill(" +
                             std::to_string(by_other_exe) + ", 9)";
  pid_t other = fork();
  if (other == 0) {
    execlp("python3", "python3", "-c", script.c_str(), nullptr);
    _exit(127);
  }
  ASSERT_EQ(testing::WaitForChild(other), 0);
  ASSERT_EQ(testing::WaitForChild(by_other_exe), SIGKILL);

  // The right name and executable, run by an ordinary user.
  testing::WaitUntil([&] {
    return testing::ReadFile("/proc/" + std::to_string(by_user) + "/status").find(
               "Uid:\t4242") != std::string::npos;
  }, 2000);
  pid_t user = fork();
  if (user == 0) {
    prctl(PR_SET_NAME, kKillerComm);
    if (setuid(kUserUid) != 0) _exit(2);
    _exit(kill(by_user, SIGKILL) == 0 ? 0 : 1);
  }
  ASSERT_EQ(testing::WaitForChild(user), 0);
  ASSERT_EQ(testing::WaitForChild(by_user), SIGKILL);

  EXPECT_TRUE(run.EventsFor(cgroup.id(), 1).empty());
}

}  // namespace
}  // namespace stagewatch
