// Noise-aware speedups: is B faster than A, with a confidence interval rather than one ratio.
//
// Input: per-round block medians of A (baseline) and B (candidate), measured interleaved so round i
// of each saw the same machine conditions. Point estimate: the median of the per-round ratios A/B
// (a round's load cancels out of its ratio). Interval: a percentile bootstrap: rounds are resampled
// with replacement and the median ratio recomputed. B counts as faster only when the interval's
// lower bound exceeds 1. (A ratio of the two medians is not used: when the load moves both together,
// both medians come from the same round, and that round's ratio is often the interval's end.)
// With fewer than three rounds there is nothing to resample; the interval is then the range of the
// per-round ratios, which is honest about how little is known.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

struct SpeedupEstimate {
  double point = 0;       // median of baseline / candidate per round; > 1 means the candidate is faster
  double low = 0, high = 0;
  double confidence = 0.95;
  int rounds = 0;
  std::string method;
  // Fewer than three rounds never establish a difference.
  bool faster() const { return rounds >= 3 && low > 1.0; }
  bool slower() const { return rounds >= 3 && high < 1.0; }
};

SpeedupEstimate estimate_speedup(const std::vector<double>& baseline_blocks_ms,
                                 const std::vector<double>& candidate_blocks_ms, double confidence = 0.95,
                                 int resamples = 2000, std::uint64_t seed = 12345);

// The decision the agent loop needs: true only when B beats A beyond the noise.
inline bool is_faster(const std::vector<double>& a_blocks_ms, const std::vector<double>& b_blocks_ms,
                      double confidence = 0.95) {
  return estimate_speedup(a_blocks_ms, b_blocks_ms, confidence).faster();
}

nlohmann::json to_json(const SpeedupEstimate& estimate);

}  // namespace kforge
