#include "runs/cpuset_request.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "string_util.h"

namespace stagewatch {
namespace {

constexpr uint64_t kMaxCpusetNumber = 65535;

absl::Status Bad(std::string_view flag, std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s \"%s\" is not a list of %s: %s; write numbers and ranges such as 0-3,8", ToAbsl(flag),
      ToAbsl(text), flag.find("mems") != std::string_view::npos ? "NUMA nodes" : "CPUs",
      ToAbsl(why)));
}

bool Number(absl::string_view text, uint64_t& value) {
  return ParseDigits(std::string_view(text.data(), text.size()), value) &&
         value <= kMaxCpusetNumber;
}

}  // namespace

absl::StatusOr<std::string> CanonicalCpuList(std::string_view text, std::string_view flag) {
  const absl::string_view list = absl::StripAsciiWhitespace(ToAbsl(text));
  if (list.empty()) return Bad(flag, text, "it is empty");
  std::set<uint64_t> ids;
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty()) return Bad(flag, text, "it has an empty item");
    const size_t dash = item.find('-');
    const absl::string_view first = item.substr(0, dash);
    uint64_t lo = 0, hi = 0;
    if (!Number(first, lo)) {
      return Bad(flag, text, absl::StrFormat("\"%s\" is not a number from 0 to %d",
                                             first, kMaxCpusetNumber));
    }
    hi = lo;
    if (dash != absl::string_view::npos) {
      const absl::string_view last = item.substr(dash + 1);
      if (last.empty()) {
        return Bad(flag, text, absl::StrFormat("the range \"%s\" has no end", item));
      }
      if (!Number(last, hi)) {
        return Bad(flag, text, absl::StrFormat("\"%s\" is not a number from 0 to %d",
                                               last, kMaxCpusetNumber));
      }
      if (hi < lo) {
        return Bad(flag, text, absl::StrFormat("the range \"%s\" runs backwards", item));
      }
    }
    for (uint64_t i = lo; i <= hi; ++i) ids.insert(i);
  }
  std::vector<std::string> parts;
  for (auto it = ids.begin(); it != ids.end();) {
    const uint64_t lo = *it;
    uint64_t hi = lo;
    for (++it; it != ids.end() && *it == hi + 1; ++it) hi = *it;
    parts.push_back(hi == lo ? absl::StrCat(lo) : absl::StrCat(lo, "-", hi));
  }
  return absl::StrJoin(parts, ",");
}

int CpuListCount(std::string_view canonical) {
  int count = 0;
  for (std::string_view item : SplitNonEmpty(canonical, ',')) {
    const size_t dash = item.find('-');
    uint64_t lo = 0, hi = 0;
    if (!ParseDigits(item.substr(0, dash), lo)) return 0;
    hi = lo;
    if (dash != std::string_view::npos && !ParseDigits(item.substr(dash + 1), hi)) return 0;
    if (hi < lo) return 0;
    count += static_cast<int>(hi - lo + 1);
  }
  return count;
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
