// Launchers SIGKILLed at random moments of short runs, for the tests of runs whose launcher
// died (tests/e2e/runs_e2e_test.cc with an agent, tests/privileged/launcher_cleanup_test.cc
// without one): their commands run on, and the tests check when each run was closed.
#pragma once

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
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

// Starts `n` launchers, `launch(id, shell_command)` each, whose commands touch
// `<marker_dir>/started-<id>`, sleep 0.2 to 0.5 s and then touch `<marker_dir>/done-<id>` (their
// real end, to the file system's clock), and SIGKILLs each launcher at a random moment: about
// half of them 0 to 0.6 s after it was started (before, while or after its command runs), the
// others (at least one) while their command sleeps. Each launcher's moment counts from its own
// start or its command's, so that a slow start (emulation, where starting 15 launchers one
// after another takes seconds) cannot move every kill past the commands' ends. Both spans
// stretch by DeadlineScale(). Reaps the launchers.
inline KilledLaunches LaunchAndKillAtRandom(
    size_t n, const std::string& marker_dir,
    const std::function<std::unique_ptr<AgentProcess>(const std::string& id,
                                                      const std::string& command)>& launch) {
  KilledLaunches out{std::random_device{}(), {}};
  std::mt19937 random(out.seed);
  const double scale = DeadlineScale();
  std::uniform_real_distribution<double> length(0.2 * scale, 0.5 * scale),
      kill_at(0.0, 0.6 * scale), into_sleep(0.0, 0.8);
  std::bernoulli_distribution while_it_sleeps(0.5);
  struct Pending {
    size_t run;
    bool while_it_sleeps;
    absl::Time kill_at;  // absl::InfiniteFuture() until its command is seen to start
  };
  std::vector<Pending> pending;
  for (size_t i = 0; i < n; ++i) {
    const double seconds = length(random);
    const std::string id = "killed-" + std::to_string(i);
    const std::string command = absl::StrCat("touch ", marker_dir, "/started-", id, "; sleep ",
                                             seconds, "; exec touch ", marker_dir, "/done-", id);
    out.runs.push_back({id, seconds, launch(id, command)});
    const bool none_yet = std::none_of(pending.begin(), pending.end(),
                                       [](const Pending& p) { return p.while_it_sleeps; });
    const bool sleeping = while_it_sleeps(random) || (i + 1 == n && none_yet);
    const absl::Time at =
        sleeping ? absl::InfiniteFuture() : absl::Now() + absl::Seconds(kill_at(random));
    pending.push_back({i, sleeping, at});
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(10 * scale);
  while (!pending.empty()) {
    const absl::Time now = absl::Now();
    for (auto p = pending.begin(); p != pending.end();) {
      KilledLaunch& run = out.runs[p->run];
      struct stat started;
      if (p->kill_at == absl::InfiniteFuture() &&
          stat((marker_dir + "/started-" + run.id).c_str(), &started) == 0) {
        p->kill_at = absl::TimeFromTimespec(started.st_mtim) +
                     absl::Seconds(into_sleep(random) * run.seconds);
      }
      if (now >= p->kill_at || now >= give_up) {
        kill(run.launcher->pid(), SIGKILL);
        p = pending.erase(p);
      } else {
        ++p;
      }
    }
    absl::SleepFor(absl::Milliseconds(2));
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
