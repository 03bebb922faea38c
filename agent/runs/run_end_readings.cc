#include "runs/run_end_readings.h"

#include <type_traits>

namespace stagewatch {
namespace {

template <typename T>
void AddFigure(std::optional<T>& into, const std::optional<T>& more) {
  if (!more) return;
  if (!into) {
    into = more;
    return;
  }
  if constexpr (std::is_arithmetic_v<T>) {
    *into += *more;
  } else if constexpr (requires { more->first; }) {
    into->first += more->first;
    into->second += more->second;
  } else {
    for (const auto& [key, value] : *more) (*into)[key] += value;
  }
}

}  // namespace

void AddReadings(RunEndReadings& into, const RunEndReadings& more) {
  AddFigure(into.run_queue_wait_seconds, more.run_queue_wait_seconds);
  AddFigure(into.run_queue_throttled_seconds, more.run_queue_throttled_seconds);
  AddFigure(into.reclaim_stall_seconds, more.reclaim_stall_seconds);
  AddFigure(into.preemptions, more.preemptions);
  AddFigure(into.migrations, more.migrations);
  AddFigure(into.cpu_seconds_by_node, more.cpu_seconds_by_node);
}

}  // namespace stagewatch
