// Shared helpers for the privileged and end-to-end tests: real cgroups beneath the test's
// own cgroup, child processes the tests start (and only those), and scraping.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cgroup/layout.h"
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

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& contents);
// Writes `yaml` to a new /tmp/stagewatch-*.yaml file and returns its path (the caller unlinks).
std::string WriteTempConfig(const std::string& yaml);

// A cgroup tree made beneath this process's own cgroup in the hierarchy the agent keys on,
// at <own>/<unique>/<relative>, and mirrored at the same path in the hierarchies of
// `controllers` ("cpu", "cpuacct", "pressure" for cgroup2's PSI files) as systemd does.
// Only directories it created are removed, deepest first, with every process the test
// started in them killed, when the object goes away, on failure too.
class TestCgroup {
 public:
  explicit TestCgroup(const std::string& relative, const std::vector<std::string>& controllers = {});
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

  // Forks a child that joins this cgroup, names itself `comm`, and runs `body`.
  pid_t Spawn(const std::string& comm, std::function<void()> body);

 private:
  void MakeDirs(const std::string& root, const std::string& path);

  CgroupLayout layout_;
  std::string dir_;
  std::string path_;
  std::vector<std::string> joined_;   // every directory whose cgroup.procs a child joins
  std::vector<std::string> created_;  // in creation order
  std::vector<pid_t> children_;
};

// Allocates and touches memory until the OOM killer ends the process.
[[noreturn]] void HogMemoryForever();

// Waits for a child; returns the signal that killed it, or -exit code.
int WaitForChild(pid_t pid);

// Polls `condition` every 10 ms until it holds or `timeout_ms` passes.
bool WaitUntil(const std::function<bool()>& condition, int timeout_ms);

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
  bool WaitListening(int timeout_ms = 10000);
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

// Runs `command` with `input` on stdin; returns exit status and combined output.
std::pair<int, std::string> RunWithInput(const std::string& command, const std::string& input);

}  // namespace stagewatch::testing
