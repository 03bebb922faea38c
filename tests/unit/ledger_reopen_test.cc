// A ledger removed or replaced under an open Ledger (`rm ledger.db ledger.db-wal
// ledger.db-shm`): noticed, opened again at its path, open runs carried over with their facts and
// points, and not one more write to the removed file; readers serve the file at the path.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "exporters/pages/runs_pages.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runs/ledger.h"
#include "runs/runs_source.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::At;
using testing::Started;
using testing::TempDir;

namespace fs = std::filesystem;

// A removed file, still open here, to tell whether anyone writes to it.
class HeldFile {
 public:
  explicit HeldFile(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~HeldFile() {
    if (fd_ >= 0) close(fd_);
  }
  // Size and modification time, which any write changes.
  std::pair<off_t, int64_t> Written() const {
    struct stat st {};
    fstat(fd_, &st);
    return {st.st_size, st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec};
  }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

void RemoveLedger(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
}

RunEnd EndedAt(absl::Time at) {
  RunEnd end;
  end.end = at;
  end.exit_code = 0;
  end.facts.cpu_seconds = 1;
  return end;
}

TEST(LedgerReopenTest, ARemovedLedgerIsMadeAnewWithTheOpenRunsAndTheRemovedFileIsNotWritten) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto ledger = *Ledger::Open(path);
  ASSERT_TRUE(ledger->BeginRun(Started("open-1", "train", At(0))).ok());
  AgentFacts facts;
  facts.anomalies_observed = true;
  facts.anomalies.push_back({"memory_climb", At(5), "climbing"});
  ASSERT_TRUE(ledger->AddAgentFacts("open-1", facts).ok());
  ASSERT_TRUE(ledger->AddSamples("open-1", {{At(1), 100}, {At(2), 200}}).ok());
  ASSERT_TRUE(ledger->BeginRun(Started("done-1", "train", At(3))).ok());
  ASSERT_TRUE(ledger->EndRun("done-1", EndedAt(At(4))).ok());
  EXPECT_FALSE(ledger->Replaced());
  EXPECT_FALSE(*ledger->ReopenIfReplaced());

  HeldFile old_db(path), old_wal(path + "-wal");
  ASSERT_TRUE(old_db.ok() && old_wal.ok());
  RemoveLedger(path);
  EXPECT_TRUE(ledger->Replaced());
  const auto db_before = old_db.Written(), wal_before = old_wal.Written();

  RunStart not_in_old = Started("unknown-1", "train", At(6));  // held here, lost there
  absl::StatusOr<bool> reopened =
      ledger->ReopenIfReplaced({Started("open-1", "train", At(0)), not_in_old});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_TRUE(*reopened);
  EXPECT_FALSE(ledger->Replaced());
  ASSERT_TRUE(ledger->EndRun("open-1", EndedAt(At(10))).ok());
  ASSERT_TRUE(ledger->AddSamples("open-1", {{At(9), 300}}).ok());
  EXPECT_EQ(old_db.Written(), db_before) << "the removed ledger was written after the reopen";
  EXPECT_EQ(old_wal.Written(), wal_before) << "the removed -wal was written after the reopen";

  auto reader = *Ledger::OpenForReading(path);
  absl::StatusOr<std::vector<RunRecord>> runs = reader->List({});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u) << "the ended run stays in the removed file";
  const RunRecord& carried = runs->back();
  EXPECT_EQ(carried.start.id, "open-1");
  ASSERT_TRUE(carried.end);
  EXPECT_EQ(carried.end->end, At(10));
  ASSERT_EQ(carried.agent.anomalies.size(), 1u) << "its facts came along";
  EXPECT_EQ(carried.agent.anomalies[0].detail, "climbing");
  EXPECT_EQ(reader->Samples("open-1")->size(), 3u) << "its points came along";
  EXPECT_TRUE(*reader->Get("unknown-1")) << "a run the removed file lacks is begun anew";
}

