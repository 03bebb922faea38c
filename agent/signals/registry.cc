#include "absl/strings/str_cat.h"
#include "config/config.h"
#include "exporters/metrics/collector.h"
#include "signals/signal.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// Filled by the signals' own files as the program starts (static initialisation), read after.
std::vector<Signal>& Registered() {
  static std::vector<Signal> signals;
  return signals;
}

}  // namespace

bool RegisterSignal(Signal signal) {
  std::vector<Signal>& all = Registered();
  auto at = all.begin();
  while (at != all.end() && at->order <= signal.order) ++at;
  all.insert(at, std::move(signal));
  return true;
}

const std::vector<Signal>& Signals() { return Registered(); }

std::vector<std::string> CollectorFlagNames() {
  std::vector<std::string> names;
  for (const Signal& s : Signals()) {
    if (s.collector_flag) names.emplace_back(s.name);
  }
  return names;
}

absl::Status StartSignals(const std::vector<Signal>& signals, const SignalContext& ctx,
                          bool first) {
  absl::Status status;
  for (const Signal& s : signals) {
    if (s.starts_first != first) continue;
    if (s.collector_flag && !ctx.config.collectors.at(std::string(s.name))) continue;
    std::unique_ptr<exporters::Collector> collector = s.start(ctx);
    if (!collector) continue;
    // Where a collector's name meets its signal's: the scrape labels it collector="<name>",
    // and collectors.<name> switches it.
    if (!s.adds_collector || collector->name() != s.name || !ctx.collectors) {
      status.Update(absl::InternalError(absl::StrCat(
          "signal \"", ToAbsl(s.name), "\" made a collector named \"", ToAbsl(collector->name()),
          "\": a signal's collector is named after it, marked adds_collector, and made after "
          "the first phase")));
    }
    if (ctx.collectors) ctx.collectors->Add(std::move(collector));
  }
  return status;
}

}  // namespace stagewatch
