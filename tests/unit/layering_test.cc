// The rooms of the source tree and the directions includes may run between them
// (docs/architecture.md, "Rooms"), and the collectors as pure adapters of what was collected on
// the sampler's clock. A failure names the file and the include or line to move.
#include <filesystem>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "source_scan.h"

namespace stagewatch {
namespace {

using testing::kSourceDir;
using testing::QuotedIncludes;
using testing::SourceFiles;
using testing::SourceText;

// Lower rooms first; a file may include its own room's files and lower rooms' only.
enum Room {
  kBpf,        // bpf/: the kernel programs and the structs they share with the agent
  kCore,       // agent/: probes, trackers, cgroupfs, stages, sampler, detectors, runs, config
  kMetrics,    // exporters/metrics/: registry, builders, exposition, collectors
  kServing,    // exporters/{http,pages,alerting}/: what serves and sends them
  kWiring,     // agent/app/, main.cc, agent/signals/*.{h,cc}, each <name>_signal.cc
  kNotOurs,    // generated headers (skeletons, version.h) and third-party ones
};

const char* RoomName(Room room) {
  static const char* const kNames[] = {"bpf", "core", "exporters/metrics",
                                       "exporters/{http,pages,alerting}", "wiring", "?"};
  return kNames[room];
}

bool Exists(const std::string& file) { return std::filesystem::is_regular_file(kSourceDir / file); }

Room RoomOf(const std::string& file) {
  const std::filesystem::path path(file);
  const std::string dir = path.parent_path().string();
  if (file.starts_with("bpf/")) return kBpf;
  if (file.starts_with("exporters/metrics/")) return kMetrics;
  if (file.starts_with("exporters/")) return kServing;
  if (file.starts_with("agent/app/") || file == "agent/main.cc" || dir == "agent/signals") {
    return kWiring;
  }
  // agent/signals/<name>/<name>_signal.cc registers the signal: its probe and tracker are core.
  if (file.starts_with("agent/signals/") && file.ends_with("_signal.cc")) return kWiring;
  if (file.starts_with("agent/")) return kCore;
  return kNotOurs;
}

// The file an include names: relative to agent/ (as the build's include path has it), to the
// source tree, or to the including file's folder; empty for a file not in the tree.
std::string Resolve(const std::string& from, const std::string& include) {
  const std::string folder = std::filesystem::path(from).parent_path().string();
  for (const std::string& candidate :
       {"agent/" + include, include, folder + "/" + include}) {
    const std::string normal = std::filesystem::path(candidate).lexically_normal().string();
    if (Exists(normal)) return normal;
  }
  return "";
}

// Includes across rooms of one level that are allowed: pages are handlers of the HTTP server.
bool PeerAllowed(const std::string& from, const std::string& to) {
  return from.starts_with("exporters/pages/") && to.starts_with("exporters/http/");
}

std::vector<std::string> AllSources() {
  std::vector<std::string> files;
  for (const char* dir : {"agent", "exporters", "bpf"}) {
    for (std::string& f : SourceFiles(dir)) files.push_back(std::move(f));
  }
  return files;
}

TEST(LayeringTest, NoIncludeRunsFromALowerRoomToAHigherOne) {
  const std::vector<std::string> files = AllSources();
  ASSERT_GT(files.size(), 100u);
  size_t across = 0;
  for (const std::string& file : files) {
    const Room from = RoomOf(file);
    for (const std::string& include : QuotedIncludes(file)) {
      const std::string target = Resolve(file, include);
      if (target.empty()) continue;
      const Room to = RoomOf(target);
      if (to == from) {
        const bool serving_peer = from == kServing && std::filesystem::path(file).parent_path() !=
                                                          std::filesystem::path(target).parent_path();
        EXPECT_TRUE(!serving_peer || PeerAllowed(file, target))
            << file << " includes " << target << ": the rooms of exporters/ do not include "
            << "one another (only pages include the HTTP server's types)";
        continue;
      }
      ++across;
      EXPECT_LT(to, from) << file << " (" << RoomName(from) << ") includes " << target << " ("
                          << RoomName(to) << "), a higher room: move what it needs down, into "
                          << RoomName(from) << " or below";
    }
  }
  EXPECT_GT(across, 100u);  // the scan resolved the includes at all
}

// A file under agent/signals/<name>/ is that signal's: another signal's files are reached
// through RunningSignals::Find or the SignalBus, from the registration, never by include from
// a probe or tracker.
TEST(LayeringTest, ASignalsProbeAndTrackerIncludeNoOtherSignal) {
  static const std::regex kSignal(R"(^agent/signals/([a-z_]+)/)");
  size_t seen = 0;
  for (const std::string& file : SourceFiles("agent/signals")) {
    std::smatch own;
    if (!std::regex_search(file, own, kSignal) || RoomOf(file) == kWiring) continue;
    ++seen;
    for (const std::string& include : QuotedIncludes(file)) {
      const std::string target = Resolve(file, include);
      std::smatch other;
      if (std::regex_search(target, other, kSignal)) {
        EXPECT_EQ(other[1], own[1]) << file << " includes " << target << ", another signal's";
      }
    }
  }
  EXPECT_GE(seen, 10u);
}

// Collectors adapt what was collected on the sampler's clock: they include no probe, hold
// trackers only as const (the collection that reads BPF maps is not const), and open no file.
// The agent's own metrics (agent_collector, process_collector) are the exception the
// architecture names: they describe this process and its programs.
TEST(LayeringTest, CollectorsReadNothingAtScrapeTime) {
  static const std::regex kProbeInclude(R"((_probe|\.skel)\.h$)");
  static const std::regex kConstTracker(R"(const\s+\w*Tracker\s*[*&])");
  static const std::regex kAnyTracker(R"(\b\w*Tracker\s*[*&])");
  static const std::regex kFileIo(
      R"(\b(std::ifstream|std::ofstream|fopen|open|openat|ReadFile|ReadSmallFile|opendir)\s*\()");
  size_t collectors = 0;
  for (const std::string& file : SourceFiles("exporters/metrics")) {
    if (file.find("_collector.") == std::string::npos || file.find("/collector.") != std::string::npos) {
      continue;
    }
    ++collectors;
    for (const std::string& include : QuotedIncludes(file)) {
      EXPECT_FALSE(std::regex_search(include, kProbeInclude))
          << file << " includes " << include
          << ": a collector adapts its tracker's last collection, never its probe";
    }
    const bool own_process = file.find("/agent_collector.") != std::string::npos ||
                             file.find("/process_collector.") != std::string::npos;
    const std::string text = SourceText(file);
    const size_t trackers = std::distance(
        std::sregex_iterator(text.begin(), text.end(), kAnyTracker), std::sregex_iterator());
    const size_t const_trackers = std::distance(
        std::sregex_iterator(text.begin(), text.end(), kConstTracker), std::sregex_iterator());
    EXPECT_EQ(trackers, const_trackers)
        << file << " holds a tracker it may change: take it as const; its signal collects it "
        << "in a sample hook (RunningSignals::sample_hooks)";
    if (!own_process) {
      EXPECT_FALSE(std::regex_search(text, kFileIo))
          << file << " opens a file at scrape time: read it on the sampler's clock instead";
    }
  }
  EXPECT_GE(collectors, 10u);  // headers and sources of oom, sched, memory, runs, ...
}

}  // namespace
}  // namespace stagewatch