TEST(LedgerReopenTest, AReplacedLedgerIsUsedAndARunAlreadyThereIsNotDoubled) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto agent = *Ledger::Open(path);
  ASSERT_TRUE(agent->BeginRun(Started("r1", "train", At(0))).ok());
  {
    // Another file takes the path (mv), where a launcher already carried r1 over and ended it.
    auto other = *Ledger::Open(dir.file("other.db"));
    ASSERT_TRUE(other->BeginRun(Started("r1", "train", At(0))).ok());
    ASSERT_TRUE(other->EndRun("r1", EndedAt(At(5))).ok());
  }
  RemoveLedger(path);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    fs::rename(dir.file("other.db") + suffix, path + suffix);
  }
  ASSERT_TRUE(*agent->ReopenIfReplaced({Started("r1", "train", At(0))}));
  auto reader = *Ledger::OpenForReading(path);
  absl::StatusOr<std::vector<RunRecord>> runs = reader->List({});
  ASSERT_EQ(runs->size(), 1u);
  ASSERT_TRUE(runs->front().end) << "the row that was there stays as it was";
  EXPECT_EQ(agent->EndRun("r1", EndedAt(At(6))).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(LedgerReopenTest, APathThatCannotBeOpenedAgainStopsEveryWriteUntilItCan) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto ledger = *Ledger::Open(path);
  ASSERT_TRUE(ledger->BeginRun(Started("r1", "train", At(0))).ok());
  HeldFile old_db(path), old_wal(path + "-wal");
  RemoveLedger(path);
  std::ofstream(dir.file("elsewhere")).close();
  ASSERT_EQ(symlink(dir.file("elsewhere").c_str(), path.c_str()), 0);
  const auto db_before = old_db.Written(), wal_before = old_wal.Written();

  absl::StatusOr<bool> reopened = ledger->ReopenIfReplaced({Started("r1", "train", At(0))});
  ASSERT_FALSE(reopened.ok());
  EXPECT_THAT(reopened.status().message(), HasSubstr("removed or replaced"));
  EXPECT_THAT(reopened.status().message(), HasSubstr("symbolic link"));
  EXPECT_FALSE(ledger->EndRun("r1", EndedAt(At(5))).ok());
  EXPECT_FALSE(ledger->BeginRun(Started("r2", "train", At(6))).ok());
  EXPECT_FALSE(ledger->AddSamples("r1", {{At(1), 1}}).ok());
  ASSERT_TRUE(ledger->BeginBatch().ok());  // a batch of writes that each fail
  EXPECT_FALSE(ledger->AddSamples("r1", {{At(2), 2}}).ok());
  ASSERT_TRUE(ledger->CommitBatch().ok());
  EXPECT_EQ(old_db.Written(), db_before);
  EXPECT_EQ(old_wal.Written(), wal_before);
  EXPECT_EQ(fs::file_size(dir.file("elsewhere")), 0u);

  fs::remove(path);
  ASSERT_TRUE(*ledger->ReopenIfReplaced({Started("r1", "train", At(0))}));
  EXPECT_TRUE(ledger->EndRun("r1", EndedAt(At(5))).ok());
}

TEST(LedgerReopenTest, ThePagesServeTheFileAtThePathNotARemovedOne) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  (*Ledger::Open(path))->BeginRun(Started("old-1", "train", At(0))).IgnoreError();
  LedgerRunsSource source(path, RunsConfig{});
  auto list = [&] {
    return exporters::AnswerRunsRequest(source, RunsConfig{}, {"/api/v1/runs", {}});
  };
  EXPECT_THAT(list().body, HasSubstr("old-1"));
  RemoveLedger(path);
  EXPECT_EQ(list().status, 503u) << "gone: nothing to serve";
  (*Ledger::Open(path))->BeginRun(Started("new-1", "train", At(1))).IgnoreError();
  const exporters::HttpReply reply = list();
  EXPECT_EQ(reply.status, 200u);
  EXPECT_THAT(reply.body, HasSubstr("new-1"));
  EXPECT_THAT(reply.body, ::testing::Not(HasSubstr("old-1")));
}

}  // namespace
}  // namespace stagewatch
