// The fields every bench outcome (bench/outcome.h) fills the same way, whichever document it comes
// from: the timing stability, the speed claim's verdict and intervals, a message's first line.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/speed_claim.h"

namespace kforge::bench {

// The first line of a message, short enough for a table cell.
std::string first_line(const std::string& s);

// timing_spread, max_iqr_rel (the largest relative IQR of the functions timed) and unstable (past
// kUnstableIqrRel), from a spread ({candidate, eager, compile}: p25_ms, p75_ms, iqr_rel).
void add_stability(nlohmann::json& o, const nlohmann::json& spread);

// speed_verdict ("faster" only where every interval is above 1) and speedup_vs_<baseline>_ci for
// each interval that came from timing rounds, which the reports show beside the point estimates.
void add_claim(nlohmann::json& o, const std::string& verdict, const std::optional<SpeedInterval>& vs_eager,
               const std::optional<SpeedInterval>& vs_compile);

}  // namespace kforge::bench
