// libFuzzer target: the agent's configuration and the web configuration parsers. Any input
// must parse, or be rejected with every line of the message in "file:line:col: " form;
// a crash, a hang (libFuzzer's -timeout) or a message without a position is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "config/config.h"
#include "exporters/http/web_config.h"
#include "yaml-cpp/yaml.h"

namespace {

// The configuration is told the collectors' names by the signal registry, which the fuzzer
// does not link: the default configuration's `collectors:` keys stand in for them.
const std::vector<std::string>& Collectors() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    const YAML::Node config = YAML::Load(std::string(stagewatch::DefaultConfigYaml()));
    for (const auto& entry : config["collectors"]) {
      out.push_back(entry.first.as<std::string>());
    }
    return out;
  }();
  return names;
}

bool HasPosition(std::string_view line, std::string_view source) {
  if (line.substr(0, source.size() + 1) != std::string(source) + ":") return false;
  line.remove_prefix(source.size() + 1);
  for (int field = 0; field < 2; ++field) {
    size_t digits = 0;
    while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
    if (digits == 0 || digits >= line.size() || line[digits] != ':') return false;
    line.remove_prefix(digits + 1);
  }
  return line.size() > 1 && line[0] == ' ';
}

void CheckRejection(const absl::Status& status, std::string_view source) {
  if (status.ok()) return;
  for (absl::string_view line : absl::StrSplit(status.message(), '\n')) {
    if (!HasPosition(std::string_view(line.data(), line.size()), source)) {
      std::fprintf(stderr, "rejection without file:line:col: \"%.*s\"\n",
                   static_cast<int>(line.size()), line.data());
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckRejection(stagewatch::ParseConfig(text, "fuzz.yaml", Collectors()).status(), "fuzz.yaml");
  CheckRejection(stagewatch::exporters::ParseWebConfig(text, "web.yml").status(), "web.yml");
  return 0;
}
