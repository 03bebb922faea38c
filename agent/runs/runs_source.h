// What the agent's run pages read: recent runs, one run, and its time series. The ledger is
// one implementation (LedgerRunsSource); the pages know nothing of SQLite.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runs/ledger.h"
#include "runs/run_record.h"

namespace stagewatch {

class RunsSource {
 public:
  virtual ~RunsSource() = default;
  virtual absl::StatusOr<RunPage> List(const RunFilter& filter) = 0;
  virtual absl::StatusOr<std::optional<RunRecord>> Get(const std::string& id) = 0;
  virtual absl::StatusOr<std::vector<RunSample>> Samples(const std::string& id) = 0;
  // The run's baseline candidates (Ledger::CleanRunsBefore).
  virtual absl::StatusOr<std::vector<RunRecord>> CleanRunsBefore(const RunStart& run, int n) = 0;
};

// Reads the ledger at `path`, opened (read-only) at the first request that finds it readable:
// the agent may start before the first `stagewatch run` creates it. Until then every call
// fails Unavailable with the reason. A ledger removed or replaced since is opened again (or,
// when gone, is Unavailable): the pages never show a file nobody else sees. One connection,
// used by one request at a time; verdicts are judged with `judging`.
class LedgerRunsSource : public RunsSource {
 public:
  LedgerRunsSource(std::string path, RunsConfig judging)
      : path_(std::move(path)), judging_(std::move(judging)) {}
  absl::StatusOr<RunPage> List(const RunFilter& filter) override;
  absl::StatusOr<std::optional<RunRecord>> Get(const std::string& id) override;
  absl::StatusOr<std::vector<RunSample>> Samples(const std::string& id) override;
  absl::StatusOr<std::vector<RunRecord>> CleanRunsBefore(const RunStart& run, int n) override;
  // Any other read, on the same connection as these (pipelines_source.h).
  absl::Status Read(const std::function<absl::Status(Ledger&)>& read);

 private:
  template <typename F>
  auto WithLedger(F read) -> decltype(read(std::declval<Ledger&>()));

  std::string path_;
  const RunsConfig judging_;
  std::mutex mu_;
  std::unique_ptr<Ledger> ledger_;
};

}  // namespace stagewatch
