#include "report/metrics.h"

#include <cmath>

#include <gtest/gtest.h>

namespace kforge::report {
namespace {

ProblemResult correct(double vs_eager, std::optional<double> vs_compile = std::nullopt) {
  ProblemResult r;
  r.correct = true;
  r.speedup_vs_eager = vs_eager;
  r.speedup_vs_compile = vs_compile;
  return r;
}
ProblemResult failed() { return {}; }

TEST(Metrics, FastPCountsCorrectAndFasterProblemsOverAllProblems) {
  std::vector<ProblemResult> r = {correct(0.5), correct(1.2), correct(3.0), failed()};
  EXPECT_DOUBLE_EQ(fast_p(r, 0.0, Baseline::kEager), 0.75);  // fast_0 is the correctness rate
  EXPECT_DOUBLE_EQ(fast_p(r, 1.0, Baseline::kEager), 0.5);
  EXPECT_DOUBLE_EQ(fast_p(r, 1.5, Baseline::kEager), 0.25);
  EXPECT_DOUBLE_EQ(fast_p(r, 3.0, Baseline::kEager), 0.0);  // strictly faster than p
  EXPECT_DOUBLE_EQ(fast_p({}, 1.0, Baseline::kEager), 0.0);
}

TEST(Metrics, AFailedProblemWithASpeedupIsNeverFast) {
  ProblemResult wrong = failed();
  wrong.speedup_vs_eager = 10.0;  // timed, but incorrect
  EXPECT_DOUBLE_EQ(fast_p({wrong}, 1.0, Baseline::kEager), 0.0);
  EXPECT_DOUBLE_EQ(*geomean_speedup({wrong}, Baseline::kEager, false), 1.0);
}

TEST(Metrics, TheFasterBaselineIsTheSmallerSpeedup) {
  EXPECT_DOUBLE_EQ(*speedup_against(correct(3.0, 1.5), Baseline::kFaster), 1.5);
  EXPECT_DOUBLE_EQ(*speedup_against(correct(0.8, 2.0), Baseline::kFaster), 0.8);
  // Without a torch.compile figure, eager is the only baseline.
  EXPECT_DOUBLE_EQ(*speedup_against(correct(3.0), Baseline::kFaster), 3.0);
  EXPECT_FALSE(speedup_against(correct(3.0), Baseline::kCompile));
}

TEST(Metrics, GeomeanCountsFailuresAsOneOverAllProblems) {
  std::vector<ProblemResult> r = {correct(4.0), correct(1.0), failed(), failed()};
  EXPECT_NEAR(*geomean_speedup(r, Baseline::kEager, false), std::pow(4.0, 0.25), 1e-12);
  EXPECT_NEAR(*geomean_speedup(r, Baseline::kEager, true), 2.0, 1e-12);
  EXPECT_FALSE(geomean_speedup({failed()}, Baseline::kEager, true));
  EXPECT_FALSE(geomean_speedup({}, Baseline::kEager, false));
}

TEST(Metrics, MedianSolUsesCorrectProblemsWithTheFigure) {
  ProblemResult a = correct(1.0), b = correct(1.0), c = correct(1.0), d = failed();
  a.sol_pct = 10;
  b.sol_pct = 30;
  d.sol_pct = 99;  // not correct: ignored
  EXPECT_DOUBLE_EQ(*median_sol_pct({a, b, c, d}), 20.0);
  EXPECT_FALSE(median_sol_pct({c, d}));
}

TEST(Metrics, ComputeMetricsReportsEveryBaselineAndWhatWasMeasured) {
  nlohmann::json m = compute_metrics({correct(2.0), correct(0.5), failed()});
  EXPECT_EQ(m["problems"], 3);
  EXPECT_EQ(m["correct"], 2);
  EXPECT_NEAR(m["correctness_rate"].get<double>(), 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(m["fast_p"]["eager"]["1"].get<double>(), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(m["fast_p"]["faster"]["1.5"].get<double>(), 1.0 / 3.0, 1e-12);
  EXPECT_EQ(m["baselines_measured"]["eager"], true);
  EXPECT_EQ(m["baselines_measured"]["compile"], false);
  EXPECT_TRUE(m["geomean_speedup"]["compile"]["correct_only"].is_null());
  EXPECT_EQ(m["geomean_speedup"]["compile"]["correct_without_measurement"], 2);
  EXPECT_NEAR(m["geomean_speedup"]["eager"]["correct_only"].get<double>(), 1.0, 1e-12);
  EXPECT_TRUE(m["median_sol_pct"].is_null());
}

TEST(Metrics, QuartilesOfTheSpeedupsOfCorrectProblems) {
  std::vector<ProblemResult> r = {correct(1.0, 0.5), correct(2.0, 4.0), correct(3.0), correct(5.0, 1.0), failed()};
  auto q = speedup_quartiles(r, Baseline::kEager);
  ASSERT_TRUE(q);
  EXPECT_DOUBLE_EQ(q->p25, 1.75);  // 1, 2, 3, 5: interpolated between ranks
  EXPECT_DOUBLE_EQ(q->median, 2.5);
  EXPECT_DOUBLE_EQ(q->p75, 3.5);
  auto f = speedup_quartiles(r, Baseline::kFaster);  // 0.5, 2, 3, 1 -> 0.5, 1, 2, 3
  EXPECT_DOUBLE_EQ(f->median, 1.5);
  EXPECT_FALSE(speedup_quartiles({failed()}, Baseline::kEager));
}

TEST(Metrics, CountsCorrectProblemsWithUnstableTimings) {
  ProblemResult noisy = correct(2.0), noisy_failure = failed();
  noisy.unstable = noisy_failure.unstable = true;
  auto m = compute_metrics({noisy, correct(1.0), noisy_failure});
  EXPECT_EQ(m["unstable"], 1);
  EXPECT_DOUBLE_EQ(m["speedup_quartiles"]["eager"]["p75"].get<double>(), 1.75);
  EXPECT_TRUE(m["speedup_quartiles"]["compile"].is_null());
  EXPECT_TRUE(problem_result_from_json({{"correct", true}, {"unstable", true}}).unstable);
}

TEST(Metrics, SpeedClassesOtherThanStandardAreCountedApart) {
  ProblemResult rewrite = correct(50.0);
  rewrite.speed_class = "algebraically_cheaper";
  ProblemResult constant = correct(1000.0);
  constant.speed_class = "degenerate";
  nlohmann::json m = compute_metrics({correct(2.0), failed(), rewrite, constant});
  EXPECT_EQ(m["correct"], 3);  // still correct
  EXPECT_NEAR(m["fast_p"]["eager"]["1"].get<double>(), 0.5, 1e-12);  // 1 of the 2 standard problems
  EXPECT_NEAR(m["geomean_speedup"]["eager"]["all_problems"].get<double>(), std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(m["geomean_speedup"]["eager"]["correct_only"].get<double>(), 2.0, 1e-12);
  EXPECT_EQ(m["separate_speed_classes"]["algebraically_cheaper"], 1);
  EXPECT_EQ(m["separate_speed_classes"]["degenerate"], 1);
  EXPECT_EQ(problem_result_from_json({{"correct", true}, {"speed_class", "degenerate"}}).speed_class, "degenerate");
  EXPECT_EQ(problem_result_from_json({{"correct", true}, {"speed_class", nullptr}}).speed_class, "standard");
}

TEST(Metrics, ReadsOutcomeDocuments) {
  auto r = problem_result_from_json({{"correct", true}, {"speedup_vs_eager", 1.5}, {"speedup_vs_compile", nullptr},
                                     {"sol_pct", 42.0}});
  EXPECT_TRUE(r.correct);
  EXPECT_DOUBLE_EQ(*r.speedup_vs_eager, 1.5);
  EXPECT_FALSE(r.speedup_vs_compile);
  EXPECT_DOUBLE_EQ(*r.sol_pct, 42.0);
}

}  // namespace
}  // namespace kforge::report
