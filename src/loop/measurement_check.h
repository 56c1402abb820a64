// A timing is checked before the loop uses it. A candidate measured above 100% of its physical
// speed-of-light bound, or with an interquartile range above 15% of its median (`unstable`, the
// threshold the reports use), is measured again; a flag that persists is recorded with the
// candidate, and such a measurement never triggers a stop rule.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/timing_stats.h"  // kUnstableIqrRel

namespace kforge::loop {

struct MeasurementFlags {
  std::vector<std::string> flags;    // "over_bound", "unstable"
  std::vector<std::string> reasons;  // one line each, with the numbers
  bool any() const { return !flags.empty(); }
  nlohmann::json to_json() const { return {{"flags", flags}, {"reasons", reasons}}; }
};

MeasurementFlags check_measurement(const nlohmann::json& eval_doc, double max_iqr_rel = kUnstableIqrRel);

// The speed-of-light stop rule: the candidate reached `sol_stop` of its bound with a measurement
// that carries no flag.
bool sol_stop_reached(const nlohmann::json& eval_doc, double sol_stop);

}  // namespace kforge::loop
