// `stagewatch run --cpuset-cpus/--cpuset-mems` for real: the command runs only on the CPUs and
// nodes asked for (as its own /proc/self/status tells), and a cpuset the host cannot give is
// refused before the command starts, with the kernel's words and what the host has, leaving no
// cgroup and no ledger row. The CPUs and nodes are picked from what the host and the test's
// cgroup offer (2 CPUs and one node here; 2 CPUs and two nodes in the cgroup2 VM), and where the
// cpuset controller is not there to be had, the runs are refused for that instead.
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "privileged/launcher_fixture.h"
#include "runs/ledger.h"
#include "test_support.h"

namespace stagewatch::testing {
namespace {

using ::testing::HasSubstr;

// "0-2,5" → {0, 1, 2, 5}.
std::vector<int> Expand(const std::string& list) {
  std::vector<int> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty() || item == "\n") continue;
    const size_t dash = item.find('-');
    const int lo = std::stoi(item.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
    for (int i = lo; i <= hi; ++i) out.push_back(i);
  }
  return out;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

class LauncherCpusetTest : public LauncherFixture {
 protected:
  // The test cgroup's directory holding its cpuset files; "" when it has no cpuset controller
  // (no v1 cpuset hierarchy; cgroup2 without cpuset delegated to it).
  std::string CpusetDir() {
    if (!cgroup_->v2()) return cgroup_->dir("cpuset");
    const std::string controllers = ReadFile(cgroup_->dir() + "/cgroup.controllers");
    return controllers.find("cpuset") == std::string::npos ? "" : cgroup_->dir();
  }
  // What the test cgroup offers its children.
  std::string Offered(const char* v1_file, const char* v2_file) {
    return Trimmed(ReadFile(CpusetDir() + (cgroup_->v2() ? v2_file : v1_file)));
  }
  std::string OfferedCpus() {
    return Offered("/cpuset.effective_cpus", "/cpuset.cpus.effective");
  }
  std::string OfferedMems() {
    return Offered("/cpuset.effective_mems", "/cpuset.mems.effective");
  }
  static std::string HostNodes() {
    if (!std::filesystem::exists("/sys/devices/system/node")) return "0";
    return Trimmed(ReadFile("/sys/devices/system/node/online"));
  }
  static std::string HostCpus() { return Trimmed(ReadFile("/sys/devices/system/cpu/online")); }

  // A run of `flags` that must be refused before its command ran, leaving nothing behind.
  std::string Refused(const std::string& id, const std::vector<std::string>& flags) {
    const std::string marker = dir_ + "/ran-" + id;
    AgentProcess run(Args("pin", id, flags, {"touch", marker}));
    EXPECT_EQ(run.WaitExit(20000), 125) << run.log();
    EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran";
    EXPECT_THAT(LeftBehind(), ::testing::IsEmpty()) << run.log();
    if (std::filesystem::exists(ledger_)) {
      absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::Open(ledger_);
      EXPECT_TRUE(ledger.ok()) << ledger.status();
      if (ledger.ok()) {
        absl::StatusOr<std::optional<RunRecord>> row = (*ledger)->Get(id);
        EXPECT_TRUE(row.ok() && !row->has_value()) << "the refused run " << id << " is recorded";
      }
    }
    return run.log();
  }
};

TEST_F(LauncherCpusetTest, TheCommandRunsOnlyOnTheCpusAndNodesAskedFor) {
  const std::string status = "grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status";
  if (CpusetDir().empty()) {
    const std::string log = Refused("pinned-1", {"--cpuset-cpus", "0"});
    EXPECT_THAT(log, HasSubstr("cpuset controller"));
    GTEST_SKIP() << "no cpuset controller for the test's cgroup: the refusal is all to check";
  }
  // The last CPU and the first node: a strict part of what the host has wherever it has two.
  const std::vector<int> cpus = Expand(OfferedCpus()), nodes = Expand(OfferedMems());
  ASSERT_FALSE(cpus.empty() || nodes.empty()) << OfferedCpus() << " / " << OfferedMems();
  const std::string cpu = std::to_string(cpus.back()), node = std::to_string(nodes.front());
  AgentProcess run(Args("pin", "pinned-1", {"--cpuset-cpus", cpu, "--cpuset-mems", node},
                        {"sh", "-c", status}));
  ASSERT_EQ(run.WaitExit(20000), 0) << run.log();
  EXPECT_THAT(run.log(), HasSubstr("Cpus_allowed_list:\t" + cpu + "\n"));
  EXPECT_THAT(run.log(), HasSubstr("Mems_allowed_list:\t" + node + "\n"));
  const RunRecord r = Recorded("pinned-1");
  EXPECT_EQ(r.start.limits.cpuset_cpus, cpu);
  EXPECT_EQ(r.start.limits.cpuset_mems, node);
  AgentProcess show({"runs", "show", "--ledger.path", ledger_, "pinned-1"});
  EXPECT_EQ(show.WaitExit(20000), 0) << show.log();
  EXPECT_THAT(show.log(), HasSubstr("cpuset-cpus " + cpu + ", cpuset-mems " + node));
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty());

