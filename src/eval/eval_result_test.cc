// The terminal summary of an evaluation and the spread figures the reports read.
#include "eval/eval_result.h"

#include <gtest/gtest.h>

#include "eval/timing_stats.h"

namespace kforge {
namespace {

using json = nlohmann::json;

json timed(std::vector<double> candidate, std::vector<double> eager, std::vector<double> compile) {
  return {{"status", "correct"},
          {"target", "cpu"},
          {"device", "cpu"},
          {"precision", "strict"},
          {"speedup_vs_eager", 1.7},
          {"speedup_vs_compile", 0.9},
          {"timing",
           {{"threads", 2},
            {"candidate", to_json(summarize(candidate))},
            {"eager", to_json(summarize(eager))},
            {"compile", to_json(summarize(compile))}}}};
}

TEST(Summarize, LeadsWithTheFasterBaselineAndShowsEachSpread) {
  EvalResult r{timed({1.0, 1.0, 1.02, 1.04, 1.05}, {1.7, 1.7, 1.7, 1.7, 1.7}, {0.9, 0.9, 0.9, 0.9, 0.9})};
  std::string s = summarize(r);
  EXPECT_NE(s.find("candidate: 1.02 ms (p25-p75 1-1.04 ms, IQR 3.9% of the median, 5 reps)"), std::string::npos) << s;
  EXPECT_NE(s.find("speedup: 0.90x (no interval) vs torch.compile (the faster baseline), 1.70x (no interval) vs eager; "
                   "no speed-of-light figure"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("verdict: Inconclusive"), std::string::npos) << s;
  EXPECT_EQ(s.find("unstable"), std::string::npos) << s;
}

// The figures a verdict rests on: each interval, the % of speed of light, and, when an interval
// includes 1, the advice to measure again (never "keep using PyTorch").
TEST(Summarize, ShowsTheIntervalsTheSpeedOfLightAndWhatTheyAllow) {
  json doc = timed({1.0, 1.0, 1.0, 1.0, 1.0}, {1.4, 1.4, 1.4, 1.4, 1.4}, {1.4, 1.4, 1.4, 1.4, 1.4});
  doc["speedup"] = {{"vs_eager", {{"point", 2.1}, {"ci_low", 1.9}, {"ci_high", 2.3}, {"rounds", 5}}},
                    {"vs_compile", {{"point", 1.43}, {"ci_low", 0.82}, {"ci_high", 1.54}, {"rounds", 5}}}};
  doc["sol"] = {{"fraction", 0.0624}};
  std::string s = summarize(EvalResult{doc});
  EXPECT_NE(s.find("speedup: 1.43x [0.82, 1.54] vs torch.compile (the faster baseline), 2.10x [1.90, 2.30] vs eager "
                   "(95% confidence intervals); 6.24% of speed of light"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("verdict: Inconclusive: "), std::string::npos) << s;
  EXPECT_NE(s.find("Measure again"), std::string::npos) << s;
  EXPECT_EQ(s.find("Keep using PyTorch"), std::string::npos) << s;
  doc["speedup"]["vs_compile"]["ci_low"] = 1.2;
  EXPECT_NE(summarize(EvalResult{doc}).find("verdict: Faster than PyTorch"), std::string::npos);
}

// A candidate that failed before any trial shows no "0/0 trials passed" line.
TEST(Summarize, AFailureBeforeAnyTrialHasNoCorrectnessLine) {
  json doc = {{"status", "runtime_error"}, {"error", {{"kind", "runtime_error"}, {"message", "boom"}}},
              {"correctness", {{"trials", 0}, {"trials_passed", 0}}}};
  EXPECT_EQ(summarize(EvalResult{doc}).find("0/0"), std::string::npos);
}

TEST(Summarize, MarksAnUnstableTimingAndWarns) {
  EvalResult r{timed({1.0, 1.0, 1.0, 1.0, 1.0}, {1.0, 1.2, 1.7, 2.0, 2.5}, {1.0, 1.0, 1.0, 1.0, 1.0})};
  std::string s = summarize(r);
  EXPECT_NE(s.find("eager:     1.7 ms (p25-p75 1.2-2 ms, IQR 47.1% of the median, unstable, 5 reps)"), std::string::npos)
      << s;
  EXPECT_NE(s.find("warning: unstable timing: an IQR of 47% of the median (over 15%)"), std::string::npos) << s;
  EXPECT_NEAR(*max_iqr_rel(r.doc), 0.8 / 1.7, 1e-9);
  json spread = timing_spread(r.doc);
  EXPECT_EQ(spread["eager"]["p25_ms"], 1.2);
  EXPECT_EQ(spread["candidate"]["iqr_rel"], 0.0);
}

TEST(Summarize, NothingTimedHasNoSpread) {
  json doc = {{"status", "incorrect"}};
  EXPECT_FALSE(max_iqr_rel(doc));
  EXPECT_TRUE(timing_spread(doc).empty());
}

}  // namespace
}  // namespace kforge
