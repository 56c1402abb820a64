#include "eval/memory_admission.h"

#include <algorithm>

namespace kforge {

std::uint64_t memory_budget(std::uint64_t free_bytes, std::optional<std::uint64_t> cap_bytes) {
  auto budget = static_cast<std::uint64_t>(static_cast<double>(free_bytes) * (1.0 - kMemoryMargin));
  return cap_bytes ? std::min(budget, *cap_bytes) : budget;
}

bool runs_alone(const MemoryReservation& r, std::uint64_t budget) { return r.alone || r.bytes > budget; }

bool may_start(const std::vector<MemoryReservation>& all, const MemoryReservation& me, std::uint64_t budget) {
  std::uint64_t running_bytes = 0;
  bool anything_running = false;
  for (const auto& r : all) {
    if (r.ticket == me.ticket) continue;
    if (!r.running) {
      if (r.ticket < me.ticket) return false;  // an earlier arrival goes first
      continue;
    }
    if (runs_alone(r, budget)) return false;
    anything_running = true;
    running_bytes += r.bytes;
  }
  if (!anything_running) return true;
  return !runs_alone(me, budget) && running_bytes + me.bytes <= budget;
}

}  // namespace kforge
