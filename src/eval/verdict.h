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

// Results remembered by input content (docs/checks.md, cached results). In every round of blocks on
// fresh input sets, the fastest fresh call is `far_slower` than the lower quartile of the calls on seen
// sets in the same blocks; and it is `far_slower` than the candidate's median timed call, the speed it
// claims. Far slower: over kCachedResultsRatio times, and kColdCallMs (what one cold call of a tiny
// kernel costs) more.
//
// Load only ever adds time, and a busy machine stalls whole blocks by scheduler ticks (4, 8, 12 ms on a
// 2-core machine), fresh and seen calls alike: a fresh call is compared with a quartile of many seen
// calls, not with the luckiest one, so a round says "cached" only where at least a quarter of its seen
// calls ran unstalled while every fresh call stalled. A cache slows at will only calls it can tell
// apart: its calls on seen sets look like the calls its median is made of, and keeping a quarter of
// those fast keeps the quartile fast.
inline constexpr double kCachedResultsRatio = 10.0;
inline constexpr double kColdCallMs = 0.05;
double lower_quartile(std::vector<double> ms);  // 0 when empty
bool far_slower(const std::vector<double>& fresh_ms, double typical_ms);

// Percent of speed of light: 100 * sol / measured (above 100 means faster than SOL; never clamped).
double percent_of_sol(double sol_ms, double measured_ms);

}  // namespace kforge
