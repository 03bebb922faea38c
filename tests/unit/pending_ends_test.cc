// Run ends kept beside the ledger while it cannot take them, on a real directory and a real
// SQLite ledger: room reserved on disk at the start, the end written into it with every figure,
// and recorded later with the time and exit code it had, not when it was recorded.
#include "runs/pending_ends.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using testing::TempDir;

class PendingEndsTest : public ::testing::Test {
 protected:
  PendingEndsTest() : path_(dir_.file("ledger.db")) {
    ledger_ = *Ledger::Open(path_);
    for (const char* id : {"r1", "r2", "r3"}) {
      EXPECT_TRUE(ledger_->BeginRun(testing::Started(id, "train", start_)).ok());
    }
  }
  bool Exists(const std::string& name) {
    return std::filesystem::exists(PendingEndsDir(path_) + "/" + name);
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Ledger> ledger_;
  const absl::Time start_ = absl::FromUnixMillis(1'790'000'000'000);
};

TEST_F(PendingEndsTest, AKeptEndIsRecordedLaterWithItsOwnTimeAndFigures) {
  ASSERT_TRUE(ReservePendingEnd(path_, "r1").ok());
  struct stat st;
  ASSERT_EQ(stat((PendingEndsDir(path_) + "/r1.reserved").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0) << "an empty reservation holds no end";
  EXPECT_GE(st.st_blocks * 512, 4096) << "its room is allocated already";

  RunEnd end{.end = start_ + absl::Milliseconds(2500), .exit_code = 3};
  end.facts.memory_peak_bytes = 123456789;
  end.facts.cpu_seconds = 1.25;
  end.facts.oom_kills_kernel = 0;
  absl::StatusOr<std::string> kept = KeepPendingEnd(path_, "r1", end);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, PendingEndsDir(path_) + "/r1.end");
  EXPECT_FALSE(Exists("r1.reserved"));
  EXPECT_TRUE(HasKeptEnds(path_));

  const PendingImport imported = ImportPendingEnds(*ledger_, false);
  EXPECT_EQ(imported.recorded, std::vector<std::string>{"r1"});
  EXPECT_TRUE(imported.problems.empty());
  EXPECT_FALSE(Exists("r1.end"));
  EXPECT_FALSE(HasKeptEnds(path_));
  const RunRecord r = **ledger_->Get("r1");
  ASSERT_TRUE(r.end);
  EXPECT_EQ(absl::ToUnixMillis(r.end->end), absl::ToUnixMillis(end.end));
  EXPECT_EQ(r.end->exit_code, 3);
  EXPECT_EQ(r.end->closed_by, RunCloser::kLauncher);
  EXPECT_EQ(r.end->facts.memory_peak_bytes, 123456789u);
  EXPECT_EQ(r.end->facts.cpu_seconds, 1.25);
  EXPECT_EQ(r.end->facts.oom_kills_kernel, 0u);
  EXPECT_FALSE(r.end->facts.memory_limit_bytes) << "unknown stays unknown";
}

TEST_F(PendingEndsTest, AnEndWithoutAReservationIsKeptInAFileOfItsOwn) {
  RunEnd end{.end = start_ + absl::Seconds(1), .signal = 15, .signal_requested = true};
  ASSERT_TRUE(KeepPendingEnd(path_, "r2", end).ok());
  EXPECT_EQ(ImportPendingEnds(*ledger_, false).recorded, std::vector<std::string>{"r2"});
  const RunRecord r = **ledger_->Get("r2");
  EXPECT_EQ(r.end->signal, 15);
  EXPECT_TRUE(r.end->signal_requested);
}

TEST_F(PendingEndsTest, ReservationsOfRunsGoingOnStayAndOthersGo) {
  ASSERT_TRUE(ReservePendingEnd(path_, "r1").ok());  // still going
  ASSERT_TRUE(ReservePendingEnd(path_, "r2").ok());  // ended by someone else since
  ASSERT_TRUE(ledger_->EndRun("r2", {.end = start_ + absl::Seconds(1)}).ok());
  ASSERT_TRUE(ReservePendingEnd(path_, "gone").ok());  // no such run
  // An end of a run closed meanwhile is not written twice, and its file goes.
  ASSERT_TRUE(KeepPendingEnd(path_, "r2", {.end = start_ + absl::Seconds(9)}).ok());
  ASSERT_TRUE(ImportPendingEnds(*ledger_, false).recorded.empty());
  EXPECT_FALSE(Exists("r2.end"));
  EXPECT_TRUE(Exists("gone.reserved")) << "the agent's ticks read names only";
  ASSERT_TRUE(ImportPendingEnds(*ledger_, true).recorded.empty());
  EXPECT_TRUE(Exists("r1.reserved"));
  EXPECT_FALSE(Exists("gone.reserved"));
  EXPECT_EQ(absl::ToUnixMillis((*ledger_->Get("r2"))->end->end),
            absl::ToUnixMillis(start_ + absl::Seconds(1)));
}

TEST_F(PendingEndsTest, ADamagedEndStaysWithItsReason) {
  std::filesystem::create_directories(PendingEndsDir(path_));
  std::ofstream(PendingEndsDir(path_) + "/r3.end") << "{\"end_unix_ns\": ";
  const PendingImport imported = ImportPendingEnds(*ledger_, true);
  EXPECT_TRUE(imported.recorded.empty());
  ASSERT_EQ(imported.problems.size(), 1u);
  EXPECT_NE(imported.problems[0].find("r3.end"), std::string::npos) << imported.problems[0];
  EXPECT_TRUE(Exists("r3.end"));
  EXPECT_FALSE((*ledger_->Get("r3"))->end);
}

}  // namespace
}  // namespace stagewatch
