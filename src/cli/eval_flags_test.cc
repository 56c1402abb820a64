#include "cli/eval_flags.h"

#include <gtest/gtest.h>

#include "cli/commands.h"

namespace kforge {
namespace {

class EvalFlagsOnEveryCommand : public ::testing::Test {
 protected:
  void SetUp() override { build_cli(app_, global_, &exit_code_); }
  CLI::Option* option(const std::string& command, const std::string& name) {
    return app_.get_subcommand(command)->get_option_no_throw(name);
  }
  CLI::App app_{"kforge"};
  GlobalOptions global_;
  int exit_code_ = 0;
};

TEST_F(EvalFlagsOnEveryCommand, OneSetOfDefaults) {
  const std::map<std::string, std::string> defaults = {
      {"--trials", "5"}, {"--reps", "30"}, {"--warmup", "3"}, {"--timeout", "120"}};
  for (const char* command : {"eval", "run", "bench", "profile"})
    for (const auto& [name, value] : defaults) {
      if (std::string(command) == "profile" && name == "--trials") continue;  // profile checks no correctness
      CLI::Option* o = option(command, name);
      ASSERT_NE(o, nullptr) << command << " " << name;
      EXPECT_EQ(o->get_default_str(), value) << command << " " << name;
    }
  EXPECT_EQ(option("profile", "--trials"), nullptr);
}

TEST_F(EvalFlagsOnEveryCommand, OlderNamesAreAliasesOnRunAndBench) {
  for (const char* command : {"run", "bench"})
    for (const char* flag : {"trials", "reps", "warmup", "timeout"})
      EXPECT_EQ(option(command, std::string("--eval-") + flag), option(command, std::string("--") + flag)) << command << " " << flag;
  EXPECT_EQ(option("eval", "--eval-trials"), nullptr);
}

TEST_F(EvalFlagsOnEveryCommand, ShapesAndNoTimingWhereTheyMeanSomething) {
  for (const char* command : {"eval", "run", "bench"}) EXPECT_NE(option(command, "--shapes"), nullptr) << command;
  EXPECT_NE(option("eval", "--no-timing"), nullptr);
  EXPECT_NE(option("bench", "--no-timing"), nullptr);
  EXPECT_EQ(option("run", "--no-timing"), nullptr);  // the loop optimises timings
}

TEST_F(EvalFlagsOnEveryCommand, CompileOnlyOnEvalAndRun) {
  for (const char* command : {"eval", "run"}) EXPECT_NE(option(command, "--compile-only"), nullptr) << command;
  EXPECT_EQ(option("bench", "--compile-only"), nullptr);
  EXPECT_EQ(option("profile", "--compile-only"), nullptr);  // nothing to profile without the device
}

TEST(EvalFlags, CompileOnlyIsStoredWithTheRunAndReachesItsEvaluations) {
  CLI::App app{"t"};
  EvalFlags flags;
  add_eval_flags(&app, flags, EvalCommand::kRun);
  app.parse("--compile-only", false);
  loop::RunOptions run;
  apply_eval_flags(flags, run);
  loop::RunOptions restored = loop::options_from_json(loop::to_json(run));
  EXPECT_TRUE(restored.compile_only);
  EvalOptions e;
  apply_run_options(restored, e);
  EXPECT_TRUE(e.compile_only);
}

TEST_F(EvalFlagsOnEveryCommand, EveryResultTakesJsonFile) {
  for (const char* command : {"eval", "profile", "run", "bench", "report", "targets", "doctor"}) {
    CLI::Option* o = option(command, "--json");
    ASSERT_NE(o, nullptr) << command;
    EXPECT_NE(o->get_type_size(), 0) << command << ": --json takes a FILE";
  }
}

TEST(EvalFlags, ParsedValuesReachTheEvaluationAndTheStoredRun) {
  CLI::App app{"t"};
  EvalFlags flags;
  add_eval_flags(&app, flags, EvalCommand::kBench);
  app.parse("--eval-reps 11 --shapes 2 --trials 7 --set n=4 --no-timing --seed 9", false);
  loop::RunOptions run;
  apply_eval_flags(flags, run);
  EXPECT_EQ(run.eval_trials, 7);
  EXPECT_EQ(run.eval_reps, 11);
  EXPECT_EQ(run.shapes, 2);
  EXPECT_FALSE(run.timing);
  EXPECT_EQ(run.seed, 9u);
  EXPECT_EQ(run.overrides.at("n"), "4");
  EvalOptions e;
  apply_run_options(run, e);
  EXPECT_EQ(e.trials, 7);
  EXPECT_EQ(e.reps, 11);
  EXPECT_EQ(e.shapes, 2);
  EXPECT_FALSE(e.timing);
  EXPECT_EQ(e.seed, 9u);
}

}  // namespace
}  // namespace kforge
