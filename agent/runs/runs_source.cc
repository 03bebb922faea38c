#include "runs/runs_source.h"

#include "absl/strings/str_cat.h"

namespace stagewatch {

template <typename F>
auto LedgerRunsSource::WithLedger(F read) -> decltype(read(std::declval<Ledger&>())) {
  std::lock_guard lock(mu_);
  if (ledger_ && ledger_->Replaced()) ledger_.reset();
  if (!ledger_) {
    absl::StatusOr<std::unique_ptr<Ledger>> opened = Ledger::OpenForReading(path_, judging_);
    if (!opened.ok()) {
      return absl::UnavailableError(
          absl::StrCat("the run ledger cannot be read: ", opened.status().message()));
    }
    ledger_ = *std::move(opened);
  }
  return read(*ledger_);
}

absl::StatusOr<RunPage> LedgerRunsSource::List(const RunFilter& filter) {
  return WithLedger([&](Ledger& l) { return l.ListPage(filter); });
}

absl::StatusOr<std::optional<RunRecord>> LedgerRunsSource::Get(const std::string& id) {
  return WithLedger([&](Ledger& l) { return l.Get(id); });
}

absl::StatusOr<std::vector<RunSample>> LedgerRunsSource::Samples(const std::string& id) {
  return WithLedger([&](Ledger& l) { return l.Samples(id); });
}

absl::StatusOr<std::vector<RunRecord>> LedgerRunsSource::CleanRunsBefore(const RunStart& run,
                                                                         int n) {
  return WithLedger([&](Ledger& l) { return l.CleanRunsBefore(run, n); });
}

absl::Status LedgerRunsSource::Read(const std::function<absl::Status(Ledger&)>& read) {
  return WithLedger([&](Ledger& l) { return read(l); });
}

}  // namespace stagewatch
