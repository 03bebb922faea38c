// The configuration keys the docs' tables document (docs/configuration.md, docs/detectors.md)
// are the keys the reader takes, and the shipped configuration (agent/config/default_config.yaml,
// the embedded default and the .deb's /etc/stagewatch/config.yaml) shows every one of them
// with the code's defaults. The docs are read as they are, so a key documented without code,
// or coded without a place in the shipped file, fails here.
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "config/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "signals/signal.h"
#include "source_scan.h"
#include "yaml-cpp/yaml.h"

namespace stagewatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct DocumentedKey {
  std::vector<std::string> path;  // {"anomalies", "limit_eta", "min_points"}
  std::string where;              // "docs/detectors.md:129", for failures
  bool absent = false;            // the table says the section has no such key
  std::string Name() const { return absl::StrJoin(path, "."); }
};

// The cells of a table row ("| `a` | 1 | x |" → "`a`", "1", "x"); empty for other lines.
std::vector<std::string> Cells(const std::string& line) {
  if (line.size() < 2 || line[0] != '|') return {};
  std::vector<std::string> cells = absl::StrSplit(line.substr(1), '|');
  if (!cells.empty() && absl::StripAsciiWhitespace(cells.back()).empty()) cells.pop_back();
  for (std::string& cell : cells) cell = std::string(absl::StripAsciiWhitespace(cell));
  return cells;
}

std::vector<std::string> Backticked(const std::string& text) {
  static const std::regex kCode("`([^`]+)`");
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), kCode), end; it != end; ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

// Each table row whose first cell holds keys, under the sections its heading names:
// docs/configuration.md's "### `web`", docs/detectors.md's "## Time to limit
// (`anomalies.limit_eta`, ...)". A table with one column per section (fault storm and CPU
// starvation) says "(none)" where a section has no such key.
std::vector<DocumentedKey> DocumentedKeys(const std::string& doc) {
  static const std::regex kConfigHeading(R"(^### `([a-z_]+)`$)");
  static const std::regex kDetectorSection(R"(`anomalies\.([a-z_]+)`)");
  std::vector<DocumentedKey> keys;
  std::vector<std::vector<std::string>> sections;
  std::istringstream in(testing::SourceText(doc));
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.starts_with("#")) {
      sections.clear();
      std::smatch m;
      if (std::regex_match(line, m, kConfigHeading)) sections.push_back({m[1]});
      for (std::sregex_iterator it(line.begin(), line.end(), kDetectorSection), end; it != end;
           ++it) {
        sections.push_back({"anomalies", (*it)[1]});
      }
      continue;
    }
    const std::vector<std::string> cells = Cells(line);
    if (sections.empty() || cells.empty() || !cells[0].starts_with("`")) continue;
    for (const std::string& key : Backticked(cells[0])) {
      for (size_t s = 0; s < sections.size(); ++s) {
        DocumentedKey k{sections[s], doc + ":" + std::to_string(number)};
        for (const absl::string_view part : absl::StrSplit(key, '.')) {
          k.path.push_back(std::string(part));
        }
        k.absent = sections.size() > 1 && cells.size() > s + 1 && cells[s + 1] == "(none)";
        keys.push_back(std::move(k));
      }
    }
  }
  return keys;
}

std::vector<DocumentedKey> AllDocumentedKeys() {
  std::vector<DocumentedKey> keys = DocumentedKeys("docs/configuration.md");
  for (DocumentedKey& k : DocumentedKeys("docs/detectors.md")) keys.push_back(std::move(k));
  return keys;
}

// The shipped file with its commented-out settings ("  # password_file: /etc/...", "  # - name:
// train") switched on: where a key without a default is shown.
std::string Uncommented(std::string_view yaml) {
  static const std::regex kCommentedSetting(R"(^(\s*)# ?(\s*(- )?[a-z_][a-z0-9_]*:(\s.*)?)$)");
  std::string out;
  for (const absl::string_view line :
       absl::StrSplit(absl::string_view(yaml.data(), yaml.size()), '\n')) {
    out += std::regex_replace(std::string(line), kCommentedSetting, "$1$2") + "\n";
  }
  return out;
}

// A key the docs write as `<name>.key`: the map's entries are named by the user
// (pipelines.<name>.deadline).
constexpr char kNamedEntry[] = "<name>";

// The node at `path`, through lists by their first entry (stages.name) and named entries by
// the first name (pipelines.<name>.deadline); undefined if none. (reset() moves a handle; `=`
// would overwrite the node it refers to.)
YAML::Node Find(const YAML::Node& root, const std::vector<std::string>& path) {
  YAML::Node node = YAML::Clone(root);
  for (const std::string& part : path) {
    if (node.IsSequence() && node.size() > 0) node.reset(node[0]);
    if (part == kNamedEntry) {
      if (!node.IsMap() || node.size() == 0) return YAML::Node(YAML::NodeType::Undefined);
      node.reset(node.begin()->second);
      continue;
    }
    if (!node.IsMap() || !node[part]) return YAML::Node(YAML::NodeType::Undefined);
    node.reset(node[part]);
  }
  return node;
}

