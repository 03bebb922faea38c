#include "cgroup/cgroup_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace stagewatch {
namespace {

// Debian's abseil has its own absl::string_view (not std::string_view), so split by hand.
std::vector<std::string_view> SplitNonEmpty(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    size_t end = text.find(sep);
    std::string_view part = text.substr(0, end);
    if (!part.empty()) parts.push_back(part);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return parts;
}

// StrCat takes absl::string_view, which Debian's abseil does not convert from std::string_view.
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

absl::StatusOr<std::string> ReadCgroupFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  absl::Cleanup closer = [fd] { close(fd); };
  std::string contents;
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
    }
    contents.append(buf, static_cast<size_t>(n));
  }
  return contents;
}

absl::StatusOr<uint64_t> ParseFlatKeyedValue(std::string_view contents, std::string_view key,
                                             std::string_view file_for_errors) {
  for (std::string_view line : SplitNonEmpty(contents, '\n')) {
    const size_t space = line.find(' ');
    if (line.substr(0, space) != key) continue;
    absl::string_view value =
        space == std::string_view::npos ? "" : absl::StripAsciiWhitespace(Av(line.substr(space)));
    uint64_t parsed = 0;
    // SimpleAtoi would take a leading '+'; cgroupfs never writes one, so refuse it.
    if (value.empty() || !absl::ascii_isdigit(value[0]) || !absl::SimpleAtoi(value, &parsed)) {
      return absl::InvalidArgumentError(absl::StrCat(Av(file_for_errors), ": value of \"", Av(key),
                                                     "\" is not a number: \"", value, "\""));
    }
    return parsed;
  }
  return absl::NotFoundError(absl::StrCat(Av(file_for_errors), ": no \"", Av(key), "\" line"));
}

}  // namespace stagewatch
