// Shared by the run tests: a temporary directory, and runs with given figures.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "runs/run_record.h"

namespace stagewatch::testing {

// A fresh directory under /tmp, removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/stagewatch-runs-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A time zone from the system's tzdata (Debian's tzdata package); UTC, failing the test, if
// it is missing.
inline absl::TimeZone LoadZone(const std::string& name) {
  absl::TimeZone zone;
  EXPECT_TRUE(absl::LoadTimeZone(name, &zone)) << "no time zone " << name << ": install tzdata";
  return zone;
}

inline absl::Time At(int64_t seconds) { return absl::FromUnixSeconds(1'790'000'000 + seconds); }

inline RunStart Started(const std::string& id, const std::string& stage, absl::Time at) {
  RunStart s;
  s.id = id;
  s.stage = stage;
  s.command = {"python3", "validate.py"};
  s.cgroup_path = "/stagewatch/" + stage + "/" + id;
  s.start = at;
  return s;
}

// A run of `wall_seconds` that an agent watched and that nothing disturbed: one task busy all
// the time, every fact observed and none of them lost time.
inline RunRecord WatchedRun(const std::string& id, const std::string& stage, absl::Time start,
                            double wall_seconds) {
  RunRecord r;
  r.start = Started(id, stage, start);
  RunEnd end;
  end.end = start + absl::Seconds(wall_seconds);
  end.exit_code = 0;
  end.facts.oom_kills_kernel = 0;
  end.facts.memory_limit_bytes = 200 << 20;
  end.facts.memory_peak_bytes = 100 << 20;
  end.facts.cpu_seconds = wall_seconds;
  end.facts.cpu_throttled_seconds = 0;
  end.facts.cpu_pressure_seconds = 0;
  end.facts.memory_pressure_seconds = 0;
  end.facts.near_limit_seconds = 0;
  r.end = end;
  r.agent_observed = true;
  r.agent.oom_kills_userspace = 0;
  r.agent.reclaim_stall_seconds = 0;
  r.agent.run_queue_wait_seconds = 0;
  r.agent.preemptors_observed = true;
  r.agent.anomalies_observed = true;
  return r;
}

}  // namespace stagewatch::testing
