#include "runs/cpuset_request.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cgroup/cpu_list.h"
#include "string_util.h"

namespace stagewatch {
namespace {

absl::Status Bad(std::string_view flag, std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s \"%s\" is not a list of %s: %s; write numbers and ranges such as 0-3,8", ToAbsl(flag),
      ToAbsl(text), flag.find("mems") != std::string_view::npos ? "NUMA nodes" : "CPUs",
      ToAbsl(why)));
}

}  // namespace

absl::StatusOr<std::string> CanonicalCpuList(std::string_view text, std::string_view flag) {
  if (absl::StripAsciiWhitespace(ToAbsl(text)).empty()) return Bad(flag, text, "it is empty");
  absl::StatusOr<std::vector<int>> ids = ParseCpuListIds(text);
  if (!ids.ok()) return Bad(flag, text, std::string(ids.status().message()));
  return FormatCpuList(*std::move(ids));
}

int CpuListCount(std::string_view canonical) {
  absl::StatusOr<std::vector<int>> ids = ParseCpuListIds(canonical);
  return ids.ok() ? static_cast<int>(ids->size()) : 0;
}

std::string HostOnlineList(CpusetKind kind, const std::string& sys_root) {
  const bool cpus = kind == CpusetKind::kCpus;
  const std::string file =
      sys_root + (cpus ? "/devices/system/cpu/online" : "/devices/system/node/online");
  std::ifstream in(file);
  std::error_code ec;
  if (!cpus && !in && !std::filesystem::is_directory(sys_root + "/devices/system/node", ec)) {
    return "0";  // a kernel without NUMA puts all memory on node 0
  }
  std::string text;
  if (!in || !std::getline(in, text)) {
    return absl::StrCat("unknown (cannot read ", file, ": ", std::strerror(errno), ")");
  }
  return std::string(absl::StripAsciiWhitespace(text));
}

std::string HostHasText(CpusetKind kind, const std::string& sys_root) {
  return absl::StrCat("this host's online ",
                      kind == CpusetKind::kCpus ? "CPUs are " : "NUMA nodes are ",
                      HostOnlineList(kind, sys_root));
}

}  // namespace stagewatch
