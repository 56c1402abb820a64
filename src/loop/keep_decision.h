// Keep or reject a challenger against the current best, from measurements that time both in one
// timing phase (interleaved, the same inputs and threads): the confidence interval of the speedup
// of the challenger over the best decides.
//
//   CI above 1 (and the point at least --min-gain above 1)  -> kept
//   CI below 1, or faster by less than --min-gain           -> rejected
//   CI straddles 1                                          -> measured again, at most twice more;
//                                                              still straddling: the best is kept
//                                                              and the decision is `undecided`
// Every decision records the ratio, its interval, how many measurements it took and why.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/speedup.h"

namespace kforge::loop {

// One head-to-head measurement of the challenger against the best.
struct PairMeasurement {
  bool complete = false;        // false: a failure stopped it (`failure` says why)
  std::string failure;
  SpeedupEstimate vs_best;      // challenger over best: > 1 means the challenger is faster
  nlohmann::json detail;        // the measurement as JSON, for the store
};

// A measurement as it travels back from another machine (a Ray node, bench/eval_request.h), and back.
nlohmann::json pair_measurement_to_json(const PairMeasurement& m);
PairMeasurement pair_measurement_from_json(const nlohmann::json& j);  // throws json::exception when malformed

struct KeepDecision {
  std::string outcome;  // kept, rejected, undecided, failed
  SpeedupEstimate vs_best;
  int measurements = 0;
  std::string reason;
  nlohmann::json detail = nlohmann::json::array();  // every measurement
  bool kept() const { return outcome == "kept"; }
  nlohmann::json to_json() const;
};

inline constexpr int kMaxRemeasurements = 2;

// `measure(i)` takes measurement i (0-based).
KeepDecision decide_keep(const std::function<PairMeasurement(int)>& measure, double min_gain,
                         int max_remeasurements = kMaxRemeasurements);

}  // namespace kforge::loop
