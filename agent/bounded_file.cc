#include "bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace stagewatch {
namespace {

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

absl::StatusOr<std::string> ReadBoundedFile(const std::string& path, std::string_view what,
                                            size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int error = errno;
    const std::string message =
        absl::StrFormat("cannot read %s \"%s\": %s", what, path, std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::FailedPreconditionError(message);
  }
  absl::Cleanup closer = [fd] { close(fd); };
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s \"%s\" is %s; give a regular file", what, path, FileKind(st.st_mode)));
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s \"%s\" is %d bytes, more than the %d allowed; is it the right file?", what, path,
        static_cast<long long>(st.st_size), max_bytes));
  }
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::FailedPreconditionError(
          absl::StrFormat("cannot read %s \"%s\": %s", what, path, std::strerror(errno)));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    // The file may grow while it is read (or be a /proc file that reports size 0).
    if (text.size() > max_bytes) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s \"%s\" is more than the %d bytes allowed; is it the right file?", what, path,
          max_bytes));
    }
  }
  return text;
}

}  // namespace stagewatch
