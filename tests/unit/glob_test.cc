#include "glob.h"

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

TEST(GlobTest, ComponentWildcards) {
  EXPECT_TRUE(GlobMatchComponent("train*.service", "train.service"));
  EXPECT_TRUE(GlobMatchComponent("train*.service", "train-42.service"));
  EXPECT_FALSE(GlobMatchComponent("train*.service", "train.scope"));
  EXPECT_FALSE(GlobMatchComponent("train*.service", "xtrain.service"));
  EXPECT_TRUE(GlobMatchComponent("job?", "job1"));
  EXPECT_FALSE(GlobMatchComponent("job?", "job"));
  EXPECT_FALSE(GlobMatchComponent("job?", "job12"));
  EXPECT_TRUE(GlobMatchComponent("*", ""));
  EXPECT_TRUE(GlobMatchComponent("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(GlobMatchComponent("a*b*c", "aXbYbZ"));
  EXPECT_TRUE(GlobMatchComponent("exact", "exact"));
  EXPECT_FALSE(GlobMatchComponent("exact", "exactly"));
  EXPECT_FALSE(GlobMatchComponent("", "x"));
  EXPECT_TRUE(GlobMatchComponent("", ""));
}

TEST(GlobTest, CharacterClasses) {
  EXPECT_TRUE(GlobMatchComponent("job[0-9]", "job7"));
  EXPECT_FALSE(GlobMatchComponent("job[0-9]", "jobx"));
  EXPECT_TRUE(GlobMatchComponent("[abc]x", "bx"));
  EXPECT_FALSE(GlobMatchComponent("[abc]x", "dx"));
  EXPECT_TRUE(GlobMatchComponent("[!abc]x", "dx"));
  EXPECT_FALSE(GlobMatchComponent("[!abc]x", "ax"));
  EXPECT_TRUE(GlobMatchComponent("[^a]", "b"));
  EXPECT_TRUE(GlobMatchComponent("[]]", "]"));
  EXPECT_TRUE(GlobMatchComponent("*[0-9]", "worker12"));
  EXPECT_FALSE(GlobMatchComponent("*[0-9]", "worker"));
}

TEST(GlobTest, EscapedCharactersAreLiteral) {
  EXPECT_TRUE(GlobMatchComponent("a\\*b", "a*b"));
  EXPECT_FALSE(GlobMatchComponent("a\\*b", "axb"));
  EXPECT_TRUE(GlobMatchComponent("\\?", "?"));
  EXPECT_FALSE(GlobMatchComponent("\\?", "x"));
}

TEST(GlobTest, SingleStarStaysInOneComponent) {
  EXPECT_TRUE(GlobMatchPath("/a/*/c", "/a/b/c"));
  EXPECT_FALSE(GlobMatchPath("/a/*/c", "/a/b/x/c"));
  EXPECT_FALSE(GlobMatchPath("/a/*", "/a/b/c"));
  EXPECT_FALSE(GlobMatchPath("/a?c", "/a/c"));
}

TEST(GlobTest, DoubleStarSpansWholeComponents) {
  EXPECT_TRUE(GlobMatchPath("/**/train", "/train"));
  EXPECT_TRUE(GlobMatchPath("/**/train", "/a/train"));
  EXPECT_TRUE(GlobMatchPath("/**/train", "/a/b/train"));
  EXPECT_FALSE(GlobMatchPath("/**/train", "/a/b/train/x"));
  EXPECT_FALSE(GlobMatchPath("/**/train", "/a/b/xtrain"));
  EXPECT_TRUE(GlobMatchPath("/a/**", "/a"));
  EXPECT_TRUE(GlobMatchPath("/a/**", "/a/b/c"));
  EXPECT_FALSE(GlobMatchPath("/a/**", "/b"));
  EXPECT_TRUE(GlobMatchPath("/**", "/"));
  EXPECT_TRUE(GlobMatchPath("/a/**/b/**/c", "/a/x/b/y/z/c"));
  EXPECT_TRUE(GlobMatchPath("/a/**/b/**/c", "/a/b/c"));
  EXPECT_FALSE(GlobMatchPath("/a/**/b/**/c", "/a/c/b"));
  EXPECT_TRUE(GlobMatchPath("/**/job[0-9]*/**", "/system.slice/job42/x/y"));
}

TEST(GlobTest, PathsAreAnchoredAndExact) {
  EXPECT_TRUE(GlobMatchPath("/", "/"));
  EXPECT_FALSE(GlobMatchPath("/", "/a"));
  EXPECT_TRUE(GlobMatchPath("/system.slice/train.service", "/system.slice/train.service"));
  EXPECT_FALSE(GlobMatchPath("/system.slice", "/system.slice/train.service"));
  EXPECT_FALSE(GlobMatchPath("train", "/train"));
  // Redundant slashes do not matter.
  EXPECT_TRUE(GlobMatchPath("/a/b/", "/a//b"));
}

TEST(GlobTest, Validation) {
  EXPECT_TRUE(ValidateGlob("/**/train").ok());
  EXPECT_TRUE(ValidateGlob("/a/*/job[0-9]").ok());
  EXPECT_TRUE(ValidateGlob("train*.service").ok());
  EXPECT_TRUE(ValidateGlob("/a/\\[x").ok());
  EXPECT_FALSE(ValidateGlob("").ok());
  EXPECT_FALSE(ValidateGlob("/a/job[0-9").ok());
  EXPECT_FALSE(ValidateGlob("/a/x**").ok());
  EXPECT_FALSE(ValidateGlob("/a/**b/c").ok());
  EXPECT_FALSE(ValidateGlob("/a[/]b").ok());
  auto status = ValidateGlob("/a/job[0-9");
  EXPECT_NE(status.message().find("/a/job[0-9"), absl::string_view::npos) << status;
}

}  // namespace
}  // namespace stagewatch
