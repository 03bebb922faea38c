// Checks on single configuration values, shared by the YAML parser (config.cc) and its tests.
// Each Check* returns OK when the value is fine, else InvalidArgument with a message saying how
// to fix it (without a position: the caller knows where the value came from).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace stagewatch::config_internal {

// `unknown key "x" in web; did you mean "y"? (allowed: a, b)`. `where` is appended verbatim
// after the name (e.g. " in web"); a suggestion is made within edit distance 2.
std::string UnknownNameMessage(std::string_view noun, std::string_view name,
                               std::string_view where, const std::vector<std::string>& allowed,
                               std::string_view allowed_label);

absl::Status CheckListenAddress(std::string_view address);  // host:port, :port or [v6]:port
absl::Status CheckTelemetryPath(std::string_view path);
absl::Status CheckLogLevel(std::string_view level);
absl::Status CheckLogFormat(std::string_view format);
absl::Status CheckDiscoveryDirectory(std::string_view directory);
absl::Status CheckUserspaceKiller(std::string_view comm);
absl::Status CheckUserspaceKillerPath(std::string_view path);
absl::Status CheckAlertmanagerUrl(std::string_view url);  // the parser the client uses
absl::Status CheckAbsolutePath(std::string_view path);
absl::Status CheckTlsMinVersion(std::string_view version);  // TLS12 or TLS13
// A Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*) that is not reserved (__*).
absl::Status CheckLabelName(std::string_view name);
// An absolute http:// or https:// URL without query or fragment (--web.external-url).
absl::Status CheckExternalUrl(std::string_view url);

// Name syntax only; uniqueness is checked by the parser, which sees all stages.
absl::Status CheckStageName(std::string_view name);
// A pipeline name: as a stage name (letters, digits, "_", ".", "-"; a letter or "_" first).
absl::Status CheckPipelineName(std::string_view name);
// `stage` names the stage in messages, e.g. `stage "train"`.
absl::Status CheckCgroupPathGlob(std::string_view glob, std::string_view stage);
absl::Status CheckSystemdUnitGlob(std::string_view glob, std::string_view stage);

}  // namespace stagewatch::config_internal