// A configuration with only `path` set to `value` (a list on the way is kept whole).
std::string OnlyKey(const YAML::Node& shipped, const std::vector<std::string>& path,
                    const YAML::Node& value) {
  YAML::Node root(YAML::NodeType::Map);
  YAML::Node at = root;
  for (size_t i = 0; i < path.size(); ++i) {
    const YAML::Node whole = Find(shipped, {path.begin(), path.begin() + i + 1});
    if (whole.IsSequence()) {
      at[path[i]] = whole;
      break;
    }
    std::string key = path[i];
    if (key == kNamedEntry) {  // the shipped name
      key = Find(shipped, {path.begin(), path.begin() + i}).begin()->first.Scalar();
    }
    if (i + 1 == path.size()) {
      at[key] = value;
    } else {
      at[key] = YAML::Node(YAML::NodeType::Map);
      at.reset(at[key]);
    }
  }
  YAML::Emitter out;
  out << root;
  return out.c_str();
}

TEST(DocumentedKeysTest, TheDocsTablesAreFound) {
  std::vector<std::string> names;
  for (const DocumentedKey& k : AllDocumentedKeys()) names.push_back(k.Name());
  EXPECT_GT(names.size(), 80u);
  for (const char* sample : {"web.listen_address", "alerting.tls.cert_file", "runs.advise.oom_bump",
                             "stages.systemd_units", "pipelines.<name>.deadline",
                             "anomalies.oom_kill.hold",
                             "anomalies.limit_eta.min_recent_growth_ratio",
                             "anomalies.cpu_starvation.clear_hold"}) {
    EXPECT_THAT(names, ::testing::Contains(sample));
  }
}

TEST(DocumentedKeysTest, TheShippedFileShowsEveryDocumentedKey) {
  const YAML::Node shipped = YAML::Load(Uncommented(DefaultConfigYaml()));
  for (const DocumentedKey& k : AllDocumentedKeys()) {
    if (k.absent) continue;
    EXPECT_TRUE(Find(shipped, k.path).IsDefined())
        << k.Name() << " (" << k.where << ") is not in agent/config/default_config.yaml";
  }
}

// Each documented key alone, with the shipped file's value, is a key the reader knows; a key
// a table says a section does not have is refused.
TEST(DocumentedKeysTest, EveryDocumentedKeyIsRead) {
  const YAML::Node shipped = YAML::Load(Uncommented(DefaultConfigYaml()));
  for (const DocumentedKey& k : AllDocumentedKeys()) {
    YAML::Node value = Find(shipped, k.path);
    if (k.absent) {  // the value of the section that has the key
      for (const DocumentedKey& other : AllDocumentedKeys()) {
        if (!other.absent && other.path.back() == k.path.back() && other.where == k.where) {
          value = Find(shipped, other.path);
        }
      }
    }
    ASSERT_TRUE(value.IsDefined()) << k.Name();
    const std::string yaml = OnlyKey(shipped, k.path, value);
    const absl::StatusOr<Config> config = ParseConfig(yaml, "doc.yaml", CollectorFlagNames());
    const std::string errors = config.ok() ? "" : std::string(config.status().message());
    const std::string unknown = "unknown key \"" + k.path.back() + "\"";
    if (k.absent) {
      EXPECT_THAT(errors, HasSubstr(unknown)) << k.Name() << " (" << k.where << ")\n" << yaml;
    } else {
      EXPECT_THAT(errors, Not(HasSubstr("unknown key"))) << k.Name() << " (" << k.where
                                                         << ")\n" << yaml;
    }
  }
}

// Set keys hold the code's defaults: a file that copies the shipped one and one that sets
// nothing run the same agent.
TEST(DocumentedKeysTest, TheShippedFileHoldsTheCodesDefaults) {
  const absl::StatusOr<Config> shipped = DefaultConfig(CollectorFlagNames());
  const absl::StatusOr<Config> empty = ParseConfig("", "empty.yaml", CollectorFlagNames());
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(*shipped == *empty);
  EXPECT_TRUE(shipped->anomalies == empty->anomalies);
  EXPECT_TRUE(shipped->alerting == empty->alerting);
  EXPECT_TRUE(shipped->runs == empty->runs);
}

// The commented-out settings are valid where they stand (switched on one at a time above).
TEST(DocumentedKeysTest, TheCommentedSettingsAreYaml) {
  EXPECT_NO_THROW(YAML::Load(Uncommented(DefaultConfigYaml())));
  EXPECT_NE(Uncommented(DefaultConfigYaml()), std::string(DefaultConfigYaml()) + "\n");
}

}  // namespace
}  // namespace stagewatch
