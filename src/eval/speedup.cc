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
  if (a.empty()) return e;
  const double mb = median(b);
  e.point = mb > 0 ? median(a) / mb : 0;
  if (a.size() < 3) {
    e.method = "range of per-round ratios (fewer than 3 rounds)";
    e.low = e.high = e.point;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double r = b[i] > 0 ? a[i] / b[i] : 0;
      e.low = std::min(e.low, r);
      e.high = std::max(e.high, r);
    }
    return e;
  }
  e.method = "paired bootstrap of the ratio of medians over per-round block medians";
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, a.size() - 1);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(resamples));
  std::vector<double> ra(a.size()), rb(b.size());
  for (int r = 0; r < resamples; ++r) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::size_t k = pick(rng);
      ra[i] = a[k];
      rb[i] = b[k];
    }
    const double m = median(rb);
    if (m > 0) ratios.push_back(median(ra) / m);
  }
  if (ratios.empty()) return e;
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1.0 - confidence) / 2.0;
  e.low = quantile(ratios, tail);
  e.high = quantile(ratios, 1.0 - tail);
  return e;
}

nlohmann::json to_json(const SpeedupEstimate& e) {
  return {{"point", e.point}, {"ci_low", e.low},     {"ci_high", e.high}, {"confidence", e.confidence},
          {"rounds", e.rounds}, {"faster", e.faster()}, {"method", e.method}};
}

}  // namespace kforge
