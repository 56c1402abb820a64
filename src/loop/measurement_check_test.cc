#include "loop/measurement_check.h"

#include <gtest/gtest.h>

namespace kforge::loop {

using json = nlohmann::json;

namespace {

json timed(double median, double p25, double p75, double pct_of_sol) {
  return {{"timing", {{"candidate", {{"median_ms", median}, {"p25_ms", p25}, {"p75_ms", p75}, {"iqr_rel", (p75 - p25) / median}}}}},
          {"sol", {{"sol_ms", median * pct_of_sol / 100}, {"candidate_pct_of_sol", pct_of_sol}}}};
}

}  // namespace

TEST(MeasurementCheck, AReadingAboveItsBoundIsFlaggedAndNeverStopsTheRun) {
  json doc = timed(1.0, 0.98, 1.02, 125);  // the report's case: "close to speed of light" at 125%
  MeasurementFlags m = check_measurement(doc);
  ASSERT_EQ(m.flags, std::vector<std::string>{"over_bound"});
  EXPECT_NE(m.reasons[0].find("125% of its speed-of-light bound"), std::string::npos) << m.reasons[0];
  EXPECT_FALSE(sol_stop_reached(doc, 0.9));
}

TEST(MeasurementCheck, TheFreshInputRemeasurementDecidesWhenPresent) {
  json doc = timed(1.0, 0.98, 1.02, 125);
  doc["sol"]["remeasured_pct_of_sol"] = 92.0;
  EXPECT_FALSE(check_measurement(doc).any());
  // A stored infinite percentage (a re-measured time of 0) reads back as null: still the re-measurement's.
  doc["sol"]["remeasured_pct_of_sol"] = nullptr;
  EXPECT_FALSE(check_measurement(doc).any());
}

TEST(MeasurementCheck, AWideSpreadIsUnstable) {
  json doc = timed(1.0, 0.35, 32.0, 50);  // the report's p25-p75 of 0.35-32 ms
  MeasurementFlags m = check_measurement(doc);
  ASSERT_EQ(m.flags, std::vector<std::string>{"unstable"});
  EXPECT_FALSE(sol_stop_reached(timed(1.0, 0.5, 1.5, 95), 0.9));
  EXPECT_FALSE(check_measurement(timed(1.0, 0.94, 1.08, 50)).any());  // 14%: within the threshold
}

TEST(MeasurementCheck, AClean95PercentReadingStopsAt90) {
  EXPECT_TRUE(sol_stop_reached(timed(1.0, 0.98, 1.02, 95), 0.9));
  EXPECT_FALSE(sol_stop_reached(timed(1.0, 0.98, 1.02, 80), 0.9));
  EXPECT_FALSE(sol_stop_reached(timed(1.0, 0.98, 1.02, 95), 0));
}

}  // namespace kforge::loop
