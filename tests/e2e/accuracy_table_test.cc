// The accuracy table kept whole: every family a fully configured agent exports has a row and
// an entry in docs/metrics.md, and every row names a test that exists and reads that family.
#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "accuracy_support.h"
#include "accuracy_table.h"

namespace stagewatch::accuracy {
namespace {

// The families on `# TYPE` lines of a scrape.
std::set<std::string> TypedFamilies(const std::string& text) {
  std::set<std::string> families;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("# TYPE ")) continue;
    std::istringstream words(line.substr(7));
    std::string name;
    words >> name;
    families.insert(name);
  }
  return families;
}

// "<kind>:<Suite>.<Name>" → the tests of that kind's binary, as gtest lists them.
std::set<std::string> ListedTests(const std::string& kind) {
  if (kind == "e2e") {
    std::set<std::string> names;
    const auto* unit = ::testing::UnitTest::GetInstance();
    for (int i = 0; i < unit->total_test_suite_count(); i++) {
      const auto* suite = unit->GetTestSuite(i);
      for (int j = 0; j < suite->total_test_count(); j++) {
        names.insert(absl::StrCat(suite->name(), ".", suite->GetTestInfo(j)->name()));
      }
    }
    return names;
  }
  const std::string binary = std::string(STAGEWATCH_BINARY);
  const std::string list = binary.substr(0, binary.rfind('/')) + "/tests/" + kind + "_tests";
  auto [rc, out] = testing::RunWithInput(list + " --gtest_list_tests", "");
  std::set<std::string> names;
  std::istringstream lines(out);
  std::string line, suite;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      suite = line.substr(0, line.find(' '));
    } else {
      names.insert(suite + line.substr(2, line.find(' ', 2) - 2));
    }
  }
  return names;
}

// The sources of tests/<kind>/*_test.cc that define TEST(Suite, Name) or TEST_F(Suite, Name).
std::string SourceDefining(const std::string& kind, const std::string& suite_dot_name) {
  const std::string dir = std::string(STAGEWATCH_SOURCE_DIR) + "/tests/" + kind;
  const size_t dot = suite_dot_name.find('.');
  const std::string needle = absl::StrCat(suite_dot_name.substr(0, dot), ", ",
                                          suite_dot_name.substr(dot + 1), ")");
  DIR* d = opendir(dir.c_str());
  if (!d) return "";
  std::string found;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!name.ends_with("_test.cc")) continue;
    const std::string text = testing::ReadFile(dir + "/" + name);
    if (text.find(needle) != std::string::npos) found = text;
  }
  closedir(d);
  return found;
}

// Whether `family` is written out in code style: `name`, `name{labels}` or `name`, ...
bool Documented(const std::string& docs, const std::string& family) {
  for (size_t at = docs.find("`" + family); at != std::string::npos;
       at = docs.find("`" + family, at + 1)) {
    const char next = docs[at + 1 + family.size()];
    if (next == '`' || next == '{') return true;
  }
  return false;
}

TEST(AccuracyTable, EveryExportedFamilyHasARowAndADocsEntryAndEveryRowATestThatReadsIt) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  // Every collector on: a ledger for runs, an Alertmanager (nobody listens) for alerting,
  // --bpf.stats for the program statistics, a stage with a process for the per-stage families.
  const std::string stage = StageName("table");
  testing::TestCgroup cgroup(stage);
  cgroup.Spawn("sw-acc-table", [] { pause(); });
  // In a directory of its own: one every user may write (/tmp) is refused for a ledger.
  char ledger_dir[] = "/tmp/sw-accuracy-ledger-XXXXXX";
  ASSERT_NE(mkdtemp(ledger_dir), nullptr);
  const std::string ledger = std::string(ledger_dir) + "/ledger.db";
  // Removed once the agent has stopped (it would make a ledger removed under it anew).
  absl::Cleanup remove_ledger = [&] { std::filesystem::remove_all(ledger_dir); };
  Agent agent(StageConfig(stage, "runs:\n  ledger_path: " + ledger +
                                     "\nalerting:\n  alertmanagers: [\"http://127.0.0.1:" +
                                     std::to_string(testing::FreePort()) + "\"]\n"),
              {"--bpf.stats"});
  ASSERT_TRUE(agent.Ready()) << agent.log();
  const std::set<std::string> exported = TypedFamilies(agent.Text());
  ASSERT_GT(exported.size(), 30u);

  std::map<std::string, const AccuracyRow*> rows;
  for (const AccuracyRow& row : kAccuracyTable) {
    EXPECT_TRUE(rows.emplace(std::string(row.family), &row).second) << row.family << ": two rows";
  }
  const std::string docs = testing::ReadFile(STAGEWATCH_SOURCE_DIR "/docs/metrics.md");
  for (const std::string& family : exported) {
    EXPECT_TRUE(rows.contains(family))
        << family << " is exported but has no row in tests/e2e/accuracy_table.h: add the test "
        << "that checks its value on /metrics against the kernel";
  }
  std::map<std::string, std::set<std::string>> listed;
  for (const auto& [family, row] : rows) {
    EXPECT_TRUE(Documented(docs, family)) << family << " is missing from docs/metrics.md";
    const std::string test(row->test);
    const size_t colon = test.find(':');
    ASSERT_NE(colon, std::string::npos) << test;
    const std::string kind = test.substr(0, colon), name = test.substr(colon + 1);
    if (!listed.contains(kind)) listed[kind] = ListedTests(kind);
    EXPECT_TRUE(listed[kind].contains(name)) << family << ": no test " << test;
    const std::string source = SourceDefining(kind, name);
    EXPECT_NE(source.find(family), std::string::npos)
        << family << ": the source of " << test << " never names it";
  }
  std::printf("accuracy table: %zu rows, %zu families exported\n", rows.size(), exported.size());
}

}  // namespace
}  // namespace stagewatch::accuracy
