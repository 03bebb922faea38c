// Nothing under agent/runs/ opens a cgroupfs file itself: a run's figures come from the readers
// in agent/cgroup/ (the same the sampler uses, with one cache of open files), and its cgroups
// are made, written and removed through the helpers there. A second reader of a cgroupfs fact
// drifts from the first (a v1 name, a parse, a missing-file rule); this scan keeps it out.
//
// Three rules, over the sources with their comments removed:
//  - no string in agent/runs/ names a cgroupfs file or mount (memory.max, "/cpu.stat",
//    /sys/fs/cgroup, /proc/self/cgroup): those names live in agent/cgroup/;
//  - a call that opens, reads, makes or removes a file or directory (open, fopen, an fstream,
//    opendir, mkdir, rmdir, stat, ReadCgroupFile, ...) appears only in the files listed below,
//    which open the ledger's own files and /proc/<pid>/stat;
//  - and there, no such call's argument speaks of a cgroup.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

const std::filesystem::path kRuns = std::filesystem::path(STAGEWATCH_SOURCE_DIR) / "agent/runs";

// The files of agent/runs/ that may open files at all, and why: none of them is a cgroup's.
const std::set<std::string> kMayOpen = {
    "agent_presence.cc",  // the ledger's lock file
    "pending_ends.cc",    // the ledger's directory of pending run ends
    "orphan_runs.cc",     // /proc/<pid>/stat of a launcher, to tell whether it is the same
    "cpuset_request.cc",  // /sys/devices/system/{cpu,node}/online: the host's CPUs and nodes
    "ledger.cc",          // SQLite's files
    "ledger_path.cc",     "ledger_reopen.cc", "ledger_schema.cc", "ledger_list.cc",
};

// `text` with its comments blanked (newlines kept, so that line numbers hold) and its string
// and character literals left as they are.
std::string WithoutComments(const std::string& text) {
  std::string out = text;
  enum { kCode, kLine, kBlock, kString, kChar } state = kCode;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    switch (state) {
      case kCode:
        if (c == '/' && next == '/') state = kLine;
        else if (c == '/' && next == '*') state = kBlock;
        else if (c == '"') state = kString;
        else if (c == '\'') state = kChar;
        if (state == kLine || state == kBlock) out[i] = ' ';
        break;
      case kLine:
        if (c == '\n') state = kCode;
        else out[i] = ' ';
        break;
      case kBlock:
        if (c == '*' && next == '/') {
          out[i] = out[i + 1] = ' ';
          ++i;
          state = kCode;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
      case kString:
      case kChar:
        if (c == '\\') ++i;
        else if (c == (state == kString ? '"' : '\'')) state = kCode;
        break;
    }
  }
  return out;
}

size_t LineAt(const std::string& text, size_t pos) {
  return 1 + std::count(text.begin(), text.begin() + pos, '\n');
}

// The text between the bracket at `open` and its match.
std::string Bracketed(const std::string& text, size_t open) {
  const char opening = text[open], closing = opening == '(' ? ')' : '}';
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == opening) ++depth;
    if (text[i] == closing && --depth == 0) return text.substr(open + 1, i - open - 1);
  }
  return text.substr(open + 1);
}

// A cgroupfs file (memory.current, cpu.max, cgroup.procs, io.pressure, ...), the cgroup mount,
// or a process's cgroup file, as a string literal of a source names it.
bool NamesCgroupfs(const std::string& literal) {
  static const std::regex kFile(
      R"re((^|/)(memory|memsw|cpu|cpuacct|cpuset|io|pids|hugetlb|rdma|misc|irq|cgroup))re"
      R"re(\.[a-z_.]+$)re");
  static const std::regex kMount(R"re(/sys/fs/cgroup|^/proc/.*/?cgroup$|/cgroup$)re");
  return std::regex_search(literal, kFile) || std::regex_search(literal, kMount);
}

