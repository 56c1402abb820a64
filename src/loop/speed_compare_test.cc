// Decisions on recorded EvalResults (testdata/): two evaluations of the same fast ReLU kernel,
// an unoptimised one, and a noisy one with a torch.compile baseline.
#include "loop/speed_compare.h"

#include <fstream>

#include <gtest/gtest.h>

namespace kforge::loop {
namespace {

nlohmann::json fixture(const std::string& name) {
  std::ifstream in(std::string(KFORGE_SOURCE_DIR) + "/src/loop/testdata/" + name);
  return nlohmann::json::parse(in);
}

nlohmann::json scaled(nlohmann::json doc, double factor, double spread) {
  auto& c = doc["timing"]["candidate"];
  double m = c["median_ms"].get<double>() * factor;
  c["median_ms"] = m;
  c["p25_ms"] = m * (1 - spread);
  c["p75_ms"] = m * (1 + spread);
  return doc;
}

// The noise-aware test on two EvalResults' candidate timings.
SpeedVerdict faster_than(const nlohmann::json& a, const nlohmann::json& b, double min_gain) {
  auto candidate = [](const nlohmann::json& doc) {
    return doc.value("timing", nlohmann::json::object()).value("candidate", nlohmann::json());
  };
  return faster_timing(candidate(a), candidate(b), min_gain);
}

TEST(SpeedCompare, TheSameKernelMeasuredTwiceIsNotFaster) {
  auto a = fixture("relu_fast_a.json"), b = fixture("relu_fast_b.json");
  // Their medians differ by about 20%, inside the measurements' spread.
  EXPECT_FALSE(faster_than(a, b, 0.03).faster);
  EXPECT_FALSE(faster_than(b, a, 0.03).faster) << faster_than(b, a, 0.03).reason;
}

TEST(SpeedCompare, AVectorisedKernelBeatsTheUnoptimisedOne) {
  auto slow = fixture("relu_slow.json"), fast = fixture("relu_fast_a.json");
  auto v = faster_than(slow, fast, 0.03);
  EXPECT_TRUE(v.faster) << v.reason;
  EXPECT_GT(v.ratio, 5);
  EXPECT_FALSE(faster_than(fast, slow, 0.03).faster);
}

TEST(SpeedCompare, SmallGainsNeedTightMeasurements) {
  auto base = scaled(fixture("relu_fast_a.json"), 1.0, 0.01);
  EXPECT_FALSE(faster_than(base, scaled(base, 0.98, 0.005), 0.03).faster);  // 2%: below the minimum gain
  EXPECT_TRUE(faster_than(base, scaled(base, 0.95, 0.005), 0.03).faster);   // 5%, tight spread
  EXPECT_FALSE(faster_than(base, scaled(base, 0.95, 0.05), 0.03).faster);   // 5%, overlapping spread
  EXPECT_FALSE(faster_than(base, fixture("relu_slow.json"), 0.0).faster);
}

TEST(SpeedCompare, UntimedResultsAreNeverFaster) {
  nlohmann::json untimed = {{"status", "correct"}};
  EXPECT_FALSE(faster_than(fixture("relu_slow.json"), untimed, 0.03).faster);
  EXPECT_FALSE(faster_than(untimed, fixture("relu_fast_a.json"), 0.03).faster);
  EXPECT_FALSE(candidate_median_ms(untimed));
}

TEST(SpeedCompare, BeatingPyTorchUsesTheFasterBaseline) {
  auto noisy = fixture("relu_fast_noisy_with_compile.json");
  auto v = beats_pytorch(noisy, 0.03);
  EXPECT_FALSE(v.faster);
  EXPECT_NE(v.reason.find("eager"), std::string::npos) << v.reason;  // eager was the faster baseline here
  EXPECT_LT(*speedup_vs_best_baseline(noisy), 1.0);
  EXPECT_FALSE(beats_pytorch(fixture("relu_slow.json"), 0.03).faster);
  auto fast = scaled(fixture("relu_fast_a.json"), 0.2, 0.01);
  EXPECT_TRUE(beats_pytorch(fast, 0.03).faster);
}

TEST(SpeedCompare, TheEvaluatorsOwnSpeedupVerdictsWinWhenPresent) {
  auto doc = scaled(fixture("relu_fast_a.json"), 0.2, 0.01);  // the timing summaries alone say faster
  doc["speedup"] = {{"vs_eager", {{"point", 1.02}, {"ci_low", 0.97}, {"ci_high", 1.08}, {"confidence", 0.95},
                                   {"rounds", 5}, {"faster", false}}}};
  auto v = beats_pytorch(doc, 0.03);
  EXPECT_FALSE(v.faster);
  EXPECT_EQ(v.reason, "inconclusive: 1.02x [0.97, 1.08] vs eager (95% confidence intervals); no speed-of-light figure");
  doc["speedup"]["vs_eager"] = {{"point", 1.5}, {"ci_low", 1.2}, {"ci_high", 1.8}, {"rounds", 5}};
  doc["speedup"]["vs_compile"] = {{"point", 0.9}, {"ci_low", 0.8}, {"ci_high", 0.95}, {"rounds", 5}};
  EXPECT_FALSE(beats_pytorch(doc, 0.03).faster);  // must beat both baselines
  doc["speedup"]["vs_compile"] = {{"point", 1.1}, {"ci_low", 1.02}, {"ci_high", 1.2}, {"rounds", 5}};
  EXPECT_TRUE(beats_pytorch(doc, 0.03).faster);
}

TEST(SpeedCompare, SpeedOfLightFractionIsReadWhenPresent) {
  auto doc = fixture("relu_fast_a.json");
  EXPECT_FALSE(sol_fraction(doc));
  doc["sol"] = {{"candidate_pct_of_sol", 12.5}, {"sol_ms", 1.0}};
  EXPECT_DOUBLE_EQ(*sol_fraction(doc), 0.125);
  doc["sol"] = {{"fraction", 0.8}};
  EXPECT_DOUBLE_EQ(*sol_fraction(doc), 0.8);
  doc["sol"] = {{"bound_ms", doc["timing"]["candidate"]["median_ms"].get<double>() / 2}};
  EXPECT_DOUBLE_EQ(*sol_fraction(doc), 0.5);
}

}  // namespace
}  // namespace kforge::loop
