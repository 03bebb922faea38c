// The accuracy table's CPU rows: a stage's switches, exits, on-CPU time, CFS bandwidth and
// pressure on /metrics against what the kernel itself reports (wait4's rusage of every process
// the stage ran, cpu.stat, cpuacct, the cgroup's PSI files), and its task states against /proc.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "accuracy_support.h"

namespace stagewatch::accuracy {
namespace {

using testing::TestCgroup;
using testing::ValueOr;

// O_DIRECT writes, each synced, to a file on the root disk: every one waits for the device.
void WriteDirect(const std::string& path, int blocks) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_DSYNC, 0600);
  if (fd < 0) _exit(3);
  void* block = nullptr;
  if (posix_memalign(&block, 4096, 4096) != 0) _exit(4);
  memset(block, 0x5a, 4096);
  for (int i = 0; i < blocks; i++) {
    if (pwrite(fd, block, 4096, static_cast<off_t>(i) * 4096) != 4096) _exit(5);
  }
  close(fd);
}

struct Usage {
  double voluntary = 0, nonvoluntary = 0, cpu_s = 0;
  int processes = 0;
};

// Each child's switch counts as it starts its work, just after joining the stage's cgroup, kept
// in memory shared with the test: what it switched before joining (waiting for the CPU behind
// the agent's threads on a slow VM, dozens of times) is no switch of the stage's.
class SwitchesAtJoin {
 public:
  explicit SwitchesAtJoin(int processes)
      : processes_(processes),
        at_join_(static_cast<rusage*>(mmap(nullptr, sizeof(rusage) * processes,
                                           PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                           -1, 0))) {}
  ~SwitchesAtJoin() { munmap(at_join_, sizeof(rusage) * processes_); }

  // `body`, first noting the child's switches so far in slot `index`.
  std::function<void()> Noting(int index, std::function<void()> body) {
    rusage* slot = &at_join_[index];
    return [slot, body] {
      getrusage(RUSAGE_SELF, slot);
      body();
    };
  }
  const rusage& at(int index) const { return at_join_[index]; }

 private:
  int processes_;
  rusage* at_join_;
};

