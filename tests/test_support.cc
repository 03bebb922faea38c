#include "test_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "cgroup/cgroup_control.h"
#include "cgroup/memcg_counters.h"
#include "cgroup/path_cache.h"
#include "cgroup/proc_cgroup.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "probes/attach_policy.h"
#include "sampler/collect_cadence.h"
#include "probes/features.h"

namespace stagewatch::testing {

bool HavePrivileges() { return ProbeKernelFeatures().privileged; }

bool PrivilegesRequired() {
  const char* v = getenv("STAGEWATCH_REQUIRE_PRIVILEGED");
  return v != nullptr && std::string(v) == "1";
}

KernelFeatures ProbeFeaturesForTests() {
  const char* v = getenv("STAGEWATCH_BPF_ATTACH");
  absl::StatusOr<AttachPolicy> policy = ParseAttachPolicy(v ? v : "auto");
  EXPECT_TRUE(policy.ok()) << policy.status();
  return ApplyAttachPolicy(ProbeKernelFeatures(), policy.value_or(AttachPolicy::kAuto));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

uint64_t KeyedValue(const std::string& path, const std::string& key) {
  std::istringstream in(ReadFile(path));
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path);
  out << contents;
  out.close();
  if (!out) ADD_FAILURE() << "cannot write " << path;
}

std::string WriteTempConfig(const std::string& yaml) {
  char path[] = "/tmp/stagewatch-config-XXXXXX.yaml";
  close(mkstemps(path, 5));
  WriteFile(path, yaml);
  return path;
}

// ---- TestCgroup ---------------------------------------------------------------------------

namespace {

// What a test cgroup on pure v2 needs from its parent: memory limits and events, CPU quotas,
// cpusets (launcher runs pinned with --cpuset-cpus).
constexpr const char* kDelegated[] = {"memory", "cpu", "pids", "cpuset"};

bool WriteQuietly(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY);
  bool ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (fd >= 0) close(fd);
  return ok;
}

// Gives the children of the v2 cgroup at `dir` every delegated controller it has itself.
void DelegateControllers(const std::string& dir) {
  std::istringstream available(ReadFile(dir + "/cgroup.controllers"));
  std::string word, enable;
  while (available >> word) {
    for (const char* c : kDelegated) {
      if (word == c) enable += "+" + word + " ";
    }
  }
  if (!enable.empty() && !WriteQuietly(dir + "/cgroup.subtree_control", enable)) {
    ADD_FAILURE() << "cannot delegate " << enable << "in " << dir << ": " << strerror(errno);
  }
}

bool MoveSelf(const std::string& dir) {
  return WriteQuietly(dir + "/cgroup.procs", "0");  // "0" moves the writer itself
}

std::string g_self_leaf;  // where this process moved itself, undone at exit
pid_t g_self_pid = 0;     // (by that process only, not by a child that calls exit())

void MoveBackAtExit() {
  if (getpid() != g_self_pid) return;
  const std::string own = g_self_leaf.substr(0, g_self_leaf.rfind('/'));
  WriteQuietly(own + "/cgroup.subtree_control", "-memory -cpu -pids -cpuset");
  if (MoveSelf(own)) rmdir(g_self_leaf.c_str());
}

// The cgroup path (in the keyed hierarchy) beneath which this process's test cgroups go: its
// own cgroup, read once. On pure v2 the process first steps down into a leaf of its own so
// that its cgroup may delegate controllers (the root cgroup may do both and needs no step).
std::string TestBase(const CgroupLayout& layout) {
  static const std::string base = [&]() -> std::string {
    absl::StatusOr<std::string> own = ReadProcCgroup(getpid(), layout.key);
    if (!own.ok()) {
      ADD_FAILURE() << own.status();
      return "";
    }
    if (!layout.v2_has_memory || layout.key != CGROUP_KEY_DEFAULT) return *own;
    const std::string dir = layout.key_root + (*own == "/" ? "" : *own);
    std::istringstream enabled(ReadFile(dir + "/cgroup.subtree_control"));
    std::string word;
    while (enabled >> word) {
      if (word == "memory") return *own;  // already delegated
    }
    if (*own != "/") {
      std::istringstream procs(ReadFile(dir + "/cgroup.procs"));
      pid_t pid;
      while (procs >> pid) {
        if (pid != getpid()) {
          ADD_FAILURE() << "cgroup v2: the tests' own cgroup " << dir << " holds other processes ("
                        << pid << "), so it cannot give controllers to test cgroups; run the "
                        << "suite in a cgroup of its own, e.g. systemd-run --scope -p Delegate=yes "
                        << "scripts/test.sh";
          return *own;
        }
      }
      g_self_leaf = dir + "/sw-test-self-" + std::to_string(getpid());
      if (mkdir(g_self_leaf.c_str(), 0755) != 0 || !MoveSelf(g_self_leaf)) {
        ADD_FAILURE() << "cannot move the test process into " << g_self_leaf << ": "
                      << strerror(errno);
        return *own;
      }
      g_self_pid = getpid();
      atexit(MoveBackAtExit);
    }
    DelegateControllers(dir);
    return *own;
  }();
  return base;
}

// A child started before the test process stepped into its leaf (TestBase) would stay in the
// process's own cgroup and keep it from delegating; so children wait for that step, whatever
// the order of a binary's tests.
void StepDownBeforeAChild() {
  static const bool once = [] {
    if (geteuid() != 0) return false;
    absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
    if (layout.ok()) TestBase(*layout);
    return true;
  }();
  (void)once;
}

}  // namespace

