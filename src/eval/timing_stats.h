// Summaries of repeated timings (all in milliseconds).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

// A timing whose interquartile range exceeds this share of its median is marked unstable in
// every report and summary: its speedups are not to be trusted (a busy machine, too few reps).
inline constexpr double kUnstableIqrRel = 0.15;

struct TimingStats {
  int reps = 0;
  double median_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0, p25_ms = 0, p75_ms = 0, stdev_ms = 0;
  // Relative spread: (p75 - p25) / median.
  double iqr_rel() const { return median_ms > 0 ? (p75_ms - p25_ms) / median_ms : 0; }
};

TimingStats summarize(std::vector<double> samples_ms);
nlohmann::json to_json(const TimingStats& stats);

}  // namespace kforge
