#include "runs/ledger_path.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_format.h"

namespace stagewatch {
namespace {

namespace fs = std::filesystem;

// A link's target as the user would read it: where it resolves, or its text when dangling.
std::string LinkTarget(const std::string& link) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(link, ec);
  if (ec) return "?";
  const fs::path resolved = fs::canonical(link, ec);
  return ec ? absl::StrFormat("%s, which does not exist", target.string()) : resolved.string();
}

// What is wrong with `file` (the ledger or one of SQLite's files beside it) as it stands now;
// OK when it is a regular file or missing.
absl::Status CheckFile(const std::string& file, const std::string& ledger) {
  struct stat st;
  if (lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot use \"%s\" for the ledger: %s; pass --ledger.path a file in a directory", file,
        std::strerror(errno)));
  }
  if (S_ISLNK(st.st_mode) && file == ledger) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "\"%s\" is a symbolic link (to %s); the ledger is never opened through a link, which "
        "could point it at any file: pass --ledger.path the file itself",
        file, LinkTarget(file)));
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "\"%s\" is a symbolic link (to %s); the ledger's %s file is never opened through a "
        "link, which could point it at any file: remove the link (SQLite makes the file anew)",
        file, LinkTarget(file), file.substr(ledger.size())));
  }
  if (S_ISDIR(st.st_mode) && file == ledger) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ledger path \"%s\" is a directory; pass --ledger.path a file in it, e.g. %s/ledger.db",
        file, file));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "\"%s\" is not a regular file; pass --ledger.path a file in a directory of its own", file));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> LedgerFileToOpen(const std::string& path, bool read_only) {
  if (path.empty()) {
    return absl::FailedPreconditionError("the ledger path is empty; pass --ledger.path FILE");
  }
  if (absl::Status s = CheckFile(path, path); !s.ok()) return s;
  const fs::path given(path);
  if (!given.has_filename()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ledger path \"%s\" names a directory; pass --ledger.path a file in it, e.g. "
        "%sledger.db", path, path));
  }
  const fs::path dir = given.has_parent_path() ? given.parent_path() : fs::path(".");
  std::error_code ec;
  if (!read_only && !fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "cannot create the ledger's directory \"%s\": %s; pass --ledger.path a file in a "
          "writable directory", dir.string(), ec.message()));
    }
  }
  const fs::path real_dir = fs::canonical(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot open the ledger \"%s\": its directory: %s", path, ec.message()));
  }
  struct stat st;
  if (stat(real_dir.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot open the ledger \"%s\": %s: %s", path, real_dir.string(), std::strerror(errno)));
  }
  // The sticky bit does not help: it keeps others from removing files, not from making the
  // ledger's -wal or -shm file (or the ledger itself) first.
  if (st.st_mode & S_IWOTH) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the ledger's directory \"%s\" may be written by every user (mode %04o), so any of them "
        "could put another file or a link in the ledger's place; pass --ledger.path a file in a "
        "directory only its owner and group may write (or run chmod o-w on it)",
        real_dir.string(), st.st_mode & 07777));
  }
  const std::string file = (real_dir / given.filename()).string();
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (absl::Status s = CheckFile(file + suffix, file); !s.ok()) return s;
  }
  return file;
}

}  // namespace stagewatch
