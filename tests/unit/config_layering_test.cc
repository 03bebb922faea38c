// The configuration sits at the bottom: its files include the standard library, abseil,
// yaml-cpp, leaf helpers in agent/ and agent/config/, never the modules that use the settings.
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

const std::filesystem::path kAgent = std::filesystem::path(STAGEWATCH_SOURCE_DIR) / "agent";

std::vector<std::filesystem::path> ConfigFiles() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(kAgent / "config")) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".h" || ext == ".cc" || ext == ".in") files.push_back(entry.path());
  }
  return files;
}

std::vector<std::string> QuotedIncludes(const std::filesystem::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << "cannot read " << file;
  static const std::regex kInclude(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kInclude)) out.push_back(m[1]);
  }
  return out;
}

TEST(ConfigLayeringTest, ConfigIncludesNoModuleThatUsesIt) {
  const std::vector<std::filesystem::path> files = ConfigFiles();
  ASSERT_GE(files.size(), 6u);  // config, config_validate and the sections' headers
  size_t includes = 0;
  for (const std::filesystem::path& file : files) {
    for (const std::string& include : QuotedIncludes(file)) {
      ++includes;
      const bool third_party = include.starts_with("absl/") || include.starts_with("yaml-cpp/");
      const bool leaf = include.find('/') == std::string::npos || include.starts_with("config/");
      EXPECT_TRUE(third_party || leaf) << file.filename() << " includes \"" << include
                                       << "\"; move the setting into agent/config/ instead";
    }
  }
  EXPECT_GT(includes, 0u);  // the scan saw the files' includes at all
}

// One parser per section (config_<section>.cc) sharing the reader (config_reader.h): no file
// grows into a parser of every section again.
TEST(ConfigLayeringTest, EachFileIsSmall) {
  constexpr int kMaxLines = 200;
  for (const std::filesystem::path& file : ConfigFiles()) {
    std::ifstream in(file);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    EXPECT_LE(lines, kMaxLines) << file.filename() << ": split it by section";
  }
}

}  // namespace
}  // namespace stagewatch
