#include "eval/clock_floor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace kforge {

ClockFloor clock_floor(double reported_sum_ms, double untimed_ms, double wall_ms, double round_trip_ms, int reps,
                       double untimed_per_rep_ms) {
  const double believed_untimed =
      untimed_per_rep_ms < 0 ? std::numeric_limits<double>::infinity()
                             : kUntimedFactor * untimed_per_rep_ms * std::max(reps, 0) + kUntimedAllowanceMs;
  const double reported = std::max(reported_sum_ms, 0.0);
  ClockFloor f;
  f.explained_ms = reported + std::min(std::max(untimed_ms, 0.0), believed_untimed);
  const double d = std::max(round_trip_ms, 0.0);
  f.judged_ms = wall_ms - d;
  f.floor_ms = f.judged_ms - (kRequestAllowanceMs + kRoundTripAllowance * d) - kClaimShare * reported;
  return f;
}

int judged_block_reps(double claimed_rep_ms, int planned, std::uint64_t output_bytes) {
  int most = kMaxBlockReps;
  if (output_bytes > 0)
    most = static_cast<int>(std::min<std::uint64_t>(most, kKeptBytesBudget / output_bytes));
  most = std::max(most, planned);
  if (!(claimed_rep_ms > 0)) return most;  // a claim of nothing: as long as the block may be
  const double wanted = std::ceil(kJudgedBlockMs / claimed_rep_ms);
  return static_cast<int>(std::clamp(wanted, static_cast<double>(planned), static_cast<double>(most)));
}

std::optional<std::string> floor_verdict(const std::vector<ClockFloor>& floors) {
  std::vector<const ClockFloor*> judged;
  for (const auto& f : floors)
    if (f.judged()) judged.push_back(&f);
  if (static_cast<int>(judged.size()) < kMinBlocksToReject) return std::nullopt;
  const ClockFloor* closest = judged.front();
  for (const ClockFloor* f : judged) {
    if (!f->below()) return std::nullopt;
    if (f->floor_ms - f->explained_ms < closest->floor_ms - closest->explained_ms) closest = f;
  }
  return fmt::format(
      "every timed block took longer on kforge's clock than the candidate's timer accounts for: at best it "
      "reported {:.3f} ms (repetitions and the work between them) where at least {:.3f} ms passed (the block on "
      "kforge's clock less {:.0f} ms and twice the machine's round trip for the request, and 10% of the reported "
      "times)",
      closest->explained_ms, closest->floor_ms, kRequestAllowanceMs);
}

}  // namespace kforge
