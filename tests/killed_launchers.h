// Launchers SIGKILLed at random moments of short runs, for the tests of runs whose launcher
// died (tests/e2e/runs_e2e_test.cc with an agent, tests/privileged/launcher_cleanup_test.cc
// without one): their commands run on, and the tests check when each run was closed.
#pragma once

#include <signal.h>
#include <sys/stat.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runs/run_record.h"
#include "test_support.h"

namespace stagewatch::testing {

struct KilledLaunch {
  std::string id;
  double seconds;  // how long its command sleeps
  std::unique_ptr<AgentProcess> launcher;
};

struct KilledLaunches {
  unsigned seed;  // for the failure messages: the random moments can be made again
  std::vector<KilledLaunch> runs;
};

// Starts `n` launchers, `launch(id, shell_command)` each, whose commands sleep 0.2 to 0.5 s and
// then touch `<marker_dir>/done-<id>` (their real end, to the file system's clock); SIGKILLs
// each launcher at a random moment 0 to 0.6 s after they all started, and reaps them. Both
// spans stretch by DeadlineScale(), so that under emulation, where a launcher takes a good part
// of a second to start, most launchers still die while their command runs.
inline KilledLaunches LaunchAndKillAtRandom(
    size_t n, const std::string& marker_dir,
    const std::function<std::unique_ptr<AgentProcess>(const std::string& id,
                                                      const std::string& command)>& launch) {
  KilledLaunches out{std::random_device{}(), {}};
  std::mt19937 random(out.seed);
  const double scale = DeadlineScale();
  std::uniform_real_distribution<double> length(0.2 * scale, 0.5 * scale),
      kill_at(0.0, 0.6 * scale);
  std::multimap<double, size_t> kills;
  for (size_t i = 0; i < n; ++i) {
    const double seconds = length(random);
    const std::string id = "killed-" + std::to_string(i);
    const std::string command =
        absl::StrCat("sleep ", seconds, "; exec touch ", marker_dir, "/done-", id);
    out.runs.push_back({id, seconds, launch(id, command)});
    kills.insert({kill_at(random), i});
  }
  const absl::Time launched = absl::Now();
  for (const auto& [at, i] : kills) {
    absl::SleepFor(launched + absl::Seconds(at) - absl::Now());
    kill(out.runs[i].launcher->pid(), SIGKILL);
  }
  for (KilledLaunch& run : out.runs) run.launcher->WaitExit(10000);
  return out;
}

// The run's real length: from its start to its command's last act (its marker); 0 where its
// command never ran.
inline double RealSeconds(const std::string& marker_dir, const RunRecord& r) {
  struct stat done;
  if (stat((marker_dir + "/done-" + r.start.id).c_str(), &done) != 0) return 0;
  return absl::ToDoubleSeconds(absl::TimeFromTimespec(done.st_mtim) - r.start.start);
}

}  // namespace stagewatch::testing