TestCgroup::TestCgroup(const std::string& relative, const std::vector<std::string>& controllers) {
  static std::atomic<int> counter = 0;
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  if (!layout.ok()) {
    ADD_FAILURE() << layout.status();
    return;
  }
  layout_ = *layout;
  const std::string own = TestBase(layout_);
  if (own.empty()) return;
  const std::string unique = "sw-test-" + std::to_string(getpid()) + "-" +
                             std::to_string(counter++);
  path_ = (own == "/" ? "" : own) + "/" + unique + "/" + relative;
  dir_ = layout_.key_root + path_;
  MakeDirs(layout_.key_root, path_);
  joined_.push_back(dir_);
  for (const std::string& controller : controllers) {
    const std::string mirror = ControllerDir(layout_, controller, path_);
    if (mirror.empty() || mirror == dir_) continue;
    MakeDirs(mirror.substr(0, mirror.size() - path_.size()), path_);
    joined_.push_back(mirror);
  }
}

TestCgroup::TestCgroup(const TestCgroup& parent, const std::string& child)
    : layout_(parent.layout_), path_(parent.path_ + "/" + child) {
  dir_ = layout_.key_root + path_;
  MakeDirs(layout_.key_root, path_);
  joined_.push_back(dir_);
}

std::string TestCgroup::dir(const std::string& controller) const {
  return ControllerDir(layout_, controller, path_);
}

void TestCgroup::MakeDirs(const std::string& root, const std::string& path) {
  const auto cpuset = layout_.v1_roots.find("cpuset");
  const bool cpuset_v1 = cpuset != layout_.v1_roots.end() && cpuset->second == root &&
                         layout_.key != CGROUP_KEY_DEFAULT;
  std::string dir = root;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    dir += "/" + std::string(part);
    if (mkdir(dir.c_str(), 0755) == 0) {
      created_.push_back(dir);
      // A v1 cpuset cgroup starts with no CPUs and nodes: no task could join it.
      if (absl::Status s = cpuset_v1 ? InheritV1Cpuset(dir) : absl::OkStatus(); !s.ok()) {
        ADD_FAILURE() << s;
      }
    } else if (errno != EEXIST) {
      ADD_FAILURE() << "cannot create cgroup " << dir << ": " << strerror(errno);
      return;
    }
    // Every level above the leaf passes the controllers on (v2; the leaf holds the tasks).
    if (root == layout_.key_root && layout_.v2_has_memory && layout_.key == CGROUP_KEY_DEFAULT &&
        dir != root + path) {
      DelegateControllers(dir);
    }
  }
}

TestCgroup::~TestCgroup() {
  for (pid_t pid : children_) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  // cgroupfs directories are removed with rmdir, deepest first; only what this object made.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    // Children's own children (killed by PR_SET_PDEATHSIG) may take a moment to go.
    WaitUntil([&] { return ReadFile(*it + "/cgroup.procs").empty(); }, 2000);
    if (rmdir(it->c_str()) != 0) ADD_FAILURE() << "cannot remove cgroup " << *it << ": " << strerror(errno);
  }
}

uint64_t TestCgroup::id() const { return CgroupIdOfDirectory(dir_).value_or(0); }

