#include "config/config_validate.h"

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "config/alertmanager_url.h"
#include "glob.h"
#include "listen_address.h"
#include "log.h"

namespace stagewatch::config_internal {
namespace {

constexpr size_t kCommLength = 15;  // TASK_COMM_LEN - 1: the kernel truncates longer names
constexpr size_t kMaxTelemetryPathLength = 256;

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(message); }

// Letters, digits, "_", "." and "-", starting with a letter or "_": a stage's or a pipeline's.
bool IsPlainName(std::string_view name) {
  return !name.empty() && (absl::ascii_isalpha(name[0]) || name[0] == '_') &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
         });
}

absl::Status CheckGlob(std::string_view glob, std::string_view stage) {
  const absl::Status status = ValidateGlob(glob);
  if (status.ok()) return status;
  // The status message quotes the glob already.
  return Invalid(absl::StrFormat("invalid glob in %s: %s", stage, status.message()));
}

}  // namespace

std::string UnknownNameMessage(std::string_view noun, std::string_view name,
                               std::string_view where, const std::vector<std::string>& allowed,
                               std::string_view allowed_label) {
  std::string message = absl::StrFormat("unknown %s \"%s\"%s", noun, name, where);
  const std::string* best = nullptr;
  size_t best_distance = 3;
  for (const std::string& candidate : allowed) {
    const size_t distance = EditDistance(name, candidate);
    if (distance < best_distance) {
      best = &candidate;
      best_distance = distance;
    }
  }
  if (best != nullptr) absl::StrAppendFormat(&message, "; did you mean \"%s\"?", *best);
  absl::StrAppendFormat(&message, " (%s: %s)", allowed_label, absl::StrJoin(allowed, ", "));
  return message;
}

absl::Status CheckListenAddress(std::string_view address) {
  return ParseListenAddress(address).status();
}

absl::Status CheckTelemetryPath(std::string_view path) {
  if (path.size() > kMaxTelemetryPathLength) {
    return Invalid(absl::StrFormat(
        "telemetry path is %d characters long; at most %d are allowed, e.g. \"/metrics\"",
        path.size(), kMaxTelemetryPathLength));
  }
  if (path.empty() || path[0] != '/' || path == "/") {
    return Invalid(absl::StrFormat("telemetry path \"%s\" must start with \"/\" and must not be "
                                   "\"/\" (the landing page), e.g. \"/metrics\"", path));
  }
  // Matched literally against the request path, which never holds these characters.
  const bool plain = std::all_of(path.begin(), path.end(), [](char c) {
    return absl::ascii_isgraph(static_cast<unsigned char>(c)) && c != '?' && c != '#' && c != '%';
  });
  if (!plain) {
    return Invalid(absl::StrFormat("telemetry path \"%s\" may hold only visible ASCII characters "
                                   "other than \"?\", \"#\" and \"%%\"", path));
  }
  if (path.starts_with("/-/")) {
    return Invalid(absl::StrFormat("telemetry path \"%s\" is reserved (/-/healthy and /-/ready "
                                   "live there); use e.g. \"/metrics\"", path));
  }
  return absl::OkStatus();
}

absl::Status CheckLogLevel(std::string_view level) { return ParseLogLevel(level).status(); }

absl::Status CheckLogFormat(std::string_view format) { return ParseLogFormat(format).status(); }

absl::Status CheckDiscoveryDirectory(std::string_view directory) {
  if (!directory.empty() && directory.find('/') == std::string_view::npos && directory != "." &&
      directory != "..") {
    return absl::OkStatus();
  }
  return Invalid(absl::StrFormat("discovery directory \"%s\" must be one directory name (not "
                                 "empty, no \"/\"), e.g. \"stagewatch\"", directory));
}

absl::Status CheckUserspaceKiller(std::string_view comm) {
  if (comm.empty()) return Invalid("oom.userspace_killers entries must not be empty");
  if (comm.size() <= kCommLength) return absl::OkStatus();
  return Invalid(absl::StrFormat(
      "oom.userspace_killers entry \"%s\" is %d characters; the kernel keeps only the first %d "
      "characters of a process name (comm), so it would never match; write \"%s\"",
      comm, comm.size(), kCommLength, comm.substr(0, kCommLength)));
}

absl::Status CheckUserspaceKillerPath(std::string_view path) {
  if (!path.empty() && path[0] == '/') return absl::OkStatus();
  return Invalid(absl::StrFormat("oom.userspace_killer_paths entry \"%s\" must be an absolute "
                                 "path to the killer's executable, e.g. \"/usr/bin/earlyoom\"",
                                 path));
}

absl::Status CheckAlertmanagerUrl(std::string_view url) {
  return ParseAlertmanagerUrl(url).status();
}

absl::Status CheckAbsolutePath(std::string_view path) {
  if (!path.empty() && path[0] == '/') return absl::OkStatus();
  return Invalid(absl::StrFormat("\"%s\" must be an absolute path", path));
}

absl::Status CheckTlsMinVersion(std::string_view version) {
  if (version == "TLS12" || version == "TLS13") return absl::OkStatus();
  return Invalid(
      absl::StrFormat("TLS version \"%s\" is not supported; write TLS12 or TLS13", version));
}

absl::Status CheckStageName(std::string_view name) {
  if (name.empty()) return Invalid("stage name must not be empty");
  if (name == "unattributed") {
    return Invalid("stage name \"unattributed\" is reserved for cgroups that match no stage");
  }
  if (IsPlainName(name)) return absl::OkStatus();
  return Invalid(absl::StrFormat("stage name \"%s\" is not valid; use letters, digits, \"_\", "
                                 "\".\" and \"-\", starting with a letter or \"_\"", name));
}

absl::Status CheckPipelineName(std::string_view name) {
  if (IsPlainName(name)) return absl::OkStatus();
  return Invalid(absl::StrFormat("pipeline name \"%s\" is not valid; use letters, digits, \"_\", "
                                 "\".\" and \"-\", starting with a letter or \"_\"",
                                 name.substr(0, 120)));
}

absl::Status CheckCgroupPathGlob(std::string_view glob, std::string_view stage) {
  if (glob.empty() || glob[0] != '/') {
    return Invalid(absl::StrFormat("cgroup path glob \"%s\" in %s must start with \"/\" (it is "
                                   "matched from the hierarchy root)", glob, stage));
  }
  return CheckGlob(glob, stage);
}

absl::Status CheckSystemdUnitGlob(std::string_view glob, std::string_view stage) {
  if (glob.empty() || glob.find('/') != std::string_view::npos) {
    return Invalid(absl::StrFormat("systemd unit glob \"%s\" in %s must be non-empty and without "
                                   "\"/\" (it matches one unit name, e.g. \"train-*.service\")",
                                   glob, stage));
  }
  return CheckGlob(glob, stage);
}

}  // namespace stagewatch::config_internal
