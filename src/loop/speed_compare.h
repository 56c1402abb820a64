// Does a candidate beat PyTorch, and the figures read from an EvalResult for the loop's reports and
// stop rules. Whether a candidate beats the current best is decided head to head instead
// (keep_decision.h): two EvalResults measured at different times are not compared.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kforge::loop {

struct SpeedVerdict {
  bool faster = false;
  double ratio = 0;    // slower median / faster median: > 1 when B's median is lower
  std::string reason;  // one line for decisions and reports
};

// Timing summary {median_ms, p25_ms, p75_ms, ...} of one timed function.
// B is faster than A when its median is at least `min_gain` lower AND the interquartile ranges
// do not overlap (B's p75 below A's p25): a difference inside the spread of the measurements is
// noise, however large the ratio of medians.
SpeedVerdict faster_timing(const nlohmann::json& a_stats, const nlohmann::json& b_stats, double min_gain);

// Does the candidate of `doc` beat the faster of PyTorch eager and torch.compile (whichever
// were measured in the same evaluation)?
SpeedVerdict beats_pytorch(const nlohmann::json& doc, double min_gain);

// Speedup over the faster PyTorch baseline measured (eager or compile); nullopt when untimed.
std::optional<double> speedup_vs_best_baseline(const nlohmann::json& doc);

// Fraction of speed-of-light reached, when the EvalResult has `sol` figures.
std::optional<double> sol_fraction(const nlohmann::json& doc);

// Median of the candidate, when timed.
std::optional<double> candidate_median_ms(const nlohmann::json& doc);

}  // namespace kforge::loop
