// The single-value checks return absl::Status: OK for a good value, InvalidArgument with the
// whole advice for a bad one (the parser adds the position, the CLI its flag name).
#include "config/config_validate.h"

#include <functional>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch::config_internal {
namespace {

using ::testing::HasSubstr;

using Check = std::function<absl::Status(std::string_view)>;

struct Case {
  const char* name;
  Check check;
  std::vector<std::string> good;
  std::string bad;
  std::string message;  // exactly what the user reads
};

std::vector<Case> Cases() {
  auto in_stage = [](auto check) {
    return [check](std::string_view glob) { return check(glob, "stage \"t\""); };
  };
  return {
      {"listen address", CheckListenAddress, {":9617", "127.0.0.1:0", "[::1]:9617"}, "::1:9617",
       "listen address \"::1:9617\" must be host:port, :port or [ipv6]:port; put an IPv6 "
       "address in brackets, e.g. \"[::1]:9617\""},
      {"telemetry path", CheckTelemetryPath, {"/metrics", "/a/b"}, "/-/x",
       "telemetry path \"/-/x\" is reserved (/-/healthy and /-/ready live there); use e.g. "
       "\"/metrics\""},
      {"log level", CheckLogLevel, {"debug", "error"}, "loud",
       "unknown log level \"loud\"; use one of debug, info, warn, error"},
      {"log format", CheckLogFormat, {"logfmt", "json"}, "xml",
       "unknown log format \"xml\"; use one of logfmt, json"},
      {"discovery directory", CheckDiscoveryDirectory, {"stagewatch", "sw.stages"}, "..",
       "discovery directory \"..\" must be one directory name (not empty, no \"/\"), e.g. "
       "\"stagewatch\""},
      {"userspace killer", CheckUserspaceKiller, {"earlyoom", "abcdefghijklmno"},
       "abcdefghijklmnop",
       "oom.userspace_killers entry \"abcdefghijklmnop\" is 16 characters; the kernel keeps "
       "only the first 15 characters of a process name (comm), so it would never match; write "
       "\"abcdefghijklmno\""},
      {"userspace killer path", CheckUserspaceKillerPath, {"/usr/bin/earlyoom"}, "earlyoom",
       "oom.userspace_killer_paths entry \"earlyoom\" must be an absolute path to the killer's "
       "executable, e.g. \"/usr/bin/earlyoom\""},
      {"alertmanager URL", CheckAlertmanagerUrl, {"http://127.0.0.1:9093"}, "ftp://x",
       "alertmanager URL \"ftp://x\": scheme \"ftp\" is not supported; use http:// or https://"},
      {"absolute path", CheckAbsolutePath, {"/etc/pw"}, "pw", "\"pw\" must be an absolute path"},
      {"TLS version", CheckTlsMinVersion, {"TLS12", "TLS13"}, "TLS11",
       "TLS version \"TLS11\" is not supported; write TLS12 or TLS13"},
      {"stage name", CheckStageName, {"train", "_etl.v2-x"}, "unattributed",
       "stage name \"unattributed\" is reserved for cgroups that match no stage"},
      {"cgroup path glob", in_stage(CheckCgroupPathGlob), {"/a/**/b", "/k8s/*/t-[0-9]"}, "/[a",
       "invalid glob in stage \"t\": glob \"/[a\": '[' at offset 1 is never closed"},
      {"systemd unit glob", in_stage(CheckSystemdUnitGlob), {"train-*.service"}, "a/b",
       "systemd unit glob \"a/b\" in stage \"t\" must be non-empty and without \"/\" (it "
       "matches one unit name, e.g. \"train-*.service\")"},
  };
}

TEST(ConfigValidateTest, GoodValuesAreOkAndBadOnesSayWhatToDo) {
  for (const Case& c : Cases()) {
    for (const std::string& good : c.good) {
      const absl::Status status = c.check(good);
      EXPECT_TRUE(status.ok()) << c.name << " \"" << good << "\": " << status;
    }
    const absl::Status status = c.check(c.bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.name << ": " << status;
    EXPECT_EQ(status.message(), c.message) << c.name;
  }
}

TEST(ConfigValidateTest, EveryWayAValueIsWrongIsAnError) {
  for (std::string_view bad : {"", "localhost", "[::1]", ":99999", ":port"}) {
    EXPECT_FALSE(CheckListenAddress(bad).ok()) << bad;
  }
  for (std::string_view bad : {"", "/", "metrics", "/a?b", "/a b", "/%41"}) {
    EXPECT_FALSE(CheckTelemetryPath(bad).ok()) << bad;
  }
  EXPECT_THAT(CheckTelemetryPath("/" + std::string(256, 'a')).message(),
              HasSubstr("at most 256 are allowed"));
  for (std::string_view bad : {"", "a/b", "."}) EXPECT_FALSE(CheckDiscoveryDirectory(bad).ok());
  EXPECT_EQ(CheckUserspaceKiller("").message(), "oom.userspace_killers entries must not be empty");
  EXPECT_EQ(CheckStageName("").message(), "stage name must not be empty");
  for (std::string_view bad : {"9lives", "a b", "a/b"}) {
    EXPECT_THAT(CheckStageName(bad).message(), HasSubstr("is not valid")) << bad;
  }
  EXPECT_THAT(CheckCgroupPathGlob("train", "stage \"t\"").message(),
              HasSubstr("must start with \"/\""));
  EXPECT_THAT(CheckSystemdUnitGlob("", "stage \"t\"").message(), HasSubstr("non-empty"));
  EXPECT_FALSE(CheckAbsolutePath("").ok());
}

}  // namespace
}  // namespace stagewatch::config_internal
