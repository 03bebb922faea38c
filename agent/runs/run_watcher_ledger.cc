// RunWatcher's part in a ledger removed or replaced under the agent (`rm ledger.db*`): the
// path is opened again, a new ledger made when it is gone, and the runs the agent holds open
// are carried over, so that their facts and ends land in the file everyone else sees.
#include <utility>
#include <vector>

#include "log.h"
#include "runs/run_watcher.h"

namespace stagewatch {

void RunWatcher::KeepLedgerCurrent() {
  if (!ledger_->Replaced()) return;  // one stat a pass
  std::vector<RunStart> carry;
  for (const auto& [key, run] : open_) {
    if (run.recorded) carry.push_back(run.start);
  }
  absl::StatusOr<bool> reopened = ledger_->ReopenIfReplaced(carry);
  if (!reopened.ok() && ledger_->Replaced()) {  // still the removed file: nothing is written
    if (!std::exchange(ledger_lost_, true)) {
      Warn("not recording runs until the run ledger's path can be opened again (tried at "
           "every pass)", "", reopened.status());
    }
    return;
  }
  if (!reopened.ok()) {  // open again, but not every run came along
    Warn("the run ledger was removed or replaced and is open again", "", reopened.status());
  } else if (!*reopened) {
    return;
  } else {
    Log::Warn("the run ledger was removed or replaced: reopened its path, runs are recorded "
              "in the file there now",
              {{"ledger", ledger_->path()}, {"open_runs_carried", carry.size()}});
  }
  ledger_lost_ = false;
  // Launchers ask the lock beside the ledger whether an agent adds a run's end facts.
  if (absl::StatusOr<AgentPresence> presence = AgentPresence::Announce(ledger_->path());
      presence.ok()) {
    presence_ = *std::move(presence);
  }
}

}  // namespace stagewatch
