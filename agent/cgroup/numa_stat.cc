#include "cgroup/numa_stat.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// One line: its name and the value of each node, as written (pages on v1, bytes on v2).
struct NumaLine {
  std::string_view name;
  std::map<int, uint64_t> nodes;
};

absl::Status BadLine(std::string_view file, size_t number, std::string_view line,
                     std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(ToAbsl(file), ": line ", number, " \"",
                                                 absl::CEscape(ToAbsl(line)), "\": ",
                                                 ToAbsl(why)));
}

// "N<id>=<value>"
bool ParseNodeField(std::string_view field, int& node, uint64_t& value) {
  const size_t eq = field.find('=');
  uint64_t id = 0;
  if (field.size() < 2 || field[0] != 'N' || eq == std::string_view::npos ||
      !ParseDigits(field.substr(1, eq - 1), id) || id > 65535 ||
      !ParseDigits(field.substr(eq + 1), value)) {
    return false;
  }
  node = int(id);
  return true;
}

// Every line of the file; on v1 the name is "total=N" less its "=N" (the sum, not kept).
absl::StatusOr<std::vector<NumaLine>> ParseLines(std::string_view contents, bool v1,
                                                 std::string_view file) {
  if (absl::Status complete = CheckCgroupFileComplete(contents, file); !complete.ok()) {
    return complete;
  }
  std::vector<NumaLine> lines;
  size_t number = 0;
  for (std::string_view rest = contents; !rest.empty();) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    number++;
    const std::vector<std::string_view> fields = SplitNonEmpty(line, ' ');
    if (fields.empty()) return BadLine(file, number, line, "empty line");
    NumaLine parsed{fields[0], {}};
    if (v1) {
      const size_t eq = parsed.name.find('=');
      uint64_t total = 0;
      if (eq == std::string_view::npos || !ParseDigits(parsed.name.substr(eq + 1), total)) {
        return BadLine(file, number, line, "expected \"name=pages N0=pages ...\" (cgroup v1)");
      }
      parsed.name = parsed.name.substr(0, eq);
    } else if (parsed.name.find('=') != std::string_view::npos) {
      return BadLine(file, number, line, "expected \"name N0=bytes ...\" (cgroup v2)");
    }
    for (size_t i = 1; i < fields.size(); i++) {
      int node = 0;
      uint64_t value = 0;
      if (!ParseNodeField(fields[i], node, value)) {
        return BadLine(file, number, line,
                       absl::StrCat("\"", ToAbsl(fields[i]), "\" is not \"N<node>=<number>\""));
      }
      parsed.nodes[node] = value;
    }
    lines.push_back(std::move(parsed));
  }
  return lines;
}

// The anon and file lines named `anon` and `file`, each value times `unit`.
absl::StatusOr<NumaMemory> Collect(const std::vector<NumaLine>& lines, std::string_view anon,
                                   std::string_view file_line, uint64_t unit,
                                   std::string_view file) {
  const NumaLine* found[2] = {nullptr, nullptr};
  for (const NumaLine& l : lines) {
    if (l.name == anon) found[0] = &l;
    if (l.name == file_line) found[1] = &l;
  }
  for (int i = 0; i < 2; i++) {
    if (found[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(ToAbsl(file), ": no \"",
                                                     ToAbsl(i == 0 ? anon : file_line),
                                                     "\" line; is this memory.numa_stat?"));
    }
  }
  NumaMemory memory;
  for (const auto& [node, v] : found[0]->nodes) memory[node].anon_bytes = v * unit;
  for (const auto& [node, v] : found[1]->nodes) memory[node].file_bytes = v * unit;
  return memory;
}

}  // namespace

uint64_t NumaMemoryBytes(const NumaMemory& memory) {
  uint64_t total = 0;
  for (const auto& [node, m] : memory) total += m.anon_bytes + m.file_bytes;
  return total;
}

absl::StatusOr<NumaMemory> ParseNumaStatV1(std::string_view contents, uint64_t page_size,
                                           std::string_view file) {
  absl::StatusOr<std::vector<NumaLine>> lines = ParseLines(contents, true, file);
  if (!lines.ok()) return lines.status();
  bool hierarchical = false;
  for (const NumaLine& l : *lines) hierarchical |= l.name == "hierarchical_anon";
  return hierarchical ? Collect(*lines, "hierarchical_anon", "hierarchical_file", page_size, file)
                      : Collect(*lines, "anon", "file", page_size, file);
}

absl::StatusOr<NumaMemory> ParseNumaStatV2(std::string_view contents, std::string_view file) {
  absl::StatusOr<std::vector<NumaLine>> lines = ParseLines(contents, false, file);
  if (!lines.ok()) return lines.status();
  return Collect(*lines, "anon", "file", 1, file);
}

absl::StatusOr<NumaMemory> ReadNumaStat(const CgroupLayout& layout, std::string_view cgroup_path,
                                        CgroupFileRead read) {
  const std::string dir = ControllerDir(layout, "memory", cgroup_path);
  if (dir.empty()) return absl::NotFoundError("no memory hierarchy is mounted");
  const std::string path = dir + "/memory.numa_stat";
  absl::StatusOr<std::string> text = read(path);
  if (!text.ok()) return text.status();
  if (layout.key == CGROUP_KEY_DEFAULT) return ParseNumaStatV2(*text, path);
  static const uint64_t page_size = uint64_t(sysconf(_SC_PAGESIZE));
  return ParseNumaStatV1(*text, page_size, path);
}

absl::Status CheckNumaStatAvailable(const CgroupLayout& layout, std::string_view sys_root) {
  const bool v2 = layout.key == CGROUP_KEY_DEFAULT;
  if (v2 ? !layout.v2_has_memory : layout.v1_memory_root.empty()) {
    return absl::FailedPreconditionError(
        "no memory controller is mounted: the memory locality metrics are not exported");
  }
  struct stat st;
  const std::string node_dir = absl::StrCat(ToAbsl(sys_root), "/node");
  // cgroup2's root has no memory.numa_stat: the kernel's NUMA support is what decides.
  const std::string probe = v2 ? node_dir : layout.v1_memory_root + "/memory.numa_stat";
  if (stat(probe.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(
        probe, " does not exist: the kernel was built without CONFIG_NUMA, so cgroups have no "
        "memory.numa_stat and stagewatch_memory_numa_bytes and stagewatch_memory_remote_ratio "
        "are not exported (the agent runs on)"));
  }
  return absl::OkStatus();
}

}  // namespace stagewatch
