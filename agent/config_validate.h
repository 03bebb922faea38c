// Checks on single configuration values, shared by the YAML parser (config.cc) and its tests.
// Each Check* returns "" when the value is fine, else a message saying how to fix it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stagewatch::config_internal {

// `unknown key "x" in web; did you mean "y"? (allowed: a, b)`. `where` is appended verbatim
// after the name (e.g. " in web"); a suggestion is made within edit distance 2.
std::string UnknownNameMessage(std::string_view noun, std::string_view name,
                               std::string_view where, const std::vector<std::string>& allowed,
                               std::string_view allowed_label);

std::string CheckListenAddress(std::string_view address);  // host:port, :port or [v6]:port
std::string CheckTelemetryPath(std::string_view path);
std::string CheckLogLevel(std::string_view level);
std::string CheckLogFormat(std::string_view format);
std::string CheckCgroupRoot(std::string_view root);
std::string CheckDiscoveryDirectory(std::string_view directory);
std::string CheckUserspaceKiller(std::string_view comm);
std::string CheckUserspaceKillerPath(std::string_view path);
std::string CheckAlertmanagerUrl(std::string_view url);  // the parser the client uses
std::string CheckAbsolutePath(std::string_view path);
std::string CheckTlsMinVersion(std::string_view version);  // TLS12 or TLS13

// Name syntax only; uniqueness is checked by the parser, which sees all stages.
std::string CheckStageName(std::string_view name);
// `stage` names the stage in messages, e.g. `stage "train"`.
std::string CheckCgroupPathGlob(std::string_view glob, std::string_view stage);
std::string CheckSystemdUnitGlob(std::string_view glob, std::string_view stage);

}  // namespace stagewatch::config_internal