void TestCgroup::SetMemoryLimit(uint64_t bytes) {
  const bool v1 = layout_.key == CGROUP_KEY_V1_MEMORY;
  WriteFile(dir_ + (v1 ? "/memory.limit_in_bytes" : "/memory.max"), std::to_string(bytes));
}

uint64_t TestCgroup::OomKillCount() const {
  absl::StatusOr<uint64_t> n = ReadOomKillCount(dir_, layout_.key);
  EXPECT_TRUE(n.ok()) << n.status();
  return n.value_or(0);
}

uint64_t TestCgroup::CpuUsageNs() const {
  if (!v2()) return std::stoull(ReadFile(dir("cpuacct") + "/cpuacct.usage"));
  return KeyedValue(dir_ + "/cpu.stat", "usage_usec") * 1000;
}

void TestCgroup::SetCpuQuota(uint64_t quota_us, uint64_t period_us) {
  if (v2()) {
    WriteFile(dir_ + "/cpu.max", std::to_string(quota_us) + " " + std::to_string(period_us));
    return;
  }
  WriteFile(dir("cpu") + "/cpu.cfs_period_us", std::to_string(period_us));
  WriteFile(dir("cpu") + "/cpu.cfs_quota_us", std::to_string(quota_us));
}

pid_t TestCgroup::Spawn(const std::string& comm, std::function<void()> body) {
  const pid_t pid = SpawnIn(joined_, comm, std::move(body));
  children_.push_back(pid);
  return pid;
}

pid_t TestCgroup::SpawnJoined(const std::string& comm, std::function<void()> body) {
  const pid_t pid = Spawn(comm, std::move(body));
  // In the cgroup once named: a child names itself after joining.
  const bool named = WaitUntil(
      [&] { return ReadFile("/proc/" + std::to_string(pid) + "/comm") == comm.substr(0, 15) + "\n"; },
      2000);
  return named ? pid : -1;
}

pid_t TestCgroup::SpawnStopped(const std::string& comm) {
  const pid_t pid = SpawnJoined(comm, [] { pause(); });
  if (pid > 0) kill(pid, SIGSTOP);
  return pid;
}

pid_t TestCgroup::SpawnUninterruptible(const std::string& comm) {
  return Spawn(comm, [] {
    if (vfork() == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // the test ends its parent, never it
      pause();
      _exit(0);
    }
  });
}

SmallDisk::SmallDisk(const std::string& dir) : dir_(dir) {
  std::filesystem::create_directories(dir_);
  mounted_ = mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=4m,mode=0700") == 0;
}

SmallDisk::~SmallDisk() {
  if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
}

void SmallDisk::Fill() {
  std::FILE* f = std::fopen((dir_ + "/fill").c_str(), "w");
  const std::string chunk(64 * 1024, 'x');
  while (f != nullptr && std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size() &&
         std::fflush(f) == 0) {
  }
  if (f != nullptr) std::fclose(f);
}

void SmallDisk::Free() { std::filesystem::remove(dir_ + "/fill"); }

pid_t SpawnIn(const std::vector<std::string>& dirs, const std::string& comm,
              std::function<void()> body) {
  StepDownBeforeAChild();
  pid_t pid = fork();
  if (pid == 0) {
    for (const std::string& dir : dirs) {
      int fd = open((dir + "/cgroup.procs").c_str(), O_WRONLY);
      if (fd < 0 || write(fd, "0", 1) != 1) _exit(120);  // "0" moves the writer itself
      close(fd);
    }
    prctl(PR_SET_NAME, comm.c_str());
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    body();
    _exit(0);
  }
  return pid;
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

void BusyFor(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

void TouchAnonymous(uint64_t bytes) {
  char* p = static_cast<char*>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  for (uint64_t i = 0; i < bytes; i += 4096) p[i] = 1;
}

void HogMemoryForever() {
  constexpr size_t kChunk = 1 << 20;
  for (;;) {
    void* p = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) continue;
    volatile char* bytes = static_cast<char*>(p);
    for (size_t i = 0; i < kChunk; i += 4096) bytes[i] = 1;
  }
}

int WaitForChild(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -255;
  return WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status);
}

double DeadlineScale() {
  static const double scale = [] {
    const char* text = std::getenv("STAGEWATCH_TEST_DEADLINE_SCALE");
    const double value = text ? std::strtod(text, nullptr) : 1;
    return value >= 1 ? value : 1;
  }();
  return scale;
}

