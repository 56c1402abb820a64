#include "loop/keep_decision.h"

#include <fmt/format.h>

namespace kforge::loop {

using json = nlohmann::json;

json KeepDecision::to_json() const {
  return {{"outcome", outcome},
          {"ratio", vs_best.point},
          {"ci_low", vs_best.low},
          {"ci_high", vs_best.high},
          {"confidence", vs_best.confidence},
          {"rounds", vs_best.rounds},
          {"measurements", measurements},
          {"reason", reason},
          {"detail", detail}};
}

json pair_measurement_to_json(const PairMeasurement& m) {
  return {{"complete", m.complete}, {"failure", m.failure}, {"vs_best", kforge::to_json(m.vs_best)}, {"detail", m.detail}};
}

PairMeasurement pair_measurement_from_json(const json& j) {
  PairMeasurement m;
  m.complete = j.at("complete").get<bool>();
  m.failure = j.at("failure").get<std::string>();
  const json& e = j.at("vs_best");
  m.vs_best.point = e.at("point").get<double>();
  m.vs_best.low = e.at("ci_low").get<double>();
  m.vs_best.high = e.at("ci_high").get<double>();
  m.vs_best.confidence = e.at("confidence").get<double>();
  m.vs_best.rounds = e.at("rounds").get<int>();
  m.vs_best.method = e.at("method").get<std::string>();
  m.detail = j.at("detail");
  return m;
}

KeepDecision decide_keep(const std::function<PairMeasurement(int)>& measure, double min_gain, int max_remeasurements) {
  KeepDecision d;
  for (int i = 0; i <= max_remeasurements; ++i) {
    PairMeasurement m = measure(i);
    d.measurements = i + 1;
    d.detail.push_back(m.detail);
    if (!m.complete) {
      d.outcome = "failed";
      d.reason = "the head-to-head timing did not complete: " + m.failure;
      return d;
    }
    d.vs_best = m.vs_best;
    const SpeedupEstimate& e = m.vs_best;
    const std::string ci = fmt::format("{:.2f}x, {:.0f}% CI [{:.2f}, {:.2f}] over {} rounds", e.point,
                                       100 * e.confidence, e.low, e.high, e.rounds);
    if (e.faster() && e.point >= 1 + min_gain) {
      d.outcome = "kept";
      d.reason = fmt::format("faster than the best: {}", ci);
      return d;
    }
    if (e.faster()) {
      d.outcome = "rejected";
      d.reason = fmt::format("faster, but by less than the {:.0f}% needed: {}", 100 * min_gain, ci);
      return d;
    }
    if (e.slower()) {
      d.outcome = "rejected";
      d.reason = fmt::format("slower than the best: {}", ci);
      return d;
    }
    d.reason = fmt::format("the interval contains 1 after {} measurement{}: {}", i + 1, i ? "s" : "", ci);
  }
  d.outcome = "undecided";
  d.reason += "; the best is kept";
  return d;
}

}  // namespace kforge::loop
