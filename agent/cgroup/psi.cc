#include "cgroup/psi.h"

#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cgroup_subtree.h"
#include "cgroup/cgroup_tree.h"
#include "string_util.h"

namespace stagewatch {
namespace {

// Debian's abseil has its own absl::string_view, so StrSplit would need conversions; split here.
std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t end = text.find(sep);
    parts.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return parts;
    text.remove_prefix(end + 1);
  }
}

// The kernel prints averages as "%lu.%02lu".
bool IsAverage(std::string_view s) {
  const size_t dot = s.find('.');
  return dot != std::string_view::npos && AllDigits(s.substr(0, dot)) &&
         AllDigits(s.substr(dot + 1));
}

absl::Status LineError(std::string_view file, size_t number, std::string_view line,
                       std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      ToAbsl(file), ": line ", number, " \"", absl::CEscape(ToAbsl(line)), "\": ", ToAbsl(what)));
}

// One "some|full avg10=A avg60=B avg300=C total=T" line → T. Every field must be there.
absl::StatusOr<uint64_t> ParseTotal(std::string_view line, size_t number, std::string_view file) {
  std::vector<std::string_view> fields = Split(line, ' ');
  static constexpr std::string_view kKeys[] = {"avg10", "avg60", "avg300", "total"};
  if (fields.size() != 1 + std::size(kKeys)) {
    return LineError(file, number, line, "expected 4 fields: avg10, avg60, avg300 and total");
  }
  uint64_t total = 0;
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    const std::string_view field = fields[i + 1];
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos || field.substr(0, eq) != kKeys[i]) {
      return LineError(file, number, line,
                       absl::StrCat("field ", i + 2, " is not ", ToAbsl(kKeys[i]), "=<value>"));
    }
    const std::string_view value = field.substr(eq + 1);
    const bool is_total = kKeys[i] == "total";
    const bool valid = is_total ? ParseDigits(value, total) : IsAverage(value);
    if (!valid) {
      return LineError(
          file, number, line,
          absl::StrCat(ToAbsl(kKeys[i]), " value \"", ToAbsl(value), "\" is not a number"));
    }
  }
  return total;
}

// Why `file` could not be read, in words an operator can act on.
absl::Status ExplainMissing(const absl::Status& status, const std::string& dir,
                            const std::string& file) {
  // Older kernels keep the files but refuse reads (EOPNOTSUPP) when booted with psi=0.
  if (absl::IsUnimplemented(status)) {
    return absl::NotFoundError(absl::StrCat(
        file, ": PSI is disabled in this kernel (booted with psi=0); ", status.message()));
  }
  if (!absl::IsNotFound(status)) return status;
  if (!IsCgroupDirectory(dir)) {
    return absl::NotFoundError(absl::StrCat(file, ": the cgroup2 directory ", dir,
                                            " does not exist (is the cgroup mirrored there?)"));
  }
  return absl::NotFoundError(
      absl::StrCat(file,
                   ": no PSI file; this kernel has PSI off (CONFIG_PSI unset, booted "
                   "with psi=0, or 0 written to cgroup.pressure)"));
}

}  // namespace

absl::StatusOr<PsiTotals> ParsePsi(std::string_view contents, std::string_view file) {
  if (absl::Status complete = CheckCgroupFileComplete(contents, file); !complete.ok()) {
    return complete;
  }
  std::vector<std::string_view> lines = Split(contents.substr(0, contents.size() - 1), '\n');
  std::optional<uint64_t> some;
  std::optional<uint64_t> full;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const std::string_view kind = line.substr(0, line.find(' '));
    if (kind != "some" && kind != "full") {
      return LineError(file, i + 1, line, "expected a \"some\" or \"full\" line");
    }
    std::optional<uint64_t>& slot = kind == "some" ? some : full;
    if (slot) {
      return LineError(file, i + 1, line, absl::StrCat("second \"", ToAbsl(kind), "\" line"));
    }
    absl::StatusOr<uint64_t> total = ParseTotal(line, i + 1, file);
    if (!total.ok()) return total.status();
    slot = *total;
  }
  if (!some) return absl::InvalidArgumentError(absl::StrCat(ToAbsl(file), ": no \"some\" line"));
  return PsiTotals{*some, full};
}

absl::StatusOr<PsiTotals> ReadPsi(const CgroupLayout& layout, std::string_view cgroup_path,
                                  std::string_view resource, CgroupFileRead read) {
  if (resource != "cpu" && resource != "memory" && resource != "io") {
    return absl::InvalidArgumentError(absl::StrCat("unknown PSI resource \"", ToAbsl(resource),
                                                   "\" (expected cpu, memory or io)"));
  }
  const std::string dir = ControllerDir(layout, "pressure", cgroup_path);
  if (dir.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no cgroup2 hierarchy is mounted, and PSI (", ToAbsl(resource),
        ".pressure) exists only there; mount cgroup2 (e.g. at /sys/fs/cgroup/unified)"));
  }
  const std::string file = absl::StrCat(dir, "/", ToAbsl(resource), ".pressure");
  absl::StatusOr<std::string> contents = read(file);
  if (!contents.ok()) return ExplainMissing(contents.status(), dir, file);
  return ParsePsi(*contents, file);
}

}  // namespace stagewatch