void WaitForTrackerCollection() {
  // One interval of collection, one default sample interval for the sample it waits for, and
  // a second sample of margin.
  const absl::Duration span = std::max(kCollectInterval, kExpositionCollectInterval) +
                              absl::Seconds(2);
  absl::SleepFor(span * DeadlineScale());
}

bool WaitUntil(const std::function<bool()>& condition, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_ms * DeadlineScale()));
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// ---- scraping -----------------------------------------------------------------------------

Scrape ParseExposition(const std::string& text) {
  Scrape out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

double ValueOr(const Scrape& scrape, const std::string& series, double fallback) {
  auto it = scrape.find(series);
  return it == scrape.end() ? fallback : it->second;
}

std::pair<int, std::string> RunWithInput(const std::string& command, const std::string& input) {
  char path[] = "/tmp/stagewatch-input-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return {-1, "mkstemp failed"};
  close(fd);
  WriteFile(path, input);
  std::string output;
  FILE* p = popen((command + " < " + path + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0) output.append(buf, n);
  int status = p ? pclose(p) : -1;
  unlink(path);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

bool WaitForPort(int port, int timeout_ms) {
  return WaitUntil(
      [port] {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{.sin_family = AF_INET, .sin_port = htons(port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
        close(fd);
        return ok;
      },
      timeout_ms);
}

// ---- AgentProcess -------------------------------------------------------------------------

AgentProcess::AgentProcess(const std::vector<std::string>& args,
                           std::function<void()> before_exec, const std::string& binary) {
  char path[] = "/tmp/stagewatch-agent-log-XXXXXX";
  int log_fd = mkstemp(path);
  log_path_ = path;
  StepDownBeforeAChild();
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    // As a shell starts a command in the foreground: a suite started in the background by a
    // non-interactive shell ignores SIGINT and SIGQUIT, and a command cannot trap a signal
    // ignored when it started (LauncherTest's trap then never runs).
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (before_exec) before_exec();
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(log_fd);
}

namespace {

// Writes Alertmanager's configuration and gives its command line.
std::vector<std::string> AlertmanagerArgs(const std::string& dir, const std::string& config_yaml,
                                          int port) {
  WriteFile(dir + "/alertmanager.yml", config_yaml);
  return {"--config.file=" + dir + "/alertmanager.yml", "--storage.path=" + dir + "/am",
          "--web.listen-address=127.0.0.1:" + std::to_string(port), "--cluster.listen-address="};
}

}  // namespace

AlertmanagerProcess::AlertmanagerProcess(const std::string& dir, const std::string& config_yaml)
    : port_(FreePort()),
      process_(AlertmanagerArgs(dir, config_yaml, port_), nullptr, kBinary) {}

AgentProcess::~AgentProcess() {
  if (pid_ > 0 && !exit_code_) {
    kill(pid_, SIGTERM);
    if (WaitExit(5000) == -1) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

std::string AgentProcess::log() const { return ReadFile(log_path_); }

bool AgentProcess::WaitListening(int timeout_ms) {
  static const std::regex kListening(R"(msg"?[=:]"?listening"?.*address"?[=:]"?[^ "]*:(\d+))");
  return WaitUntil(
      [&] {
        std::smatch m;
        const std::string text = log();
        if (!std::regex_search(text, m, kListening)) return false;
        port_ = std::stoi(m[1]);
        return true;
      },
      timeout_ms);
}

std::optional<std::string> AgentProcess::Get(const std::string& path) {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  httplib::Result res = client.Get(path.c_str());
  if (!res || res->status != 200) return std::nullopt;
  return res->body;
}

int AgentProcess::Stop() {
  if (exit_code_) return *exit_code_;
  kill(pid_, SIGTERM);
  return WaitExit();
}

int AgentProcess::WaitExit(int timeout_ms) {
  if (exit_code_) return *exit_code_;
  int status = 0;
  bool done = WaitUntil([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout_ms);
  if (!done) return -1;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return *exit_code_;
}

std::string HeadlessChromium(const std::string& profile_dir, const std::string& mode,
                             const std::string& url, int width, int height) {
  AgentProcess browser({"--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-background-networking", "--no-first-run",
                        "--user-data-dir=" + profile_dir,
                        "--window-size=" + std::to_string(width) + "," + std::to_string(height),
                        mode, url},
                       nullptr, kChromium);
  const int rc = browser.WaitExit(180000);  // -1: still running, killed by the destructor
  EXPECT_EQ(rc, 0) << browser.log();
  return rc == 0 ? browser.log() : "";
}

}  // namespace stagewatch::testing
