// The placement readers on real cgroups: memory.numa_stat against memory.stat, and effective
// cpusets against what the kernel lets a task of the cgroup use (/proc/<pid>/status
// Cpus_allowed_list, Mems_allowed_list), read directly and through the sampler. Written for
// any number of nodes and both cgroup versions: on a one-node host the memory is all on node 0;
// the two-node cases (memory bound to the other node) run in the VM stage (tests/vm).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/ascii.h"
#include "cgroup/cgroup_namer.h"
#include "cgroup/cpu_list.h"
#include "cgroup/cpuset.h"
#include "cgroup/numa_stat.h"
#include "cgroup/path_cache.h"
#include "cgroup/proc_cgroup.h"
#include "gtest/gtest.h"
#include "unit/metric_values.h"
#include "sampler/memory_sampler.h"
#include "exporters/metrics/placement_memory_series.h"
#include "stages/stage_resolver.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::ReadFile;
using testing::TestCgroup;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kTouched = 64 * kMiB;

// The kernel's anonymous memory of a cgroup: v2 memory.stat anon, v1 total_rss.
uint64_t MemoryStatAnon(const TestCgroup& cgroup) {
  return testing::KeyedValue(cgroup.dir("memory") + "/memory.stat",
                             cgroup.v2() ? "anon" : "total_rss");
}

// A line of /proc/<pid>/status ("Cpus_allowed_list", ...), without its name.
std::string StatusField(pid_t pid, const std::string& name) {
  std::istringstream status(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(name + ":", 0) == 0) {
      return std::string(absl::StripAsciiWhitespace(line.substr(name.size() + 1)));
    }
  }
  return "";
}

// A child of `cgroup` that touches kTouched of anonymous memory on a CPU of node 0, then
// waits; once the kernel charged it.
pid_t SpawnToucher(TestCgroup& cgroup, int cpu) {
  const pid_t pid = cgroup.SpawnJoined("sw-numa-touch", [cpu] {
    testing::PinTo(cpu);  // the kernel allocates on the node of the CPU the task runs on
    testing::TouchAnonymous(kTouched);
    pause();
  });
  EXPECT_GT(pid, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return MemoryStatAnon(cgroup) >= kTouched; }, 5000))
      << "memory.stat says " << MemoryStatAnon(cgroup);
  return pid;
}

uint64_t AnonOf(const NumaMemory& m) {
  uint64_t sum = 0;
  for (const auto& [node, bytes] : m) sum += bytes.anon_bytes;
  return sum;
}

TEST(PlacementReadersTest, NumaStatAnonMatchesMemoryStatAndSitsOnTheNodeItRanOn) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  absl::StatusOr<NumaTopology> host = ReadNumaTopology();
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_FALSE(host->node_cpus.begin()->second.empty());
  const int node = host->node_cpus.begin()->first;
  const int cpu = host->node_cpus.begin()->second.front();
  TestCgroup cgroup("sw-numa/run");
  SpawnToucher(cgroup, cpu);

  absl::StatusOr<NumaMemory> numa = ReadNumaStat(cgroup.layout(), cgroup.path());
  ASSERT_TRUE(numa.ok()) << numa.status();
  const uint64_t stat_anon = MemoryStatAnon(cgroup);
  std::printf("[ figures  ] numa_stat anon %.1f MiB (node %d %.1f MiB), memory.stat %.1f MiB\n",
              double(AnonOf(*numa)) / kMiB, node, double((*numa)[node].anon_bytes) / kMiB,
              double(stat_anon) / kMiB);
  EXPECT_NEAR(double(AnonOf(*numa)), double(stat_anon), 0.03 * double(stat_anon));
  EXPECT_GE((*numa)[node].anon_bytes, 0.9 * kTouched);  // the node of the CPU it ran on

  // The hierarchical figure: the cgroup above the run holds the run's memory too.
  const std::string parent = cgroup.path().substr(0, cgroup.path().rfind('/'));
  absl::StatusOr<NumaMemory> above = ReadNumaStat(cgroup.layout(), parent);
  ASSERT_TRUE(above.ok()) << above.status();
  EXPECT_GE(AnonOf(*above), AnonOf(*numa));
}

TEST(PlacementReadersTest, EffectiveCpusetIsWhatTheKernelLetsItsTaskUse) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  absl::StatusOr<NumaTopology> host = ReadNumaTopology();
  ASSERT_TRUE(host.ok()) << host.status();
  TestCgroup cgroup("sw-cpuset/run");
  const pid_t pid = cgroup.SpawnJoined("sw-cpuset", [] { pause(); });
  ASSERT_GT(pid, 0);
  absl::StatusOr<EffectiveCpuset> c = ReadEffectiveCpuset(cgroup.layout(), cgroup.path(), *host);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(FormatCpuList(c->cpus), StatusField(pid, "Cpus_allowed_list")) << c->dir;
  EXPECT_EQ(FormatCpuList(c->mems), StatusField(pid, "Mems_allowed_list")) << c->dir;
}

