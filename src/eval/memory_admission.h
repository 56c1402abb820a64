// Whether an evaluation may start on a device, given the reservations already there
// (docs/bench.md#memory). Pure rules; memory_ledger.h keeps the reservations between processes.
//   - first come, first served: nobody starts while an earlier arrival still waits;
//   - on an idle device anything starts, even an evaluation larger than the device (then alone);
//   - nothing starts beside an evaluation that runs alone (asked to, or larger than the budget);
//   - otherwise the running reservations and the new one together must fit the budget.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kforge {

struct MemoryReservation {
  long pid = 0;              // the kforge process that holds it (gone: the reservation is void)
  std::uint64_t ticket = 0;  // order of arrival on the device
  std::uint64_t bytes = 0;   // the evaluation's estimate
  bool alone = false;        // nothing else may run beside it
  bool running = false;      // started (false: waiting its turn)
};

// Fraction of the device's free memory kept out of the budget: worker processes started meanwhile
// (their device contexts) and estimates that fall short.
inline constexpr double kMemoryMargin = 0.10;

// The bytes evaluations may hold on a device together: its free memory less the margin, or the
// configured cap ([memory] device_gb) when that is smaller.
std::uint64_t memory_budget(std::uint64_t free_bytes, std::optional<std::uint64_t> cap_bytes);

// Whether `me` (a waiting reservation among `all`, which may include it) may start now.
bool may_start(const std::vector<MemoryReservation>& all, const MemoryReservation& me, std::uint64_t budget);

// Whether a reservation must have the device to itself: it asked to, or it cannot fit the budget beside anything.
bool runs_alone(const MemoryReservation& r, std::uint64_t budget);

}  // namespace kforge
