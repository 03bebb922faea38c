// The agent closing a run while the ledger's disk is full (a real SQLite ledger on a small
// tmpfs, a directory tree standing in for the keyed hierarchy): the end it computed is kept and
// written once there is room again, with its own time, not the time it was finally written.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "cgroup_event_for.h"
#include "gtest/gtest.h"
#include "runs/run_watcher.h"
#include "test_support.h"

namespace stagewatch::testing {
namespace {

TEST(RunWatcherFullDiskTest, AnEndTheLedgerCannotTakeIsWrittenLaterWithItsOwnTime) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  char tmpl[] = "/tmp/stagewatch-full-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string root = dir + "/cgroupfs";
  {
    SmallDisk disk(dir + "/small");
    ASSERT_TRUE(disk.mounted()) << strerror(errno);
    const std::string ledger_path = dir + "/small/ledger.db";
    StageResolver stages({}, DiscoveryConfig{});
    absl::StatusOr<std::unique_ptr<RunWatcher>> watcher =
        RunWatcher::Start(*Ledger::Open(ledger_path), &stages,
                          {.key_root = root, .oom_observed = true, .tick = absl::Milliseconds(20)},
                          {});
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    const std::string path = "/stagewatch/train/job_1";
    std::filesystem::create_directories(root + path);
    struct stat st;
    ASSERT_EQ(stat((root + path).c_str(), &st), 0);
    (*watcher)->OnCgroupEvent(CgroupEventFor(CGROUP_EVENT_MKDIR, st.st_ino, path));
    auto row = [&]() -> std::optional<RunRecord> {
      absl::StatusOr<std::unique_ptr<Ledger>> ledger = Ledger::OpenForReading(ledger_path);
      if (!ledger.ok()) return std::nullopt;
      absl::StatusOr<std::optional<RunRecord>> r = (*ledger)->Get("job_1");
      return r.ok() ? *r : std::nullopt;
    };
    ASSERT_TRUE(WaitUntil([&] { return row().has_value(); }, 5000)) << "recorded after 1 s";

    disk.Fill();
    std::filesystem::remove(root + path);
    const absl::Time removed = absl::Now();
    (*watcher)->OnCgroupEvent(CgroupEventFor(CGROUP_EVENT_RMDIR, st.st_ino, path));
    (*watcher)->Flush();
    absl::SleepFor(absl::Milliseconds(500));
    ASSERT_FALSE(row()->end) << "the disk was full";
    disk.Free();
    ASSERT_TRUE(WaitUntil([&] { return row()->end.has_value(); }, 5000));
    const RunRecord r = *row();
    EXPECT_EQ(r.end->closed_by, RunCloser::kAgent);
    EXPECT_NEAR(absl::ToDoubleSeconds(r.end->end - removed), 0, 0.1)
        << "ended when its cgroup went, not when the disk had room again";
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stagewatch::testing