// A cpuset cgroup of this test's own, pinned to one CPU and one node: in the v1 cpuset
// hierarchy beneath this process's own cpuset cgroup, or on cgroup2 a TestCgroup with the
// cpuset controller enabled down to it. Everything it made or enabled is undone as it goes.
class PinnedCpuset {
 public:
  PinnedCpuset(const CgroupLayout& layout, int cpu, int node) : layout_(layout) {
    if (auto v1 = layout.v1_roots.find("cpuset"); v1 != layout.v1_roots.end()) {
      absl::StatusOr<std::string> text = ReadOwnProcCgroupText();
      absl::StatusOr<std::string> own =
          text.ok() ? ParseProcCgroupOf(*text, "cpuset") : text.status();
      if (!own.ok()) {
        why_ = std::string(own.status().message());
        return;
      }
      path_ = (*own == "/" ? "" : *own) + "/sw-test-cpuset-" + std::to_string(getpid());
      dir_ = v1->second + path_;
      if (mkdir(dir_.c_str(), 0755) != 0) {
        why_ = "cannot create " + dir_ + ": " + strerror(errno);
        return;
      }
      made_ = true;
    } else {
      cgroup_ = std::make_unique<TestCgroup>("sw-pinned/run");
      path_ = cgroup_->path();
      dir_ = layout.v2_root + path_;
      // From the tests' base down to the leaf's parent, each level gives cpuset to the next.
      std::string at = dir_.substr(0, dir_.rfind('/'));
      std::vector<std::string> levels;
      for (int i = 0; i < 3; i++, at = at.substr(0, at.rfind('/'))) {
        levels.insert(levels.begin(), at);
      }
      for (const std::string& level : levels) {
        if (ReadFile(level + "/cgroup.subtree_control").find("cpuset") != std::string::npos) {
          continue;
        }
        std::ofstream control(level + "/cgroup.subtree_control");
        control << "+cpuset";
        control.flush();
        if (!control) {
          why_ = "cannot enable the cpuset controller in " + level +
                 " (is it delegated to the tests' cgroup?)";
          return;
        }
        enabled_.push_back(level);
      }
    }
    testing::WriteFile(dir_ + "/cpuset.cpus", std::to_string(cpu));  // the same name in v1 and v2
    testing::WriteFile(dir_ + "/cpuset.mems", std::to_string(node));
  }
  ~PinnedCpuset() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (made_ && rmdir(dir_.c_str()) != 0) {
      ADD_FAILURE() << "cannot remove " << dir_ << ": " << strerror(errno);
    }
    cgroup_.reset();
    for (auto it = enabled_.rbegin(); it != enabled_.rend(); ++it) {
      std::ofstream(*it + "/cgroup.subtree_control") << "-cpuset";
    }
  }
  // Why it could not be made; "" when it was.
  const std::string& why() const { return why_; }
  const std::string& path() const { return path_; }  // in the cpuset's hierarchy
  // A child in it, waiting.
  pid_t Spawn() {
    pid_ = cgroup_ ? cgroup_->SpawnJoined("sw-pinned", [] { pause(); })
                   : testing::SpawnIn({dir_}, "sw-pinned", [] { pause(); });
    testing::WaitUntil([&] { return testing::ReadFile(dir_ + "/cgroup.procs").find(
                                        std::to_string(pid_)) != std::string::npos; },
                       2000);
    return pid_;
  }

 private:
  CgroupLayout layout_;
  std::unique_ptr<TestCgroup> cgroup_;  // cgroup2
  std::string path_, dir_, why_;
  bool made_ = false;
  std::vector<std::string> enabled_;
  pid_t pid_ = -1;
};

TEST(PlacementReadersTest, PinnedCpusetReadsAsWritten) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  absl::StatusOr<NumaTopology> host = ReadNumaTopology();
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  ASSERT_TRUE(layout.ok()) << layout.status();
  // Of what this process's own cpuset allows, the last CPU and the first node: not the whole
  // host where it has two CPUs.
  absl::StatusOr<std::vector<int>> cpus =
      ParseCpuList(StatusField(getpid(), "Cpus_allowed_list"), "/proc/self/status");
  absl::StatusOr<std::vector<int>> mems =
      ParseCpuList(StatusField(getpid(), "Mems_allowed_list"), "/proc/self/status");
  ASSERT_TRUE(cpus.ok() && !cpus->empty()) << cpus.status();
  ASSERT_TRUE(mems.ok() && !mems->empty()) << mems.status();
  const int cpu = cpus->back();
  const int node = mems->front();
  PinnedCpuset pinned(*layout, cpu, node);
  if (!pinned.why().empty()) GTEST_SKIP() << pinned.why();
  const pid_t pid = pinned.Spawn();
  ASSERT_GT(pid, 0);
  absl::StatusOr<EffectiveCpuset> c = ReadEffectiveCpuset(*layout, pinned.path(), *host);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(FormatCpuList(c->cpus), std::to_string(cpu));
  EXPECT_EQ(FormatCpuList(c->mems), std::to_string(node));
  EXPECT_EQ(StatusField(pid, "Cpus_allowed_list"), std::to_string(cpu));
  // Beneath it, a path with no cgroup of its own takes its cpuset.
  c = ReadEffectiveCpuset(*layout, pinned.path() + "/not-made/run-1", *host);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cpus, std::vector<int>{cpu});
}

