#include "bench/suite.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge::bench {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  char t[] = "/tmp/kforge-suite-XXXXXX";
  return mkdtemp(t);
}

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "# problem\n";
}

std::vector<std::string> names(const std::vector<SuiteProblem>& v) {
  std::vector<std::string> out;
  for (const auto& p : v) out.push_back(p.name);
  return out;
}

TEST(Suite, ADirectoryGivesItsProblemFilesByName) {
  auto d = temp_dir();
  touch(d / "2_b.py");
  touch(d / "1_a.py");
  touch(d / "__init__.py");
  touch(d / "notes.txt");
  touch(d / "sub" / "3_c.py");
  auto suite = discover_suite(d.string());
  EXPECT_EQ(names(suite), (std::vector<std::string>{"1_a", "2_b"}));
  EXPECT_TRUE(suite[0].path.is_absolute());
}

TEST(Suite, AListFileNamesProblemsRelativeToItself) {
  auto d = temp_dir();
  touch(d / "probs" / "x.py");
  touch(d / "probs" / "y.py");
  std::ofstream(d / "suite.txt") << "# my ops\nprobs/y.py\n\n  probs/x.py  \n";
  EXPECT_EQ(names(discover_suite((d / "suite.txt").string())), (std::vector<std::string>{"x", "y"}));

  std::ofstream(d / "bad.txt") << "probs/missing.py\n";
  try {
    discover_suite((d / "bad.txt").string());
    FAIL() << "a missing problem must be an input error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt:1: problem file not found"), std::string::npos) << e.what();
  }
}

TEST(Suite, AGlobMatchesPythonFiles) {
  auto d = temp_dir();
  touch(d / "01_relu.py");
  touch(d / "02_sum.py");
  touch(d / "10_other.py");
  EXPECT_EQ(names(discover_suite((d / "0*.py").string())), (std::vector<std::string>{"01_relu", "02_sum"}));
  EXPECT_THROW(discover_suite((d / "9*.py").string()), InputError);
}

TEST(Suite, BadSuitesAreInputErrors) {
  auto d = temp_dir();
  EXPECT_THROW(discover_suite((d / "nothing").string()), InputError);
  EXPECT_THROW(discover_suite(d.string()), InputError);  // no problems in it
  EXPECT_THROW(discover_suite(""), InputError);
  touch(d / "a" / "p.py");
  touch(d / "b" / "p.py");
  std::ofstream(d / "dup.txt") << "a/p.py\nb/p.py\n";
  EXPECT_THROW(discover_suite((d / "dup.txt").string()), InputError);
}

TEST(Suite, CandidatesMatchByFileName) {
  auto d = temp_dir();
  touch(d / "cands" / "01_relu.py");
  EXPECT_EQ(match_candidate(d / "cands", {"01_relu", d / "p" / "01_relu.py"}), d / "cands" / "01_relu.py");
  EXPECT_EQ(match_candidate(d / "cands", {"02_sum", d / "p" / "02_sum.py"}), fs::path());
}

}  // namespace
}  // namespace kforge::bench
