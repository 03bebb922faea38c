// Shared helpers for the privileged and end-to-end tests: real cgroups beneath the test's
// own cgroup, child processes the tests start (and only those), and scraping.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cgroup/layout.h"
#include "probes/features.h"
#include "gtest/gtest.h"

namespace stagewatch::testing {

// Privileged tests skip without root, naming what they need; with
// STAGEWATCH_REQUIRE_PRIVILEGED=1 (as .ci/run sets) they fail instead.
bool HavePrivileges();
#define STAGEWATCH_REQUIRE_PRIVILEGES()                                                    \
  do {                                                                                     \
    if (!::stagewatch::testing::HavePrivileges()) {                                        \
      if (::stagewatch::testing::PrivilegesRequired()) {                                   \
        FAIL() << "this test needs root and BPF, and STAGEWATCH_REQUIRE_PRIVILEGED=1";     \
      }                                                                                    \
      GTEST_SKIP() << "needs root with BPF (CAP_BPF, CAP_PERFMON): run the suite as root"; \
    }                                                                                      \
  } while (0)
bool PrivilegesRequired();

// The kernel's features as the probes under test are offered them: STAGEWATCH_BPF_ATTACH
// (the agent's --bpf.attach) applies here as it does to the binary, so a test run can force
// the raw tracepoint forms on a kernel with BPF trampolines.
KernelFeatures ProbeFeaturesForTests();

std::string ReadFile(const std::string& path);
// The value of `key` in a flat keyed file (memory.stat, memory.events, cpu.stat); 0 if absent.
uint64_t KeyedValue(const std::string& path, const std::string& key);
void WriteFile(const std::string& path, const std::string& contents);
// Writes `yaml` to a new /tmp/stagewatch-*.yaml file and returns its path (the caller unlinks).
std::string WriteTempConfig(const std::string& yaml);

// A config file that discovers stages beneath `directory` only, removed with the object: the
// stages other tests make host-wide at the same time can then never fill
// discovery.max_stages before a test's own.
struct OwnDiscoveryConfig {
  explicit OwnDiscoveryConfig(const std::string& directory)
      : path(WriteTempConfig("discovery:\n  directory: " + directory + "\n")) {}
  ~OwnDiscoveryConfig() { unlink(path.c_str()); }
  OwnDiscoveryConfig(const OwnDiscoveryConfig&) = delete;
  OwnDiscoveryConfig& operator=(const OwnDiscoveryConfig&) = delete;
  const std::string path;
};

// A cgroup tree made beneath this process's own cgroup in the hierarchy the agent keys on,
// at <own>/<unique>/<relative>, and mirrored at the same path in the hierarchies of
// `controllers` ("cpu", "cpuacct", "pressure" for cgroup2's PSI files) as systemd does.
// Only directories it created are removed, deepest first, with every process the test
// started in them killed, when the object goes away, on failure too.
// On pure cgroup v2 a cgroup holds processes or gives controllers to children, never both:
// the first TestCgroup moves this test process into a leaf of its own cgroup (only when it
// is alone there) and delegates memory, cpu and pids down to every leaf it makes.
class TestCgroup {
 public:
  explicit TestCgroup(const std::string& relative, const std::vector<std::string>& controllers = {});
  // A cgroup `child` beneath `parent` in the key hierarchy; destroy it before the parent.
  TestCgroup(const TestCgroup& parent, const std::string& child);
  ~TestCgroup();
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  const std::string& dir() const { return dir_; }    // absolute directory
  std::string dir(const std::string& controller) const;  // a mirror's directory
  const std::string& path() const { return path_; }  // path within the hierarchy
  const CgroupLayout& layout() const { return layout_; }
  uint64_t id() const;

  void SetMemoryLimit(uint64_t bytes);
  uint64_t OomKillCount() const;  // the kernel's own count for this cgroup
  // CPU time of its tasks: v1 cpuacct.usage, v2 cpu.stat usage_usec (in ns either way).
  uint64_t CpuUsageNs() const;
  // CFS bandwidth: v1 cpu.cfs_quota_us/cpu.cfs_period_us, v2 cpu.max.
  void SetCpuQuota(uint64_t quota_us, uint64_t period_us = 100000);
  bool v2() const { return layout_.key == CGROUP_KEY_DEFAULT; }

  // Forks a child that joins this cgroup, names itself `comm`, and runs `body`.
  pid_t Spawn(const std::string& comm, std::function<void()> body);
  // Spawn, returning once the child is in the cgroup (it names itself after joining); -1 if it
  // never got there. For a child something else acts on, such as a signal that must find it here.
  pid_t SpawnJoined(const std::string& comm, std::function<void()> body);
  // A child stopped by SIGSTOP once it is in the cgroup (T in /proc); -1 if it never got there.
  pid_t SpawnStopped(const std::string& comm);
  // A child waiting in vfork() for a child of its own: a killable wait, which /proc shows as D.
  pid_t SpawnUninterruptible(const std::string& comm);

 private:
  void MakeDirs(const std::string& root, const std::string& path);