TEST(PlacementReadersTest, SamplerPutsEachStagesNodesAndCpusetInTheSnapshotAndItsSeries) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  absl::StatusOr<NumaTopology> host = ReadNumaTopology();
  ASSERT_TRUE(host.ok()) << host.status();
  TestCgroup stage("stagewatch/sw-placed");
  TestCgroup run(stage, "run");  // on cgroup v2 processes live in leaves
  const int node = host->node_cpus.begin()->first;
  const pid_t toucher = SpawnToucher(run, host->node_cpus.begin()->second.front());
  // The toucher pinned itself; a task that did not shows what the cpuset allows.
  const pid_t pid = run.SpawnJoined("sw-placed-wait", [] { pause(); });
  ASSERT_GT(pid, 0);

  CgroupPathCache paths(stage.layout().key_root);
  StageResolver stages({}, DiscoveryConfig{});
  CgroupNamer namer(&paths, &stages, absl::ZeroDuration());
  MemorySampler sampler(&namer, stage.layout(), MemoryConfig{}, SampleReader{},
                        kMemoryPart | kPlacementPart);
  const StageId id = stages.Resolve(stage.path()).id;
  sampler.SampleOnce(absl::FromUnixSeconds(1000));
  std::shared_ptr<const Snapshot> s = sampler.Latest();
  ASSERT_TRUE(s->numa_topology);
  EXPECT_EQ(s->numa_topology->online_cpus, host->online_cpus);
  auto p = s->placement.find(id);
  ASSERT_NE(p, s->placement.end());
  ASSERT_TRUE(p->second->numa.has_value()) << s->placement_error;
  const uint64_t stat_anon = MemoryStatAnon(stage);
  EXPECT_NEAR(double(AnonOf(*p->second->numa)), double(stat_anon), 0.03 * double(stat_anon));
  ASSERT_TRUE(p->second->cpus && p->second->mems);
  EXPECT_EQ(FormatCpuList(*p->second->cpus), StatusField(pid, "Cpus_allowed_list"));
  EXPECT_EQ(FormatCpuList(*p->second->mems), StatusField(pid, "Mems_allowed_list"));

  // The families, from this snapshot: the toucher's CPU time (the kernel's, in the first field
  // of /proc/<pid>/schedstat) all ran on `node`, where the kernel put its memory, so little of
  // it is remote.
  std::vector<double> seconds(node + 1, 0.0);
  seconds[node] =
      std::stod(ReadFile("/proc/" + std::to_string(toucher) + "/schedstat")) * 1e-9;
  ASSERT_GT(seconds[node], 0);
  const exporters::StageNodeCpuSeconds cpu = {{id, seconds}};
  const Stage named = stages.Resolve(stage.path());
  std::vector<prometheus::MetricFamily> families;
  exporters::AppendPlacementMemorySeries(*s, {named}, &cpu, &families);
  const testing::SeriesLabels labels = {{"pipeline_stage", named.name}};
  auto with = [&](testing::SeriesLabels extra) {
    extra.insert(labels.begin(), labels.end());
    return extra;
  };
  double anon = 0;
  for (int n : host->Nodes()) {
    anon += std::max(0.0, testing::ValueOf(families, "stagewatch_memory_numa_bytes",
                                           with({{"numa_node", std::to_string(n)},
                                                 {"type", "anon"}})));
  }
  EXPECT_NEAR(anon, double(stat_anon), 0.03 * double(stat_anon));
  const double remote = testing::ValueOf(families, "stagewatch_memory_remote_ratio", labels);
  EXPECT_GE(remote, 0);
  EXPECT_LE(remote, 0.1);
  EXPECT_EQ(testing::ValueOf(families, "stagewatch_cpuset_cpus", labels),
            double(ParseCpuList(StatusField(pid, "Cpus_allowed_list"), "status")->size()));
  EXPECT_EQ(testing::ValueOf(families, "stagewatch_cpuset_info",
                             with({{"cpus", StatusField(pid, "Cpus_allowed_list")},
                                   {"mems", StatusField(pid, "Mems_allowed_list")}})),
            1);

  // Without the placement part nothing of it is read.
  MemorySampler plain(&namer, stage.layout(), MemoryConfig{}, SampleReader{}, kMemoryPart);
  plain.SampleOnce(absl::FromUnixSeconds(1000));
  EXPECT_TRUE(plain.Latest()->placement.empty());
  EXPECT_FALSE(plain.Latest()->numa_topology);
}

}  // namespace
}  // namespace stagewatch