// Each violation: "file:line: what".
std::vector<std::string> Scan(const std::string& name, const std::string& source) {
  const std::string code = WithoutComments(source);
  std::vector<std::string> found;
  auto report = [&](size_t pos, const std::string& what) {
    found.push_back(name + ":" + std::to_string(LineAt(code, pos)) + ": " + what);
  };
  // String literals, outside #include lines.
  static const std::regex kLiteral(R"re("((?:[^"\\\n]|\\.)*)")re");
  static const std::regex kInclude(R"(^\s*#\s*include)");
  std::istringstream lines(code);
  size_t offset = 0;
  for (std::string line; std::getline(lines, line); offset += line.size() + 1) {
    if (std::regex_search(line, kInclude)) continue;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kLiteral);
         it != std::sregex_iterator(); ++it) {
      if (NamesCgroupfs((*it)[1])) report(offset + it->position(), "names " + it->str());
    }
  }
  // Calls that open, read, make or remove a file or directory; an fstream's argument follows
  // its variable's name (std::ifstream in(path)) or the type (std::ifstream{path}).
  static const std::regex kCall(
      R"re(\b(open|openat|open64|creat|fopen|freopen|opendir|mkdir|mkdirat|rmdir|unlink|)re"
      R"re(stat|lstat|statx|access|truncate|ReadCgroupFile|ReadProcFile|ReadSmallFile|)re"
      R"re(ReadFile|ReadFileToString)\s*\(|)re"
      R"re(\b(?:std::)?[io]?fstream\b\s*(?:[A-Za-z_]\w*\s*)?[({])re");
  static const std::regex kCgroupish(
      R"re(cgroup|key_root|layout|memory|cpu|procs|/sys/fs|\bdir\(\)|\broot\b)re",
      std::regex::icase);
  const bool may_open = kMayOpen.contains(name);
  for (auto it = std::sregex_iterator(code.begin(), code.end(), kCall);
       it != std::sregex_iterator(); ++it) {
    const size_t pos = it->position();
    if ((pos >= 1 && code[pos - 1] == '.') || (pos >= 2 && code.compare(pos - 2, 2, "->") == 0)) {
      continue;  // a member (in.open(), ledger->stat(id)), not the call that opens a path
    }
    const std::string args = Bracketed(code, pos + it->length() - 1);
    const std::string call = it->str() + args + (it->str().back() == '(' ? ")" : "}");
    if (!may_open) {
      report(pos, "opens a file itself: " + call + " (go through agent/cgroup/)");
    } else if (std::regex_search(args, kCgroupish)) {
      report(pos, "opens a cgroup's file itself: " + call);
    }
  }
  return found;
}

std::string ReadSource(const std::filesystem::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << "cannot read " << file;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(RunsOpenNoCgroupfsTest, NoSourceUnderAgentRunsOpensACgroupfsFile) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kRuns)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cc" && ext != ".h") continue;
    ++files;
    for (const std::string& v : Scan(entry.path().filename().string(), ReadSource(entry.path()))) {
      ADD_FAILURE() << "agent/runs/" << v;
    }
  }
  EXPECT_GE(files, 20u);  // the scan saw the directory at all
}

// The scan itself, on the ways the runs once read their cgroups.
TEST(RunsOpenNoCgroupfsTest, TheScanFindsEachWayOfOpeningACgroupfsFile) {
  const std::vector<std::string> sources = {
      "std::ifstream in(dir + (v2 ? \"/cpu.max\" : \"/cpu.cfs_period_us\"));",
      "files_[kUsage].path = FileIn(layout, \"memory\", p, \"memory.current\");",
      "int fd = open(f.path.c_str(), O_RDONLY | O_CLOEXEC);",
      "std::ifstream in(\"/proc/self/cgroup\");",
      "const std::string text = ReadSmallFile(parent_dir + \"/cgroup.controllers\");",
      "auto held = ReadCgroupFile(w.file);",
      "if (mkdir(dir.c_str(), 0755) == 0) return;",
      "rmdir(stage_dir.c_str());",
      "DIR* d = opendir((layout.key_root + stage_path).c_str());",
      "FILE* f = fopen(\"/sys/fs/cgroup/unified/cgroup.procs\", \"w\");",
      "std::ofstream{procs_file} << 0;",
      "const char* kPsi = \"io.pressure\";",
  };
  for (const std::string& source : sources) {
    EXPECT_THAT(Scan("run_cgroup.cc", source), testing::Not(testing::IsEmpty())) << source;
  }
  // In a file that may open its own files, only a cgroup's are refused.
  EXPECT_THAT(Scan("orphan_runs.cc", "std::ifstream stat(absl::StrCat(proc, \"/stat\"));"),
              testing::IsEmpty());
  EXPECT_THAT(Scan("orphan_runs.cc", "DIR* d = opendir((layout.key_root + stage).c_str());"),
              testing::Not(testing::IsEmpty()));
  // Comments, members and messages are no opening.
  EXPECT_THAT(Scan("run_cgroup.cc", "// open(\"/sys/fs/cgroup/x/memory.max\")\n"
                                    "/* mkdir(dir) */ in.open(); ledger->stat(id);\n"
                                    "Error(\"its cgroup.controllers lacks memory\");"),
              testing::IsEmpty());
}

}  // namespace
}  // namespace stagewatch
