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

// Results remembered by input content: the fastest first call on a fresh input set is more than
// kCachedResultsRatio times (and 50 us, the cost of one cold call) slower than the fastest call on
// inputs seen before, timed in the same blocks (`fastest_fresh_call_far_slower`), and the fresh calls
// are slower than the seen ones in at least kCachedResultsShare of all (fresh, seen) pairs. Load only
// ever adds time, and a busy machine stalls any single call of an honest kernel by a scheduler tick or
// more, fresh or not: the fastest calls settle it on a lightly loaded machine (one unstalled call of
// each kind is enough), the pairs on a heavily loaded one (where every fresh call may be stalled, but
// so are about half the seen calls: honest kernels measured 58 and 59% of pairs). The share leaves a
// cache room for three seen calls of twelve stalled past its misses; at 90%, one stall in six pairs
// let a cache through. docs/checks.md has the measurements.
inline constexpr double kCachedResultsRatio = 10.0;
inline constexpr double kCachedResultsShare = 0.75;
bool fastest_fresh_call_far_slower(const std::vector<double>& seen_ms, const std::vector<double>& fresh_ms);
bool only_fast_on_seen_inputs(const std::vector<double>& seen_ms, const std::vector<double>& fresh_ms);

// Percent of speed of light: 100 * sol / measured (above 100 means faster than SOL; never clamped).
double percent_of_sol(double sol_ms, double measured_ms);

}  // namespace kforge
