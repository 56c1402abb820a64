#include "loop/keep_decision.h"

#include <gtest/gtest.h>

namespace kforge::loop {

using json = nlohmann::json;

namespace {

// Per-round block medians of the best (a) and the challenger (b), made into a measurement.
PairMeasurement measured(const std::vector<double>& best_ms, const std::vector<double>& challenger_ms) {
  PairMeasurement m;
  m.complete = true;
  m.vs_best = estimate_speedup(best_ms, challenger_ms);
  m.detail = to_json(m.vs_best);
  return m;
}

const std::vector<double> kBest = {1.00, 1.02, 0.98, 1.01, 0.99, 1.00};
const std::vector<double> kTwiceAsFast = {0.50, 0.51, 0.49, 0.50, 0.52, 0.50};
const std::vector<double> kSlower = {1.50, 1.52, 1.49, 1.51, 1.48, 1.50};
// Same speed, wide noise: the interval straddles 1 every time.
const std::vector<double> kNoisySame = {0.70, 1.30, 0.95, 1.05, 1.40, 0.75};

TEST(PairMeasurementJson, ARoundTripKeepsWhatTheDecisionReads) {
  PairMeasurement m;
  m.complete = true;
  m.vs_best = {1.25, 1.1, 1.4, 0.95, 7, "paired bootstrap"};
  m.detail = {{"threads", 2}};
  PairMeasurement back = pair_measurement_from_json(nlohmann::json::parse(pair_measurement_to_json(m).dump()));
  EXPECT_TRUE(back.complete);
  EXPECT_EQ(back.failure, "");
  EXPECT_DOUBLE_EQ(back.vs_best.point, 1.25);
  EXPECT_DOUBLE_EQ(back.vs_best.low, 1.1);
  EXPECT_DOUBLE_EQ(back.vs_best.high, 1.4);
  EXPECT_EQ(back.vs_best.rounds, 7);
  EXPECT_EQ(back.vs_best.method, "paired bootstrap");
  EXPECT_TRUE(back.vs_best.faster());
  EXPECT_EQ(back.detail, m.detail);

  PairMeasurement failed;
  failed.failure = "the challenger failed (runtime_error): boom";
  PairMeasurement failed_back = pair_measurement_from_json(pair_measurement_to_json(failed));
  EXPECT_FALSE(failed_back.complete);
  EXPECT_EQ(failed_back.failure, failed.failure);
  EXPECT_THROW(pair_measurement_from_json({{"complete", true}}), nlohmann::json::exception);
}

}  // namespace

TEST(KeepDecision, KeptWhenTheIntervalLiesAboveOne) {
  int calls = 0;
  KeepDecision d = decide_keep([&](int) { ++calls; return measured(kBest, kTwiceAsFast); }, 0.03);
  EXPECT_EQ(d.outcome, "kept");
  EXPECT_TRUE(d.kept());
  EXPECT_EQ(calls, 1);
  EXPECT_GT(d.vs_best.low, 1.0);
  EXPECT_NEAR(d.vs_best.point, 2.0, 0.05);
  EXPECT_NE(d.reason.find("faster than the best"), std::string::npos) << d.reason;
}

TEST(KeepDecision, RejectedWhenTheIntervalLiesBelowOne) {
  KeepDecision d = decide_keep([&](int) { return measured(kBest, kSlower); }, 0.03);
  EXPECT_EQ(d.outcome, "rejected");
  EXPECT_LT(d.vs_best.high, 1.0);
  EXPECT_EQ(d.measurements, 1);
  EXPECT_NE(d.reason.find("slower"), std::string::npos);
}

TEST(KeepDecision, RejectedWhenFasterByLessThanTheMinimumGain) {
  const std::vector<double> slightly = {0.990, 1.005, 0.975, 0.995, 0.985, 0.99};
  KeepDecision d = decide_keep([&](int) { return measured(kBest, slightly); }, 0.10);
  EXPECT_EQ(d.outcome, "rejected");
  EXPECT_NE(d.reason.find("less than the 10% needed"), std::string::npos) << d.reason;
}

TEST(KeepDecision, StraddlingIsMeasuredTwiceMoreThenUndecidedKeepsTheBest) {
  int calls = 0;
  KeepDecision d = decide_keep([&](int i) { EXPECT_EQ(i, calls); ++calls; return measured(kBest, kNoisySame); }, 0.03);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(d.measurements, 3);
  EXPECT_EQ(d.outcome, "undecided");
  EXPECT_FALSE(d.kept());
  EXPECT_LE(d.vs_best.low, 1.0);
  EXPECT_GE(d.vs_best.high, 1.0);
  EXPECT_EQ(d.detail.size(), 3u);
  EXPECT_NE(d.reason.find("the best is kept"), std::string::npos) << d.reason;
  json j = d.to_json();
  EXPECT_EQ(j["outcome"], "undecided");
  EXPECT_TRUE(j.contains("ci_low") && j.contains("ci_high") && j.contains("ratio"));
}

TEST(KeepDecision, AStraddleThatResolvesOnTheSecondMeasurementDecides) {
  KeepDecision d = decide_keep([&](int i) { return i == 0 ? measured(kBest, kNoisySame) : measured(kBest, kTwiceAsFast); },
                               0.03);
  EXPECT_EQ(d.outcome, "kept");
  EXPECT_EQ(d.measurements, 2);
}

TEST(KeepDecision, AFailedMeasurementDecidesNothing) {
  KeepDecision d = decide_keep([&](int) { PairMeasurement m; m.failure = "timeout"; return m; }, 0.03);
  EXPECT_EQ(d.outcome, "failed");
  EXPECT_FALSE(d.kept());
  EXPECT_NE(d.reason.find("timeout"), std::string::npos);
}

}  // namespace kforge::loop
