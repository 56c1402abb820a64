// Turning what the guards report into checks and verdicts (docs/checks.md lists every check).
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// Results remembered by input content: the first calls on fresh input sets are slower than the calls
// on inputs seen before, timed in the same blocks, in at least kCachedResultsShare of all (fresh,
// seen) pairs, and the fastest fresh call is more than kCachedResultsRatio times (and 50 us, the cost
// of one cold call) slower than the fastest seen call. Load only ever adds time, and a busy machine
// stalls any single call of an honest kernel by a scheduler tick or more, fresh or not: the fastest
// calls settle it on a lightly loaded machine (one unstalled call of each kind is enough), the pairs
// on a heavily loaded one (where every fresh call may be stalled, but so are most seen calls). A
// cache is slower on fresh inputs by both measures. docs/checks.md has the measurements.
inline constexpr double kCachedResultsRatio = 10.0;
inline constexpr double kCachedResultsShare = 0.9;
bool only_fast_on_seen_inputs(const std::vector<double>& seen_ms, const std::vector<double>& fresh_ms);

// Percent of speed of light: 100 * sol / measured (above 100 means faster than SOL; never clamped).
double percent_of_sol(double sol_ms, double measured_ms);

}  // namespace kforge
