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
  const double allowance = kRequestAllowanceMs + kRoundTripAllowance * d;
  f.floor_ms = (1.0 - kUnexplainedShare) * (wall_ms - d) - allowance;
  f.reject_floor_ms = (1.0 - kRejectShare) * (wall_ms - d) - allowance;
  return f;
}

std::optional<std::string> reject_verdict(const std::vector<ClockFloor>& floors) {
  std::vector<const ClockFloor*> judged, far;
  for (const auto& f : floors) {
    if (!f.judged()) continue;
    judged.push_back(&f);
    if (f.far_below()) far.push_back(&f);
  }
  // A majority, not every block: a load that stalls one honest block does not decide, and a forger
  // honest in one block is not excused by it.
  if (static_cast<int>(far.size()) < kMinBlocksToReject || 2 * far.size() <= judged.size()) return std::nullopt;
  const ClockFloor* closest = far.front();
  for (const ClockFloor* f : far)
    if (f->explained_ms / f->reject_floor_ms > closest->explained_ms / closest->reject_floor_ms) closest = f;
  return fmt::format(
      "{} of {} timed blocks took far longer on kforge's clock than the candidate's timer accounts for: at best "
      "it reported {:.3f} ms (repetitions and the work between them) where at least {:.3f} ms passed ({:.0f}% of "
      "the block on kforge's clock, less {:.0f} ms and twice the machine's round trip for the request)",
      far.size(), judged.size(), closest->explained_ms, closest->reject_floor_ms, 100 * (1 - kRejectShare),
      kRequestAllowanceMs);
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
