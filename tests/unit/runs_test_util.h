// Shared by the run tests: a temporary directory, and runs with given figures.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "absl/time/time.h"
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

}  // namespace stagewatch::testing
