#include "eval/speedup.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace kforge {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

SpeedupEstimate estimate_speedup(const std::vector<double>& a, const std::vector<double>& b, double confidence,
                                 int resamples, std::uint64_t seed) {
  if (a.size() != b.size()) throw std::invalid_argument("speedup: baseline and candidate need one block per round each");
  SpeedupEstimate e;
  e.confidence = confidence;
  e.rounds = static_cast<int>(a.size());
  // One ratio per round: the load a round ran under cancels out of it.
  std::vector<double> ratios;
  for (std::size_t i = 0; i < a.size(); ++i) ratios.push_back(b[i] > 0 ? a[i] / b[i] : 0);
  if (ratios.empty()) return e;
  e.point = median(ratios);
  if (ratios.size() < 3) {
    e.method = "range of per-round ratios (fewer than 3 rounds)";
    e.low = *std::min_element(ratios.begin(), ratios.end());
    e.high = *std::max_element(ratios.begin(), ratios.end());
    return e;
  }
  e.method = "median of per-round ratios, paired bootstrap over rounds";
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, ratios.size() - 1);
  std::vector<double> medians(static_cast<std::size_t>(resamples)), resampled(ratios.size());
  for (double& m : medians) {
    for (double& r : resampled) r = ratios[pick(rng)];
    m = median(resampled);
  }
  std::sort(medians.begin(), medians.end());
  const double tail = (1.0 - confidence) / 2.0;
  e.low = quantile(medians, tail);
  e.high = quantile(medians, 1.0 - tail);
  return e;
}

nlohmann::json to_json(const SpeedupEstimate& e) {
  return {{"point", e.point}, {"ci_low", e.low},     {"ci_high", e.high}, {"confidence", e.confidence},
          {"rounds", e.rounds}, {"faster", e.faster()}, {"method", e.method}};
}

}  // namespace kforge
