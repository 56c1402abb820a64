// Summaries of repeated timings (all in milliseconds).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

struct TimingStats {
  int reps = 0;
  double median_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0, p25_ms = 0, p75_ms = 0, stdev_ms = 0;
  // Relative spread: (p75 - p25) / median.
  double iqr_rel() const { return median_ms > 0 ? (p75_ms - p25_ms) / median_ms : 0; }
};

TimingStats summarize(std::vector<double> samples_ms);
nlohmann::json to_json(const TimingStats& stats);

}  // namespace kforge
