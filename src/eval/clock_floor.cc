#include "eval/clock_floor.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace kforge {

ClockFloor clock_floor(double reported_sum_ms, double untimed_ms, double wall_ms, double round_trip_ms, int reps,
                       double untimed_per_rep_ms) {
  const double believed_untimed =
      untimed_per_rep_ms < 0 ? std::numeric_limits<double>::infinity()
                             : kUntimedFactor * untimed_per_rep_ms * std::max(reps, 0) + kUntimedAllowanceMs;
  ClockFloor f;
  f.explained_ms = std::max(reported_sum_ms, 0.0) + std::min(std::max(untimed_ms, 0.0), believed_untimed);
  const double d = std::max(round_trip_ms, 0.0);
  f.floor_ms = (1.0 - kUnexplainedShare) * (wall_ms - d) - (kRequestAllowanceMs + kRoundTripAllowance * d);
  return f;
}

std::optional<std::string> floor_verdict(const std::vector<ClockFloor>& floors) {
  if (static_cast<int>(floors.size()) < kMinBlocksToReject) return std::nullopt;
  const ClockFloor* closest = &floors.front();
  for (const auto& f : floors) {
    if (!f.below()) return std::nullopt;
    if (f.explained_ms / std::max(f.floor_ms, 1e-9) > closest->explained_ms / std::max(closest->floor_ms, 1e-9))
      closest = &f;
  }
  return fmt::format(
      "every timed block took longer on kforge's clock than the candidate's timer accounts for: at best it "
      "reported {:.3f} ms (repetitions and the work between them) where at least {:.3f} ms passed (90% of the "
      "block on kforge's clock, less {:.0f} ms and twice the machine's round trip for the request)",
      closest->explained_ms, closest->floor_ms, kRequestAllowanceMs);
}

}  // namespace kforge
