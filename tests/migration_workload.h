// A task that moves itself between CPUs with sched_setaffinity, and what the kernel itself
// counted of it, split by NUMA node: its migrations (/proc/thread-self/sched se.nr_migrations)
// within and across nodes, and its CPU time (se.sum_exec_runtime) on each node. For
// the placement tests, privileged and end-to-end.
#pragma once

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "signals/placement/cpu_nodes.h"
#include "test_support.h"

namespace stagewatch::testing {

struct KernelPlacement {
  uint64_t node_migrations = 0;
  uint64_t cross_node_migrations = 0;
  std::map<uint32_t, uint64_t> oncpu_ns_by_node;  // node number → ns
  // CPU time in the moves themselves (the sched_setaffinity call and the reads after it): part
  // on the CPU left, part on the one joined, so no node's truth; within it, the counts of the
  // two nodes may differ from the truth's (under emulation, ~0.15 ms a move).
  uint64_t moving_ns = 0;
};

inline uint64_t SchedField(const std::string& text, const std::string& key) {
  const size_t at = text.find(key + " ");
  if (at == std::string::npos) return 0;
  std::istringstream rest(text.substr(text.find(':', at) + 1));
  uint64_t value = 0;
  rest >> value;
  return value;
}

// The calling thread's migrations, as the kernel counts them (p->se.nr_migrations).
inline uint64_t NrMigrations() {
  return SchedField(ReadFile("/proc/thread-self/sched"), "se.nr_migrations");
}

// The calling thread's CPU time in ns: the kernel's se.sum_exec_runtime, schedstat's first
// field, brought up to date for the running thread (schedstat shows it as of the last tick or
// switch, up to a tick stale while the thread runs).
inline uint64_t OncpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return uint64_t(t.tv_sec) * 1'000'000'000 + uint64_t(t.tv_nsec);
}

// The CPUs to cycle through, among those this process may use: two of one node where a node
// has two (moves within it), and one of another node where there is one (moves across), so
// that every kind the host can give is made. Fewer than two: the host cannot migrate a task.
inline std::vector<int> BounceCpus(const CpuNodes& nodes) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof(allowed), &allowed);
  std::map<uint32_t, std::vector<int>> by_column;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (CPU_ISSET(cpu, &allowed)) by_column[nodes.ColumnOf(cpu)].push_back(cpu);
  }
  std::vector<int> out;
  std::optional<uint32_t> local;  // the node of the pair
  for (const auto& [column, cpus] : by_column) {
    if (cpus.size() >= 2) {
      out = {cpus[0], cpus[1]};
      local = column;
      break;
    }
  }
  for (const auto& [column, cpus] : by_column) {
    if (local && column == *local) continue;
    out.push_back(cpus[0]);
    if (local || out.size() == 2) break;
  }
  return out;
}

// Pins the calling thread to cpus[start % size], then moves it `moves` times along `cpus`
// (cyclically), spinning `busy` on each CPU. Always pinned to one CPU, it migrates only when
// moved, so each of the kernel's counts is split by the CPU it was pinned to before and after.
// Call `ready` once pinned at the start (before the counts begin), to line up with a reader.
template <typename Ready>
KernelPlacement Bounce(const std::vector<int>& cpus, const CpuNodes& nodes, size_t start,
                       int moves, std::chrono::microseconds busy, Ready ready) {
  KernelPlacement out;
  int at = cpus[start % cpus.size()];
  PinTo(at);
  ready();
  uint64_t migrations = NrMigrations(), oncpu = OncpuNs();
  auto node = [&](int cpu) { return nodes.nodes[nodes.ColumnOf(cpu)]; };
  for (int i = 1; i <= moves + 1; i++) {
    const auto until = std::chrono::steady_clock::now() + busy;
    while (std::chrono::steady_clock::now() < until) {
    }
    const int next = i <= moves ? cpus[(start + i) % cpus.size()] : at;  // the last: stay
    const uint64_t before_move = OncpuNs();
    out.oncpu_ns_by_node[node(at)] += before_move - oncpu;  // all on `at`
    if (next != at) PinTo(next);
    const uint64_t m = NrMigrations(), t = OncpuNs();
    (node(at) == node(next) ? out.node_migrations : out.cross_node_migrations) += m - migrations;
    out.moving_ns += t - before_move;
    migrations = m;
    oncpu = t;
    at = next;
  }
  return out;
}

