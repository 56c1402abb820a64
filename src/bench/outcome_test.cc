#include "bench/outcome.h"

#include <gtest/gtest.h>

namespace kforge::bench {
namespace {

using json = nlohmann::json;

TEST(Outcome, FromACorrectEvaluation) {
  json doc = {{"status", "correct"},
              {"correct", true},
              {"speedup_vs_eager", 2.0},
              {"speedup_vs_compile", 1.5},
              {"timing", {{"candidate", {{"median_ms", 1.0}}}, {"eager", {{"median_ms", 2.0}}},
                          {"compile", {{"median_ms", 1.5}}}}},
              {"sol", {{"candidate_pct_of_sol", 40.0}}},
              {"library_calls", {{"operators", {"matmul"}}, {"share", 0.7}}},
              {"checks", {{{"name", "timing_crosscheck"}, {"verdict", "pass"}, {"message", "ok"}},
                          {{"name", "implausible_speedup"}, {"verdict", "warn"}, {"message", "30x re-measured"}}}}};
  json o = outcome_from_evaluation(doc, 7);
  EXPECT_EQ(o["status"], "correct");
  EXPECT_EQ(o["correct"], true);
  EXPECT_EQ(o["candidate_ms"], 1.0);
  EXPECT_EQ(o["eager_ms"], 2.0);
  EXPECT_EQ(o["compile_ms"], 1.5);
  EXPECT_EQ(o["speedup_vs_compile"], 1.5);
  EXPECT_DOUBLE_EQ(o["sol_pct"].get<double>(), 40.0);
  EXPECT_EQ(o["evaluation_id"], 7);
  EXPECT_EQ(o["library_calls"], json::array({"matmul"}));
  EXPECT_EQ(o["library_share"], 0.7);
  EXPECT_EQ(o["speedup_by_round"], json::array({2.0}));
  EXPECT_EQ(o["message"], "warning implausible_speedup: 30x re-measured");
}

TEST(Outcome, CountsTriesThatRanOutOfMemoryBesideOthers) {
  json doc = {{"status", "correct"}, {"correct", true},
              {"memory", {{"retries", {{{"status", "runtime_error"}, {"error", {{"kind", "device_oom"}}}}}}}}};
  json o = outcome_from_evaluation(doc, 3);
  EXPECT_EQ(o["memory_retries"], 1);
  EXPECT_EQ(o["message"], "ran out of memory beside other evaluations, evaluated again alone");
  EXPECT_EQ(outcome_from_evaluation({{"status", "correct"}, {"correct", true}}, 4)["memory_retries"], 0);
}

TEST(Outcome, AFailedEvaluationHasNoSpeedupAndSaysWhy) {
  json doc = {{"status", "incorrect"},
              {"correct", false},
              {"speedup_vs_eager", 3.0},
              {"error", {{"kind", "mismatch"}, {"message", "output differs at [0, 3]\nmore detail"}}}};
  json o = outcome_from_evaluation(doc, 1);
  EXPECT_EQ(o["correct"], false);
  EXPECT_TRUE(o["speedup_vs_eager"].is_null());
  EXPECT_EQ(o["message"], "output differs at [0, 3]");
  EXPECT_EQ(o["speedup_by_round"], json::array({nullptr}));
}

TEST(Outcome, FromARunTakesTheBestCandidateAndUsage) {
  json summary = {{"run_id", 5},
                  {"status", "finished"},
                  {"stop_reason", "rounds"},
                  {"best", {{"step", "r1.s0.a0"}, {"median_ms", 0.5}, {"eager_ms", 1.0}, {"compile_ms", nullptr},
                            {"speedup_vs_eager", 2.0}, {"speedup_vs_compile", nullptr}, {"sol_fraction", 0.25}}},
                  {"best_by_round", {{{"round", 0}, {"speedup_vs_eager", nullptr}},
                                     {{"round", 1}, {"speedup_vs_eager", 2.0}}}},
                  {"usage", {{"calls", 3}, {"input_tokens", 100}, {"output_tokens", 50}, {"cost_usd", 0.01}}}};
  json o = outcome_from_run(summary);
  EXPECT_EQ(o["status"], "correct");
  EXPECT_EQ(o["run_id"], 5);
  EXPECT_EQ(o["speedup_vs_eager"], 2.0);
  EXPECT_DOUBLE_EQ(o["sol_pct"].get<double>(), 25.0);
  EXPECT_EQ(o["speedup_by_round"], json::array({nullptr, 2.0}));
  EXPECT_EQ(o["llm"]["input_tokens"], 100);
  EXPECT_EQ(o["message"], "best r1.s0.a0; stopped: rounds");
}

TEST(Outcome, ARunWithoutACorrectCandidateFails) {
  json o = outcome_from_run({{"run_id", 2}, {"status", "finished"}, {"best", nullptr}, {"verdict", "No correct."}});
  EXPECT_EQ(o["status"], "no_correct_candidate");
  EXPECT_EQ(o["correct"], false);
  EXPECT_EQ(outcome_from_run({{"status", "failed"}, {"best", nullptr}})["status"], "run_failed");
}

TEST(Outcome, CarriesTheTimingSpreadAndMarksAnUnstableTiming) {
  json doc = {{"status", "correct"},
              {"correct", true},
              {"speedup_vs_eager", 2.0},
              {"env", {{"torch", "2.11.0"}}},
              {"timing", {{"candidate", {{"median_ms", 1.0}, {"p25_ms", 0.9}, {"p75_ms", 1.1}, {"iqr_rel", 0.2}}},
                          {"eager", {{"median_ms", 2.0}, {"p25_ms", 1.95}, {"p75_ms", 2.05}, {"iqr_rel", 0.05}}}}}};
  json o = outcome_from_evaluation(doc, 3);
  EXPECT_EQ(o["timing_spread"]["candidate"]["p25_ms"], 0.9);
  EXPECT_EQ(o["timing_spread"]["eager"]["p75_ms"], 2.05);
  EXPECT_FALSE(o["timing_spread"].contains("compile"));
  EXPECT_EQ(o["max_iqr_rel"], 0.2);
  EXPECT_EQ(o["unstable"], true);  // 20% > 15%
  EXPECT_EQ(o["torch"], "2.11.0");
  doc["timing"]["candidate"]["iqr_rel"] = 0.1;
  EXPECT_EQ(outcome_from_evaluation(doc, 3)["unstable"], false);
  // From a run: the accepted candidate's spread, as the loop records it.
  json run = {{"status", "finished"},
              {"best", {{"step", "r0.s0.a0"}, {"speedup_vs_eager", 2.0},
                        {"timing_spread", {{"candidate", {{"p25_ms", 1.0}, {"p75_ms", 1.5}, {"iqr_rel", 0.4}}}}}}}};
  EXPECT_EQ(outcome_from_run(run)["unstable"], true);
  EXPECT_TRUE(outcome_from_run({{"status", "finished"}, {"best", nullptr}})["max_iqr_rel"].is_null());
}

TEST(Outcome, AMissingCandidateIsAFailure) {
  json o = missing_candidate_outcome("/c/03_softmax.py");
  EXPECT_EQ(o["status"], "no_candidate");
  EXPECT_EQ(o["correct"], false);
  EXPECT_EQ(o["message"], "no candidate file /c/03_softmax.py");
}

}  // namespace
}  // namespace kforge::bench