// Reaps `pid`, adding its switches since it joined (the slot its body noted) and its whole CPU
// time (an upper bound of its time in the stage).
void Reap(pid_t pid, const rusage& at_join, Usage* sum) {
  int status = 0;
  rusage ru{};
  ASSERT_EQ(wait4(pid, &status, 0, &ru), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  ASSERT_LE(at_join.ru_nvcsw + at_join.ru_nivcsw, ru.ru_nvcsw + ru.ru_nivcsw)
      << "the child never noted its switches at joining";
  sum->voluntary += ru.ru_nvcsw - at_join.ru_nvcsw;
  sum->nonvoluntary += ru.ru_nivcsw - at_join.ru_nivcsw;
  sum->cpu_s += ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
                ru.ru_stime.tv_usec * 1e-6;
  sum->processes++;
}

TEST(AccuracyE2E, SwitchesExitsCpuTimeThrottlingAndPressureMatchTheKernel) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  const std::string stage = StageName("sched");
  TestCgroup cgroup(stage, {"cpu", "cpuacct", "pressure"});
  cgroup.SetCpuQuota(10000);  // a tenth of a CPU: throttled periods and time, on a busy host too
  Agent agent(StageConfig(stage));
  ASSERT_TRUE(agent.Ready()) << agent.log();

  const std::string io_file = "/var/tmp/sw-accuracy-io-" + std::to_string(getpid());
  constexpr int kProcesses = 9;
  SwitchesAtJoin at_join(kProcesses);
  std::vector<pid_t> pids;
  auto spawn = [&](const std::string& comm, std::function<void()> body) {
    ASSERT_LT(static_cast<int>(pids.size()), kProcesses);
    pids.push_back(cgroup.Spawn(comm, at_join.Noting(static_cast<int>(pids.size()), body)));
  };
  // Voluntary switches: 1000 short sleeps, lasting past the hogs, so that some periods are
  // not throttled.
  spawn("sw-acc-sleeper", [] {
    for (int i = 0; i < 1000; i++) usleep(1000);
  });
  // Nonvoluntary ones: two hogs sharing CPU 0, under the quota.
  for (int i = 0; i < 2; i++) {
    spawn("sw-acc-hog", [] {
      testing::PinTo(0);
      testing::BusyFor(std::chrono::milliseconds(1000));
    });
  }
  // I/O pressure, and no memory pressure: synced direct writes.
  spawn("sw-acc-io", [&] { WriteDirect(io_file, 300); });
  // Processes that only exit.
  for (int i = 0; i < 5; i++) spawn("sw-acc-exit", [] {});
  Usage truth;
  for (size_t i = 0; i < pids.size(); i++) Reap(pids[i], at_join.at(static_cast<int>(i)), &truth);
  unlink(io_file.c_str());

  const std::string cpu_stat = cgroup.dir("cpu") + "/cpu.stat";
  const std::string psi_dir = cgroup.dir("pressure");
  const std::string exits = Series("stagewatch_processes_exited_total", stage);
  testing::Scrape m;
  // Exits and switches reach /metrics at the next collection once the cgroup is named.
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = agent.Scrape();
        return ValueOr(m, exits, 0) == truth.processes;
      },
      5000))
      << "exits " << ValueOr(m, exits, -1) << " of " << truth.processes << "\n" << agent.log();
  // Everything has exited: the files stand still but for a last period or PSI update, so a
  // scrape between two reads of each file must lie between them.
  const double periods0 = testing::KeyedValue(cpu_stat, "nr_periods");
  const double throttled0 = testing::KeyedValue(cpu_stat, "nr_throttled");
  const Pressure cpu0 = ReadPressure(psi_dir + "/cpu.pressure");
  const Pressure mem0 = ReadPressure(psi_dir + "/memory.pressure");
  const Pressure io0 = ReadPressure(psi_dir + "/io.pressure");
  // These series come from the sampler's snapshot (memory.sample_interval 100ms here): wait for
  // one taken after the reads above, each of its counters at least theirs. Usage and throttled
  // time stand still now, so those must be reached exactly.
  const double usage_s = cgroup.CpuUsageNs() * 1e-9;
  const double throttled0_s = cgroup.v2() ? testing::KeyedValue(cpu_stat, "throttled_usec") * 1e-6
                                          : testing::KeyedValue(cpu_stat, "throttled_time") * 1e-9;
  auto at_least = [&](const std::string& family, double floor) {
    return ValueOr(m, Series(family, stage), -1) >= floor - 1e-6;
  };
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        m = agent.Scrape();
        return at_least("stagewatch_cgroup_cpu_usage_seconds_total", usage_s) &&
               at_least("stagewatch_cpu_cfs_throttled_seconds_total", throttled0_s) &&
               at_least("stagewatch_cpu_cfs_periods_total", periods0) &&
               at_least("stagewatch_cpu_cfs_throttled_periods_total", throttled0) &&
               at_least("stagewatch_pressure_cpu_waiting_seconds_total", cpu0.some) &&
               at_least("stagewatch_pressure_cpu_stalled_seconds_total", cpu0.full) &&
               at_least("stagewatch_pressure_memory_waiting_seconds_total", mem0.some) &&
               at_least("stagewatch_pressure_memory_stalled_seconds_total", mem0.full) &&
               at_least("stagewatch_pressure_io_waiting_seconds_total", io0.some) &&
               at_least("stagewatch_pressure_io_stalled_seconds_total", io0.full);
      },
      5000))
      << "the snapshot never caught up with cgroupfs: cpu usage "
      << ValueOr(m, Series("stagewatch_cgroup_cpu_usage_seconds_total", stage), -1) << " of "
      << usage_s << " s\n" << agent.log();
  const double periods1 = testing::KeyedValue(cpu_stat, "nr_periods");
  const double throttled1 = testing::KeyedValue(cpu_stat, "nr_throttled");
  const double throttled_s = cgroup.v2() ? testing::KeyedValue(cpu_stat, "throttled_usec") * 1e-6
                                         : testing::KeyedValue(cpu_stat, "throttled_time") * 1e-9;
  const Pressure cpu1 = ReadPressure(psi_dir + "/cpu.pressure");
  const Pressure mem1 = ReadPressure(psi_dir + "/memory.pressure");
  const Pressure io1 = ReadPressure(psi_dir + "/io.pressure");

  const double vol = ValueOr(m, Series("stagewatch_context_switches_total", stage,
                                       "ctxswitchtype=\"voluntary\""), -1);
  const double invol = ValueOr(m, Series("stagewatch_context_switches_total", stage,
                                         "ctxswitchtype=\"nonvoluntary\""), -1);
  const double oncpu = ValueOr(m, Series("stagewatch_cpu_seconds_total", stage), -1);
  std::printf("switches voluntary %.0f (rusage %.0f), nonvoluntary %.0f (rusage %.0f); on-cpu "
              "%.4f s (cgroup usage %.4f s, rusage %.4f s); periods %.0f throttled %.0f (%.4f s); psi cpu %.4f/%.4f "
              "memory %.4f/%.4f io %.4f/%.4f s\n",
              vol, truth.voluntary, invol, truth.nonvoluntary, oncpu, usage_s, truth.cpu_s, periods1,
              throttled1, throttled_s, cpu1.some, cpu1.full, mem1.some, mem1.full, io1.some,
              io1.full);
  // The truth counts from each process's first step of work. The stage also has the switches
  // within the write that joined it and the steps before that first one (a throttled group
  // preempts a task as it joins): 1.0-1.4 a process here and in the VM, three at most.
  const double slack = 3.0 * truth.processes;
  EXPECT_GE(vol, 0.98 * truth.voluntary);
  EXPECT_LE(vol, truth.voluntary + slack);
  EXPECT_GE(invol, 0.98 * truth.nonvoluntary);
  EXPECT_LE(invol, truth.nonvoluntary + slack);
  // CPU time in the stage is what the cgroup's own usage counts; rusage also has each child's
  // steps before it joined (a few ms each under the VM stage's emulation), so it bounds from
  // above only.
  EXPECT_NEAR(oncpu, usage_s, 0.005 + 0.02 * usage_s);
  EXPECT_LE(oncpu, truth.cpu_s + 0.005 + 0.02 * truth.cpu_s);
  EXPECT_NEAR(ValueOr(m, Series("stagewatch_cgroup_cpu_usage_seconds_total", stage), -1),
              cgroup.CpuUsageNs() * 1e-9, 1e-6);

  auto between = [](double value, double lo, double hi) {
    return value >= lo - 1e-6 && value <= hi + 1e-6;
  };
  auto metric = [&](const std::string& family) { return ValueOr(m, Series(family, stage), -1); };
  EXPECT_PRED3(between, metric("stagewatch_cpu_cfs_periods_total"), periods0, periods1);
  EXPECT_PRED3(between, metric("stagewatch_cpu_cfs_throttled_periods_total"), throttled0, throttled1);
  EXPECT_NEAR(metric("stagewatch_cpu_cfs_throttled_seconds_total"), throttled_s, 1e-6);
  EXPECT_PRED3(between, metric("stagewatch_pressure_cpu_waiting_seconds_total"), cpu0.some, cpu1.some);
  EXPECT_PRED3(between, metric("stagewatch_pressure_cpu_stalled_seconds_total"), cpu0.full, cpu1.full);
  EXPECT_PRED3(between, metric("stagewatch_pressure_memory_waiting_seconds_total"), mem0.some, mem1.some);
  EXPECT_PRED3(between, metric("stagewatch_pressure_memory_stalled_seconds_total"), mem0.full, mem1.full);
  EXPECT_PRED3(between, metric("stagewatch_pressure_io_waiting_seconds_total"), io0.some, io1.some);
  EXPECT_PRED3(between, metric("stagewatch_pressure_io_stalled_seconds_total"), io0.full, io1.full);

  // The workload makes each pair of figures differ, so a swapped feed cannot pass.
  EXPECT_GT(truth.voluntary, 2 * truth.nonvoluntary + 50);
  EXPECT_GT(throttled1, 0);
  EXPECT_GT(periods1, throttled1 + 2);
  EXPECT_GT(cpu1.some, cpu1.full + 0.005);
  // io pressure needs a block device beneath the file: the VM stage's /var/tmp is 9p or tmpfs
  // (an anonymous device, major 0), where both io figures are 0 and only their equality holds.
  struct stat var_tmp {};
  if (stat("/var/tmp", &var_tmp) == 0 && major(var_tmp.st_dev) != 0) {
    // Measured 15-21 ms of io against 0 of memory; a swapped feed then lies outside [io0, io1].
    EXPECT_GT(io0.some, mem1.some + 0.002);
  } else {
    std::printf("/var/tmp is on no block device: io and memory PSI are told apart on hosts only\n");
  }
}

