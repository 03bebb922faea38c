// The configuration sits at the bottom: its files include the standard library, abseil,
// yaml-cpp, leaf helpers in agent/ and agent/config/, never the modules that use the settings.
#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "source_scan.h"

namespace stagewatch {
namespace {

TEST(ConfigLayeringTest, ConfigIncludesNoModuleThatUsesIt) {
  const std::vector<std::string> files = testing::SourceFiles("agent/config");
  ASSERT_GE(files.size(), 6u);  // config, config_validate and the sections' headers
  size_t includes = 0;
  for (const std::string& file : files) {
    for (const std::string& include : testing::QuotedIncludes(file)) {
      ++includes;
      const bool third_party = include.starts_with("absl/") || include.starts_with("yaml-cpp/");
      const bool leaf = include.find('/') == std::string::npos || include.starts_with("config/");
      EXPECT_TRUE(third_party || leaf) << file << " includes \"" << include
                                       << "\"; move the setting into agent/config/ instead";
    }
  }
  EXPECT_GT(includes, 0u);  // the scan saw the files' includes at all
}

// One parser per section (config_<section>.cc) sharing the reader (config_reader.h): no file
// grows into a parser of every section again.
TEST(ConfigLayeringTest, EachFileIsSmall) {
  constexpr int kMaxLines = 200;
  for (const std::string& file : testing::SourceFiles("agent/config")) {
    const std::string text = testing::SourceText(file);
    EXPECT_LE(std::count(text.begin(), text.end(), '\n'), kMaxLines)
        << file << ": split it by section";
  }
}

}  // namespace
}  // namespace stagewatch
