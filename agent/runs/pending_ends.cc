#include "runs/pending_ends.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "runs/run_id.h"
#include "runs/run_placement_json.h"

namespace stagewatch {
namespace {

using nlohmann::json;

// Far more than an end takes (about 700 bytes of JSON).
constexpr off_t kReservedBytes = 8192;
constexpr char kReserved[] = ".reserved";
constexpr char kKept[] = ".end";

std::string FileOf(const std::string& ledger_path, const std::string& id, const char* suffix) {
  return absl::StrCat(PendingEndsDir(ledger_path), "/", id, suffix);
}

template <typename T>
void Put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
template <typename T>
void Get(const json& j, const char* key, std::optional<T>& v) {
  if (j.contains(key) && !j[key].is_null()) v = j[key].get<T>();
}

json EndToJson(const RunEnd& end) {
  const CgroupFacts& f = end.facts;
  json facts = json::object();
  Put(facts, "memory_limit_bytes", f.memory_limit_bytes);
  if (!f.memory_by_node.empty()) facts["memory_by_node"] = MemoryByNodeJson(f.memory_by_node);
  Put(facts, "memory_peak_bytes", f.memory_peak_bytes);
  Put(facts, "memory_failcnt", f.memory_failcnt);
  Put(facts, "memory_mean_bytes", f.memory_mean_bytes);
  Put(facts, "memory_p95_bytes", f.memory_p95_bytes);
  Put(facts, "near_limit_seconds", f.near_limit_seconds);
  Put(facts, "oom_kills_kernel", f.oom_kills_kernel);
  Put(facts, "cpu_seconds", f.cpu_seconds);
  Put(facts, "cpu_throttled_seconds", f.cpu_throttled_seconds);
  Put(facts, "cpu_throttled_wall_seconds", f.cpu_throttled_wall_seconds);
  Put(facts, "cpu_p95_cores", f.cpu_p95_cores);
  Put(facts, "memory_pressure_seconds", f.memory_pressure_seconds);
  Put(facts, "cpu_pressure_seconds", f.cpu_pressure_seconds);
  Put(facts, "io_pressure_seconds", f.io_pressure_seconds);
  json j = {{"end_unix_ns", absl::ToUnixNanos(end.end)},
            {"closed_by", end.closed_by == RunCloser::kAgent ? "agent" : "launcher"},
            {"signal_requested", end.signal_requested},
            {"facts", facts}};
  Put(j, "exit_code", end.exit_code);
  Put(j, "signal", end.signal);
  return j;
}

absl::StatusOr<RunEnd> EndFromJson(const std::string& text) {
  try {
    const json j = json::parse(text);
    RunEnd end;
    end.end = absl::FromUnixNanos(j.at("end_unix_ns").get<int64_t>());
    end.closed_by = j.at("closed_by") == "agent" ? RunCloser::kAgent : RunCloser::kLauncher;
    end.signal_requested = j.at("signal_requested").get<bool>();
    Get(j, "exit_code", end.exit_code);
    Get(j, "signal", end.signal);
    const json& facts = j.at("facts");
    CgroupFacts& f = end.facts;
    Get(facts, "memory_limit_bytes", f.memory_limit_bytes);
    Get(facts, "memory_peak_bytes", f.memory_peak_bytes);
    Get(facts, "memory_failcnt", f.memory_failcnt);
    Get(facts, "memory_mean_bytes", f.memory_mean_bytes);
    Get(facts, "memory_p95_bytes", f.memory_p95_bytes);
    Get(facts, "near_limit_seconds", f.near_limit_seconds);
    Get(facts, "oom_kills_kernel", f.oom_kills_kernel);
    Get(facts, "cpu_seconds", f.cpu_seconds);
    Get(facts, "cpu_throttled_seconds", f.cpu_throttled_seconds);
    Get(facts, "cpu_throttled_wall_seconds", f.cpu_throttled_wall_seconds);
    Get(facts, "cpu_p95_cores", f.cpu_p95_cores);
    Get(facts, "memory_pressure_seconds", f.memory_pressure_seconds);
    Get(facts, "cpu_pressure_seconds", f.cpu_pressure_seconds);
    Get(facts, "io_pressure_seconds", f.io_pressure_seconds);
    if (facts.contains("memory_by_node")) {
      f.memory_by_node = MemoryByNodeFrom(facts["memory_by_node"]);
    }
    return end;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not a kept run end: ", e.what()));
  }
}

std::string ReadSmall(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Errno(const char* what, const std::string& path) {
  return absl::StrFormat("%s %s: %s", what, path, std::strerror(errno));
}

// Records the end kept in `path` for run `id`; true when the file can go.
bool Record(Ledger& ledger, const std::string& id, const std::string& path,
            PendingImport& out) {
  absl::StatusOr<RunEnd> end = EndFromJson(ReadSmall(path));
  if (!end.ok()) {  // still being written, or damaged: it stays for a look
    out.problems.push_back(absl::StrCat(path, ": ", end.status().message()));
    return false;
  }
  absl::Status s = ledger.EndRun(id, *end);
  if (s.ok()) out.recorded.push_back(id);
  if (s.ok() || absl::IsFailedPrecondition(s) || absl::IsNotFound(s)) return true;
  out.problems.push_back(absl::StrCat(path, ": ", s.message()));
  return false;
}

}  // namespace

std::string PendingEndsDir(const std::string& ledger_path) {
  return ledger_path + ".pending";
}

absl::Status ReservePendingEnd(const std::string& ledger_path, const std::string& id) {
  const std::string dir = PendingEndsDir(ledger_path);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(Errno("cannot make", dir));
  }
  const std::string path = FileOf(ledger_path, id, kReserved);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(Errno("cannot create", path));
  // The blocks are allocated now, the size stays 0 (an empty reservation holds no end).
  const int rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, kReservedBytes);
  const int error = errno;
  close(fd);
  if (rc != 0) {
    unlink(path.c_str());
    errno = error;
    return absl::UnavailableError(Errno("cannot allocate room in", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> KeepPendingEnd(const std::string& ledger_path, const std::string& id,
                                           const RunEnd& end) {
  const std::string reserved = FileOf(ledger_path, id, kReserved);
  const std::string kept = FileOf(ledger_path, id, kKept);
  mkdir(PendingEndsDir(ledger_path).c_str(), 0755);  // no reservation: try all the same
  const int fd = open(reserved.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(Errno("cannot open", reserved));
  const std::string text = EndToJson(end).dump() + "\n";
  const bool written = pwrite(fd, text.data(), text.size(), 0) ==
                           static_cast<ssize_t>(text.size()) &&
                       ftruncate(fd, static_cast<off_t>(text.size())) == 0 && fsync(fd) == 0;
  const int error = errno;
  close(fd);
  if (!written) {
    errno = error;
    return absl::UnavailableError(Errno("cannot write the run's end to", reserved));
  }
  // Renamed, so the agent's ticks find it by name; where that fails it stays in the
  // reservation, which the next `stagewatch run` or `runs list` reads too.
  if (rename(reserved.c_str(), kept.c_str()) != 0) return reserved;
  if (const int dir = open(PendingEndsDir(ledger_path).c_str(), O_RDONLY | O_CLOEXEC); dir >= 0) {
    fsync(dir);
    close(dir);
  }
  return kept;
}

void DropPendingEnd(const std::string& ledger_path, const std::string& id) {
  unlink(FileOf(ledger_path, id, kReserved).c_str());
}

bool HasKeptEnds(const std::string& ledger_path) {
  const std::string dir = PendingEndsDir(ledger_path);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    struct stat st;
    found = name.ends_with(kKept) ||
            (name.ends_with(kReserved) && stat((dir + "/" + name).c_str(), &st) == 0 &&
             st.st_size > 0);
    if (found) break;
  }
  closedir(d);
  return found;
}

PendingImport ImportPendingEnds(Ledger& ledger, bool reservations_too) {
  PendingImport out;
  const std::string dir = PendingEndsDir(ledger.path());
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;  // nothing was ever kept
  std::vector<std::pair<std::string, std::string>> kept, reserved;  // (id, file)
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    for (auto [suffix, list] : {std::pair{kKept, &kept}, std::pair{kReserved, &reserved}}) {
      const std::string_view s = suffix;
      if (name.size() > s.size() && name.ends_with(s)) {
        std::string id = name.substr(0, name.size() - s.size());
        if (CheckRunId(id).ok()) list->push_back({std::move(id), dir + "/" + name});
      }
    }
  }
  closedir(d);
  for (const auto& [id, path] : kept) {
    if (Record(ledger, id, path, out)) unlink(path.c_str());
  }
  if (!reservations_too) return out;
  for (const auto& [id, path] : reserved) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    if (st.st_size > 0) {
      if (Record(ledger, id, path, out)) unlink(path.c_str());
      continue;
    }
    // An empty reservation belongs to a run still going, unless the run has ended (its
    // launcher died, and someone else closed it) or is unknown.
    absl::StatusOr<std::optional<RunRecord>> run = ledger.Get(id);
    if (run.ok() && (!*run || (*run)->end)) unlink(path.c_str());
  }
  return out;
}

}  // namespace stagewatch
