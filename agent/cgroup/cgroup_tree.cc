#include "cgroup/cgroup_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "string_util.h"

namespace stagewatch {

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

absl::Status CheckCgroupFileComplete(std::string_view contents, std::string_view file) {
  if (contents.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(ToAbsl(file), ": file is empty"));
  }
  if (contents.back() != '\n') {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(file), ": truncated (the last line has no newline)"));
  }
  return absl::OkStatus();
}

absl::Status ForEachCgroupFileLine(std::string_view contents, std::string_view file,
                                   absl::FunctionRef<const char*(std::string_view line)> take) {
  if (absl::Status complete = CheckCgroupFileComplete(contents, file); !complete.ok()) {
    return complete;
  }
  size_t number = 0;
  for (std::string_view rest = contents; !rest.empty();) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 1);  // the check above: a newline ends every line
    ++number;
    if (const char* wrong = take(line)) {
      return absl::InvalidArgumentError(absl::StrCat(ToAbsl(file), ": line ", number, " \"",
                                                     absl::CEscape(ToAbsl(line)), "\": ", wrong));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ParseFlatKeyedValue(std::string_view contents, std::string_view key,
                                             std::string_view file_for_errors) {
  for (std::string_view line : SplitNonEmpty(contents, '\n')) {
    const size_t space = line.find(' ');
    if (line.substr(0, space) != key) continue;
    absl::string_view value = space == std::string_view::npos
                                  ? ""
                                  : absl::StripAsciiWhitespace(ToAbsl(line.substr(space)));
    uint64_t parsed = 0;
    // SimpleAtoi would take a leading '+'; cgroupfs never writes one, so refuse it.
    if (value.empty() || !absl::ascii_isdigit(value[0]) || !absl::SimpleAtoi(value, &parsed)) {
      return absl::InvalidArgumentError(absl::StrCat(ToAbsl(file_for_errors), ": value of \"",
                                                     ToAbsl(key), "\" is not a number: \"", value,
                                                     "\""));
    }
    return parsed;
  }
  return absl::NotFoundError(
      absl::StrCat(ToAbsl(file_for_errors), ": no \"", ToAbsl(key), "\" line"));
}

}  // namespace stagewatch
