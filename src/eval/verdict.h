// Turning what the guards report into checks and verdicts (docs/checks.md lists every check).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kforge {

// One entry per check name in `checks`; a later finding replaces an earlier one only when its
// verdict is worse (fail > warn > pass), so a check that fired once stays visible.
void merge_check(nlohmann::json& checks, const nlohmann::json& finding);

// The first finding whose verdict is "fail", if any.
std::optional<nlohmann::json> first_failure(const nlohmann::json& findings);

// Where a measured time stands against the speed of light (SOL). Peaks are measured, not
// theoretical, so "beyond" needs the time to beat SOL by `slack`; when the eager reference itself
// beats SOL by that much, the SOL model does not describe this problem and cannot judge anyone.
enum class SolCall { kUnknown, kWithin, kBeyond, kModelUnreliable };
SolCall judge_sol(double sol_ms, double candidate_ms, double eager_ms, double slack);

// Beyond the physical bound (the bytes the outputs and the inputs they depend on require, at peak
// bandwidth) by the same slack: no kernel can do that, whatever algebra it found.
bool beyond_physical_bound(double hard_ms, double measured_ms, double slack);

// A candidate re-measured on fresh inputs that is more than 3x slower there than its timed median
// (and by more than 50 us, the cost of one cold call) was only fast on inputs it had seen.
bool only_fast_on_seen_inputs(double timed_median_ms, double fresh_ms);

// Percent of speed of light: 100 * sol / measured (above 100 means faster than SOL; never clamped).
double percent_of_sol(double sol_ms, double measured_ms);

}  // namespace kforge
