#include "eval/timing_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kforge {

namespace {
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  auto hi = static_cast<std::size_t>(std::ceil(pos));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}
}  // namespace

TimingStats summarize(std::vector<double> samples) {
  TimingStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.reps = static_cast<int>(samples.size());
  s.median_ms = quantile(samples, 0.5);
  s.p25_ms = quantile(samples, 0.25);
  s.p75_ms = quantile(samples, 0.75);
  s.min_ms = samples.front();
  s.max_ms = samples.back();
  s.mean_ms = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  double var = 0;
  for (double x : samples) var += (x - s.mean_ms) * (x - s.mean_ms);
  s.stdev_ms = samples.size() > 1 ? std::sqrt(var / static_cast<double>(samples.size() - 1)) : 0;
  return s;
}

nlohmann::json to_json(const TimingStats& s) {
  return {{"reps", s.reps},         {"median_ms", s.median_ms}, {"mean_ms", s.mean_ms},
          {"min_ms", s.min_ms},     {"max_ms", s.max_ms},       {"p25_ms", s.p25_ms},
          {"p75_ms", s.p75_ms},     {"stdev_ms", s.stdev_ms},   {"iqr_rel", s.iqr_rel()}};
}

}  // namespace kforge