  CgroupLayout layout_;
  std::string dir_;
  std::string path_;
  std::vector<std::string> joined_;   // every directory whose cgroup.procs a child joins
  std::vector<std::string> created_;  // in creation order
  std::vector<pid_t> children_;
};

// Forks a child that joins the cgroup directories `dirs`, names itself `comm`, dies with this
// process, and runs `body`. The caller waits for it.
pid_t SpawnIn(const std::vector<std::string>& dirs, const std::string& comm,
              std::function<void()> body);

// A small tmpfs (4 MiB, mode 0700: a ledger refuses a directory others may write) mounted at
// `dir` (made when missing), for a disk that fills up;
// unmounted when the object goes, however the test ends.
class SmallDisk {
 public:
  explicit SmallDisk(const std::string& dir);
  ~SmallDisk();
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;
  bool mounted() const { return mounted_; }
  void Fill();  // writes a file until the disk is full
  void Free();  // removes it

 private:
  std::string dir_;
  bool mounted_ = false;
};

// Pins the calling thread to one CPU.
void PinTo(int cpu);
// Spins on the CPU for `d` of wall time.
void BusyFor(std::chrono::milliseconds d);

// Maps and touches `bytes` of anonymous memory, which stays charged until the process ends.
void TouchAnonymous(uint64_t bytes);

// Allocates and touches memory until the OOM killer ends the process.
[[noreturn]] void HogMemoryForever();

// Waits for a child; returns the signal that killed it, or -exit code.
int WaitForChild(pid_t pid);

// How much longer than asked every wait gives up after: STAGEWATCH_TEST_DEADLINE_SCALE, at
// least 1 (the VM stage sets it for its software emulation). A deadline bounds how long a test
// waits for what must come, never how fast the product is; speed is for bench/.
double DeadlineScale();

// Polls `condition` every 10 ms until it holds or `timeout_ms` (times DeadlineScale()) passes.
bool WaitUntil(const std::function<bool()>& condition, int timeout_ms);

// Waits until a collection of the trackers on the sampler's clock (every kCollectInterval or
// kExpositionCollectInterval, after a sample) has surely followed what the caller did: the figures a scrape reads of BPF
// maps are that collection's, never read at the scrape.
void WaitForTrackerCollection();

// One scrape parsed into "name{labels}" → value, labels as exposed.
using Scrape = std::map<std::string, double>;
Scrape ParseExposition(const std::string& text);
double ValueOr(const Scrape& scrape, const std::string& series, double fallback);

// A program run as a child, by default the built stagewatch binary, with its output captured
// to a file. Ended by its pid when the object goes.
class AgentProcess {
 public:
  // `before_exec` runs in the child (drop privileges, unshare, ...).
  explicit AgentProcess(const std::vector<std::string>& args,
                        std::function<void()> before_exec = nullptr,
                        const std::string& binary = STAGEWATCH_BINARY);
  ~AgentProcess();  // SIGTERM, then SIGKILL if it does not stop within 5 s

  // Waits for the "listening" log line and reads the port from it.
  bool WaitListening(int timeout_ms = 30000);  // loading BPF takes seconds under emulation
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // GET over loopback; nullopt if the request failed.
  std::optional<std::string> Get(const std::string& path);

  // Sends SIGTERM and returns the exit code (or 128+signal).
  int Stop();
  // For a process expected to exit on its own; -1 if it is still running after timeout_ms.
  int WaitExit(int timeout_ms = 10000);
  std::string log() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
  std::optional<int> exit_code_;
};

// A free loopback TCP port (bound, then released: the caller binds it right away).
int FreePort();

// Waits until `port` on 127.0.0.1 accepts connections.
bool WaitForPort(int port, int timeout_ms = 10000);

// A real Alertmanager (Debian's prometheus-alertmanager) on a free loopback port, configured
// by `config_yaml`, its state kept in `dir`. Ended by its pid when the object goes.
class AlertmanagerProcess {
 public:
  static constexpr const char* kBinary = "/usr/bin/prometheus-alertmanager";
  AlertmanagerProcess(const std::string& dir, const std::string& config_yaml);
  // Waits until it accepts connections.
  bool WaitReady() { return WaitForPort(port_); }
  int port() const { return port_; }
  std::string log() const { return process_.log(); }

 private:
  int port_;
  AgentProcess process_;
};

// Runs `command` with `input` on stdin; returns exit status and combined output.
std::pair<int, std::string> RunWithInput(const std::string& command, const std::string& input);

// Debian's headless Chromium on `url` with `mode` (--dump-dom, or --screenshot=FILE) in a
// window of `width`×`height` px, its profile in `profile_dir`: what it printed, or "" (and a
// test failure) when it did not exit 0 within 180 s (a cold start under the VM stage's
// single-threaded emulation takes over a minute), then killed by its pid.
inline constexpr char kChromium[] = "/usr/bin/chromium";
std::string HeadlessChromium(const std::string& profile_dir, const std::string& mode,
                             const std::string& url, int width, int height);

}  // namespace stagewatch::testing