// The state letter in /proc/<tid>/stat of every task the kernel lists in `dir`, from the
// file the agent reads (v1 `tasks`, v2 `cgroup.threads`).
std::map<char, int> ProcStates(const TestCgroup& cgroup) {
  std::map<char, int> states;
  const std::string list = cgroup.dir() + (cgroup.v2() ? "/cgroup.threads" : "/tasks");
  for (absl::string_view tid : absl::StrSplit(testing::ReadFile(list), '\n', absl::SkipEmpty())) {
    const std::string stat = testing::ReadFile("/proc/" + std::string(tid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size()) states[stat[paren + 2]]++;
  }
  return states;
}

// stagewatch_tasks of a stage holding threads in every state, against /proc, from the task
// iterator (`iterator`) or from the cgroup's task list and /proc (memory.task_iterator: false).
void ExpectTaskStatesMatchProc(bool iterator) {
  const std::string stage = StageName(iterator ? "tasks" : "tasks-proc");
  TestCgroup cgroup(stage);
  Agent agent(StageConfig(stage, iterator ? "" : "  task_iterator: false\n"));
  ASSERT_TRUE(agent.Ready()) << agent.log();
  const std::string probe = R"(stagewatch_probe_attached{probe="task_states",attach_type=)";
  EXPECT_EQ(ValueOr(agent.Scrape(), probe + (iterator ? R"("iter"})" : R"(""})"), -1),
            iterator ? 1 : 0);

  for (int i = 0; i < 3; i++) cgroup.Spawn("sw-acc-sleep", [] { pause(); });
  for (int i = 0; i < 2; i++) ASSERT_GT(cgroup.SpawnStopped("sw-acc-stop"), 0);
  cgroup.SpawnUninterruptible("sw-acc-vfork");
  // Three hogs on one CPU: at most one running, the others runnable.
  for (int i = 0; i < 3; i++) {
    cgroup.Spawn("sw-acc-spin", [] {
      testing::PinTo(1);
      testing::BusyFor(std::chrono::milliseconds(60000));  // past the /proc count's 15 s
    });
  }
  const std::map<char, int> want = {{'D', 1}, {'R', 3}, {'S', 4}, {'T', 2}};
  ASSERT_TRUE(testing::WaitUntil([&] { return ProcStates(cgroup) == want; }, 3000)) << [&] {
    std::string got;
    for (const auto& [state, n] : ProcStates(cgroup)) got += std::string(1, state) + "=" + std::to_string(n) + " ";
    return got;
  }();

  auto state = [&](const testing::Scrape& s, const std::string& name) {
    return ValueOr(s, Series("stagewatch_tasks", stage, "state=\"" + name + "\""), -1);
  };
  std::map<char, int> truth;
  testing::Scrape m;
  // Counted on the sampler's clock: every 5 s from the iterator, every 15 s from /proc.
  const bool settled = testing::WaitUntil(
      [&] {
        truth = ProcStates(cgroup);
        m = agent.Scrape();
        return ProcStates(cgroup) == truth &&
               state(m, "running") + state(m, "runnable") == truth['R'] &&
               state(m, "uninterruptible") == truth['D'] && state(m, "sleeping") == truth['S'] &&
               state(m, "stopped") == truth['T'] && state(m, "zombie") == truth['Z'];
      },
      iterator ? 10000 : 20000);
  std::printf("/proc: R %d D %d S %d T %d Z %d; /metrics: running %.0f runnable %.0f "
              "uninterruptible %.0f sleeping %.0f stopped %.0f zombie %.0f\n",
              truth['R'], truth['D'], truth['S'], truth['T'], truth['Z'], state(m, "running"),
              state(m, "runnable"), state(m, "uninterruptible"), state(m, "sleeping"),
              state(m, "stopped"), state(m, "zombie"));
  EXPECT_TRUE(settled) << agent.log();
  EXPECT_LE(state(m, "running"), 1);  // one CPU for the three
  EXPECT_GE(state(m, "runnable"), 2);
}

TEST(AccuracyE2E, TaskStatesMatchProc) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  ExpectTaskStatesMatchProc(/*iterator=*/true);
}

TEST(AccuracyE2E, TaskStatesMatchProcWithoutTheTaskIterator) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  ExpectTaskStatesMatchProc(/*iterator=*/false);
  // `features` says which source is in use, and why.
  const std::string config = testing::WriteTempConfig("memory:\n  task_iterator: false\n");
  const std::string off = testing::RunWithInput(
      absl::StrCat(STAGEWATCH_BINARY, " --config.file ", config, " features 2>&1"), "").second;
  unlink(config.c_str());
  EXPECT_NE(off.find("task_states          -               NOT attached: turned off by "
                     "memory.task_iterator: false; task states are read from /proc"),
            std::string::npos) << off;
  const std::string on =
      testing::RunWithInput(absl::StrCat(STAGEWATCH_BINARY, " features 2>&1"), "").second;
  EXPECT_NE(on.find("task_states          iter            attached"), std::string::npos) << on;
}

}  // namespace
}  // namespace stagewatch::accuracy
