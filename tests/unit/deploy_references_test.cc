// The deploy files name other files of the project (a manifest points at another, a comment
// says "use X instead"): each such name is a file that exists.
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "source_scan.h"

namespace stagewatch {
namespace {

namespace fs = std::filesystem;

// The names of the project's files, without build trees and git's own.
std::set<std::string> ProjectFileNames() {
  std::set<std::string> names;
  for (auto it = fs::recursive_directory_iterator(testing::kSourceDir); it != fs::end(it); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == ".git" || name.starts_with("build"))) {
      it.disable_recursion_pending();
    } else if (it->is_regular_file()) {
      names.insert(name);
    }
  }
  return names;
}

TEST(DeployReferencesTest, EveryFileADeployFileNamesExists) {
  // A file name with one of the project's extensions, not part of a URL or an absolute path
  // on the target host.
  static const std::regex kFileName(
      R"((^|[\s(`"'\[,:=])([A-Za-z0-9_.-]+/)*)"
      R"(([A-Za-z0-9_][A-Za-z0-9_.-]*\.(yml|yaml|md|service|json|sh|py))\b)");
  const std::set<std::string> names = ProjectFileNames();
  int checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(testing::kSourceDir / "deploy")) {
    if (!entry.is_regular_file()) continue;
    const std::string file = fs::relative(entry.path(), testing::kSourceDir).string();
    const std::string text = testing::SourceText(file);
    for (std::sregex_iterator it(text.begin(), text.end(), kFileName), end; it != end; ++it) {
      const std::string name = (*it)[3];
      if (name == "config.yaml" || name == "web.yml") continue;  // the host's, in /etc
      EXPECT_TRUE(names.count(name)) << file << " names " << (*it)[0] << ", no such file";
      ++checked;
    }
  }
  EXPECT_GT(checked, 5);
}

}  // namespace
}  // namespace stagewatch