// Children that bounce between `cpus` and send back what the kernel counted of them. Each
// waits, pinned (so it cannot migrate), until all are ready and the caller has read its
// baseline; then bounces, reports, and waits again so the caller reads before it exits.
class Bouncers {
 public:
  Bouncers(TestCgroup& cgroup, const std::vector<int>& cpus, const CpuNodes& nodes, int children,
           int moves, std::chrono::microseconds busy)
      : children_(children) {
    for (int* fds : {ready_, go_, report_, done_}) EXPECT_EQ(pipe(fds), 0);
    for (int c = 0; c < children; c++) {
      pids_.push_back(cgroup.Spawn("sw-bounce", [=, this] {
        const KernelPlacement k = Bounce(cpus, nodes, c, moves, busy, [this] {
          char b = 0;
          (void)!write(ready_[1], &b, 1);
          (void)!read(go_[0], &b, 1);
        });
        // One write, so that two children's reports never interleave (PIPE_BUF is more).
        Report report{.node_migrations = k.node_migrations,
                      .cross_node_migrations = k.cross_node_migrations,
                      .moving_ns = k.moving_ns};
        for (const auto& [node, ns] : k.oncpu_ns_by_node) {
          if (report.nodes < kMaxReportNodes) report.oncpu[report.nodes++] = {node, ns};
        }
        (void)!write(report_[1], &report, sizeof(report));
        char b = 0;
        (void)!read(done_[0], &b, 1);
      }));
    }
    // Only the children write these: a child that dies ends the reads (EOF), never hangs them.
    for (int* fds : {ready_, report_}) {
      close(fds[1]);
      fds[1] = -1;
    }
  }
  ~Bouncers() {
    Finish();
    for (int* fds : {ready_, go_, report_, done_}) {
      for (int fd : {fds[0], fds[1]}) {
        if (fd >= 0) close(fd);
      }
    }
  }

  // Returns once every child is pinned and asleep waiting for Release(): its CPU time so far
  // is charged (the sched probe charges a slice when it ends) and it cannot migrate.
  void AwaitReady() {
    char b;
    for (int i = 0; i < children_; i++) EXPECT_EQ(read(ready_[0], &b, 1), 1);
    for (pid_t pid : pids_) {
      EXPECT_TRUE(WaitUntil(
          [pid] {
            return ReadFile("/proc/" + std::to_string(pid) + "/stat").find(") S ") !=
                   std::string::npos;
          },
          5000))
          << "child " << pid << " never went to sleep";
    }
  }
  void Release() {
    const std::string go(children_, 'g');
    EXPECT_EQ(write(go_[1], go.data(), go.size()), static_cast<ssize_t>(go.size()));
  }
  // What the kernel counted of every child, summed; they are still alive, blocked.
  KernelPlacement Collect() {
    KernelPlacement sum;
    for (int i = 0; i < children_; i++) {
      Report report;
      EXPECT_EQ(read(report_[0], &report, sizeof(report)), static_cast<ssize_t>(sizeof(report)));
      sum.node_migrations += report.node_migrations;
      sum.cross_node_migrations += report.cross_node_migrations;
      sum.moving_ns += report.moving_ns;
      for (uint64_t n = 0; n < report.nodes && n < kMaxReportNodes; n++) {
        sum.oncpu_ns_by_node[static_cast<uint32_t>(report.oncpu[n].node)] += report.oncpu[n].ns;
      }
    }
    return sum;
  }
  // Lets them exit, and reaps them.
  void Finish() {
    if (pids_.empty()) return;
    const std::string done(children_, 'd');
    (void)!write(done_[1], done.data(), done.size());
    for (pid_t pid : pids_) EXPECT_EQ(WaitForChild(pid), 0);
    pids_.clear();
  }

 private:
  // What one child counted (Bounce moves among at most three CPUs: three nodes).
  static constexpr uint64_t kMaxReportNodes = 3;
  struct Report {
    uint64_t node_migrations = 0, cross_node_migrations = 0, moving_ns = 0, nodes = 0;
    struct {
      uint64_t node = 0, ns = 0;
    } oncpu[kMaxReportNodes];
  };

  const int children_;
  int ready_[2], go_[2], report_[2], done_[2];
  std::vector<pid_t> pids_;
};

}  // namespace stagewatch::testing