  // Nodes alone: the CPUs stay all the test's cgroup has (a v1 cpuset starts with none).
  AgentProcess mems(Args("pin", "pinned-2", {"--cpuset-mems", node}, {"sh", "-c", status}));
  ASSERT_EQ(mems.WaitExit(20000), 0) << mems.log();
  EXPECT_THAT(mems.log(), HasSubstr("Cpus_allowed_list:\t" + OfferedCpus() + "\n"));
  EXPECT_THAT(mems.log(), HasSubstr("Mems_allowed_list:\t" + node + "\n"));
  EXPECT_EQ(Recorded("pinned-2").start.limits.cpuset_cpus, std::nullopt);
  EXPECT_THAT(LeftBehind(), ::testing::IsEmpty());
}

TEST_F(LauncherCpusetTest, CpusTheHostDoesNotHaveOnlineAreRefusedBeforeTheCommandStarts) {
  const std::string absent = std::to_string(Expand(HostCpus()).back() + 1);
  const std::string log = Refused("absent-cpu", {"--cpuset-cpus", absent});
  if (CpusetDir().empty()) {
    EXPECT_THAT(log, HasSubstr("cpuset controller"));
    return;
  }
  EXPECT_THAT(log, HasSubstr("stagewatch run: the kernel "));
  EXPECT_THAT(log, HasSubstr("--cpuset-cpus " + absent));
  EXPECT_THAT(log, HasSubstr("this host's online CPUs are " + HostCpus()));
}

TEST_F(LauncherCpusetTest, ANodeTheHostDoesNotHaveIsRefusedBeforeTheCommandStarts) {
  const std::string absent = std::to_string(Expand(HostNodes()).back() + 1);
  const std::string log = Refused("absent-node", {"--cpuset-mems", absent});
  if (CpusetDir().empty()) {
    EXPECT_THAT(log, HasSubstr("cpuset controller"));
    return;
  }
  EXPECT_THAT(log, HasSubstr("--cpuset-mems " + absent));
  EXPECT_THAT(log, HasSubstr("this host's online NUMA nodes are " + HostNodes()));
}

// A parent cgroup pinned to its first CPU: v1 refuses a child's other CPU outright, cgroup2
// takes it and silently gives the parent's instead; either way the run is refused.
TEST_F(LauncherCpusetTest, ACpuTheParentCgroupDoesNotOfferIsRefusedSayingWhatItOffers) {
  if (CpusetDir().empty()) GTEST_SKIP() << "no cpuset controller for the test's cgroup";
  const std::vector<int> cpus = Expand(OfferedCpus());
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU: no other to leave out";
  const std::string first = std::to_string(cpus.front()), last = std::to_string(cpus.back());
  WriteFile(CpusetDir() + "/cpuset.cpus", first);
  ASSERT_EQ(OfferedCpus(), first);
  const std::string log = Refused("outside-parent", {"--cpuset-cpus", last});
  EXPECT_THAT(log, HasSubstr("--cpuset-cpus " + last));
  EXPECT_THAT(log, HasSubstr("offers only " + first + ": ask for CPUs among what it offers"));
}

TEST_F(LauncherCpusetTest, AListThatDoesNotParseIsRefusedWithWhatIsWrongInIt) {
  const std::string log = Refused("bad-list", {"--cpuset-cpus", "1-"});
  EXPECT_THAT(log, HasSubstr("--cpuset-cpus \"1-\" is not a list of CPUs: the range \"1-\" has "
                             "no end; write numbers and ranges such as 0-3,8; this host's online "
                             "CPUs are " + HostCpus()));
}

}  // namespace
}  // namespace stagewatch::testing
