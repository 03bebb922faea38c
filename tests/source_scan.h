// Reading the project's own sources, for the tests that keep its layout (which room may
// include which, who may open cgroupfs files).
#pragma once

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace stagewatch::testing {

inline const std::filesystem::path kSourceDir = STAGEWATCH_SOURCE_DIR;

// The C and C++ sources, headers and templates of sources (.in) under `dir` (relative to the
// source tree), recursively, as paths relative to the source tree ("agent/runs/ledger.cc").
inline std::vector<std::string> SourceFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kSourceDir / dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".h" || ext == ".cc" || ext == ".c" || ext == ".in") {
      out.push_back(std::filesystem::relative(entry.path(), kSourceDir).string());
    }
  }
  return out;
}

inline std::string SourceText(const std::string& file) {
  std::ifstream in(kSourceDir / file);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The names in a file's `#include "..."` lines, as written.
inline std::vector<std::string> QuotedIncludes(const std::string& file) {
  static const std::regex kInclude(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::ifstream in(kSourceDir / file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kInclude)) out.push_back(m[1]);
  }
  return out;
}

}  // namespace stagewatch::testing
