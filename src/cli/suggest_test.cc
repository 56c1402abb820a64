#include "cli/suggest.h"

#include <gtest/gtest.h>

#include "cli/commands.h"

namespace kforge {
namespace {

const std::vector<std::string> kCommands = {"eval", "targets", "llm", "run", "report", "bench", "profile", "doctor"};

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("eval", "eval"), 0);
  EXPECT_EQ(edit_distance("evall", "eval"), 1);
  EXPECT_EQ(edit_distance("evla", "eval"), 1);  // a swap is one edit
  EXPECT_EQ(edit_distance("", "run"), 3);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
}

TEST(Suggest, NearestCommandForATypo) {
  EXPECT_EQ(nearest("evall", kCommands), "eval");
  EXPECT_EQ(nearest("bnech", kCommands), "bench");
  EXPECT_EQ(nearest("reprot", kCommands), "report");
  EXPECT_EQ(nearest("target", kCommands), "targets");
  EXPECT_EQ(nearest("doctr", kCommands), "doctor");
}

TEST(Suggest, NothingForAWordFarFromEveryCommand) {
  EXPECT_FALSE(nearest("optimize", kCommands));
  EXPECT_FALSE(nearest("xy", kCommands));  // two edits from llm and run: too many for a two-letter word
  EXPECT_FALSE(nearest("", kCommands));
}

class Mistakes : public ::testing::Test {
 protected:
  void SetUp() override { build_cli(app_, global_, &exit_code_); }
  std::optional<std::string> mistake(std::vector<std::string> args) { return find_mistake(app_, args); }

  CLI::App app_{"kforge: test", "kforge"};
  GlobalOptions global_;
  int exit_code_ = 0;
};

TEST_F(Mistakes, AMistypedCommandAtAnyLevel) {
  EXPECT_EQ(mistake({"evall", "p.py"}), "unknown command 'evall' (did you mean eval?); see `kforge --help`");
  EXPECT_EQ(mistake({"--config", "x.toml", "-q", "bnech"}),
            "unknown command 'bnech' (did you mean bench?); see `kforge --help`");
  EXPECT_EQ(mistake({"llm", "pnig"}), "unknown command 'pnig' (did you mean ping?); see `kforge llm --help`");
  EXPECT_EQ(mistake({"frobnicate"}), "unknown command 'frobnicate'; see `kforge --help`");
}

TEST_F(Mistakes, AMistypedOptionOfTheCommandItFollows) {
  EXPECT_EQ(mistake({"eval", "p.py", "c.py", "--trails", "3"}),
            "unknown option '--trails' of `kforge eval` (did you mean --trials?); see `kforge eval --help`");
  EXPECT_EQ(mistake({"bench", "--eval-rpes=3"}),
            "unknown option '--eval-rpes' of `kforge bench` (did you mean --eval-reps?); see `kforge bench --help`");
  EXPECT_EQ(mistake({"eval", "p.py", "--verbsoe"}),  // a global option after the command
            "unknown option '--verbsoe' of `kforge eval` (did you mean --verbose?); see `kforge eval --help`");
  EXPECT_FALSE(mistake({"eval", "p.py", "--optimise-harder"}));  // nothing near: the parser says it
}

TEST_F(Mistakes, NothingInACorrectCommandLine) {
  EXPECT_FALSE(mistake({"eval", "p.py", "c.py", "--trials", "3", "--set", "n=4", "--json", "-", "-q"}));
  EXPECT_FALSE(mistake({"--config", "eval", "run", "--llm", "exec:python3 m.py", "p.py"}));  // --config's value
  EXPECT_FALSE(mistake({"report", "--json", "bench-3"}));
  EXPECT_FALSE(mistake({"llm", "ping", "--prompt", "--not-an-option"}));
  EXPECT_FALSE(mistake({"completion", "bash"}));  // hidden commands are commands too
  EXPECT_FALSE(mistake({}));
}

}  // namespace
}  // namespace kforge
