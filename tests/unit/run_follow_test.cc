// `runs show --follow` against a real ledger another writer fills while it reads: every
// sample once, in order, then the run's verdict line when it ends.
#include "runs/run_follow.h"

#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runs_test_util.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using testing::At;
using testing::Started;
using testing::TempDir;

TEST(RunFollowTest, PrintsEachSampleAsItArrivesUntilTheRunEnds) {
  TempDir dir;
  const std::string path = dir.file("ledger.db");
  auto writer = *Ledger::Open(path);
  RunStart start = Started("live-1", "train", At(0));
  ASSERT_TRUE(writer->BeginRun(start).ok());
  auto reader = *Ledger::OpenForReading(path);
  std::thread launcher([&] {
    for (int batch = 0; batch < 3; ++batch) {
      std::vector<RunSample> points;
      for (int i = 1; i <= 2; ++i) {
        const int n = batch * 2 + i;
        points.push_back({.at = At(n), .memory_bytes = uint64_t(n) << 20,
                          .memory_limit_bytes = 64 << 20, .cpu_cores = 0.5});
      }
      EXPECT_TRUE(writer->AddSamples("live-1", points).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    RunEnd end{.end = At(7), .exit_code = 0};
    EXPECT_TRUE(writer->EndRun("live-1", end).ok());
  });
  std::ostringstream out;
  const absl::Status s = FollowRun(*reader, "live-1", RunsConfig{}, out, absl::Milliseconds(10));
  launcher.join();
  ASSERT_TRUE(s.ok()) << s;
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("run live-1 (stage train), started "));
  size_t at = 0;
  for (int n = 1; n <= 6; ++n) {
    const std::string line = absl::StrCat("memory ", n, ".00 MiB / 64.0 MiB  cpu 0.50 CPUs\n");
    const size_t found = text.find(line);
    ASSERT_NE(found, std::string::npos) << line << text;
    EXPECT_GT(found, at) << "in order";
    EXPECT_EQ(text.find(line, found + 1), std::string::npos) << "once";
    at = found;
  }
  EXPECT_THAT(text.substr(at), HasSubstr("run live-1 (stage train): "));

  std::ostringstream unknown;
  EXPECT_TRUE(absl::IsNotFound(FollowRun(*reader, "nope", RunsConfig{}, unknown)));
}

}  // namespace
}  // namespace stagewatch
