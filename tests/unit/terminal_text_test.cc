// What counts as a control character, and how it is shown: once, visibly.
#include "runs/terminal_text.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

TEST(TerminalTextTest, EscapesEveryControlCharacterOnceAndKeepsTheRest) {
  EXPECT_EQ(TerminalText("plain text, ×2 ünïcode ✓"), "plain text, ×2 ünïcode ✓");
  EXPECT_EQ(TerminalText("a\x1b[2Jb\x01""c\x7f"), "a\\x1b[2Jb\\x01c\\x7f");
  EXPECT_EQ(TerminalText("line\nnext\tcol\r"), "line\\x0anext\\x09col\\x0d");
  EXPECT_EQ(TerminalText("csi \xc2\x9b""31m"), "csi \\xc2\\x9b31m") << "C1 in UTF-8";
  EXPECT_EQ(TerminalText("lone \x9b""31m"), "lone \\x9b31m") << "C1 as one byte";
  EXPECT_EQ(TerminalText("cut \xe2\x9c"), "cut \\xe2\\x9c") << "a sequence cut short";
  EXPECT_EQ(TerminalText("overlong \xc0\xaf"), "overlong \\xc0\\xaf");
  EXPECT_EQ(TerminalText("surrogate \xed\xa0\x80"), "surrogate \\xed\\xa0\\x80");
  EXPECT_EQ(TerminalText("already \\x1b"), "already \\x1b") << "text is escaped once, not again";
  EXPECT_EQ(TerminalText(std::string("nul\0in", 6)), "nul\\x00in");
}

}  // namespace
}  // namespace stagewatch
