#include "eval/compile_log.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(CompileLog, KeepsTheFirstErrorsWithTheirSourceExcerpt) {
  std::string log =
      "[1/2] c++ -O3 -c kernel.cpp -o kernel.o\n"
      "FAILED: kernel.o\n"
      "In file included from /usr/include/c++/12/vector:64,\n"
      "kernel.cpp:12:5: error: 'foo' was not declared in this scope\n"
      "   12 |     foo(x);\n"
      "      |     ^~~\n"
      "/usr/include/c++/12/bits/stl_vector.h:100:3: note: candidate: something long\n"
      "kernel.cpp:20:1: error: expected ';' before '}' token\n"
      "kernel.cpp:30:1: error: third\n"
      "kernel.cpp:40:1: error: fourth\n"
      "ninja: build stopped: subcommand failed.\n";
  std::string trimmed = trim_compile_log(log);
  EXPECT_NE(trimmed.find("kernel.cpp:12:5: error: 'foo' was not declared"), std::string::npos);
  EXPECT_NE(trimmed.find("    foo(x);"), std::string::npos);
  EXPECT_NE(trimmed.find("kernel.cpp:20:1: error"), std::string::npos);
  EXPECT_EQ(trimmed.find("note: candidate"), std::string::npos);
  EXPECT_EQ(trimmed.find("fourth"), std::string::npos);
  EXPECT_NE(trimmed.find("[1 more errors in the full log]"), std::string::npos);
}

TEST(CompileLog, NvccStyleErrorsAreRecognised) {
  std::string trimmed = trim_compile_log("kernel.cu(7): error: identifier \"blockIdxx\" is undefined\n  int i = blockIdxx.x;\n");
  EXPECT_NE(trimmed.find("kernel.cu(7): error"), std::string::npos);
}

TEST(CompileLog, WithoutRecognisableErrorsKeepsTheEnd) {
  std::string log;
  for (int i = 0; i < 100; ++i) log += "line " + std::to_string(i) + "\n";
  std::string trimmed = trim_compile_log(log);
  EXPECT_EQ(trimmed.find("line 5\n"), std::string::npos);
  EXPECT_NE(trimmed.find("line 99"), std::string::npos);
}

TEST(CompileLog, IsCappedInLength) {
  std::string log = "a.cpp:1:1: error: " + std::string(10000, 'x') + "\n";
  EXPECT_LT(trim_compile_log(log).size(), 4100u);
}

}  // namespace
}  // namespace kforge
