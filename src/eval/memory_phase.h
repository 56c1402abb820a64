// Device memory, the phase before the problem touches the device: the reference estimates what the
// evaluation will hold there (worker/kforge_worker/checks/memory_estimate.py), and the evaluation waits
// until the device has room for it beside the evaluations already running (memory_ledger.h). An
// out-of-memory of an evaluation that shared the device is tried again alone (evaluator.cc).
// docs/bench.md#memory.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "eval/eval_run.h"
#include "eval/memory_ledger.h"

namespace kforge {

// The bytes one worker process holds for the problem, from the reference's `estimate_memory` reply:
// the model's parameters, the inputs three times (the call's, the unchanged copy the reference
// keeps, a timing input set), the forward's peak (the outputs included) and a kept copy of the
// outputs. nullopt when the reference could not trace the problem.
std::optional<std::uint64_t> process_bytes(const nlohmann::json& estimate);

// The device memory one worker's CUDA context takes before it allocates anything (518 MiB measured
// on an H100 with torch 2.11: bench/results/20261125-h100-device-transport).
inline constexpr std::uint64_t kCudaContextBytes = 544ull << 20;

// The bytes of an evaluation of `processes` workers (the reference and one or two candidates): each
// holds process_bytes() and `context_bytes` (its CUDA context on a CUDA device, else 0), and each
// candidate also keeps the outputs of a block of timed repetitions and of the call on fresh inputs
// after them (`block` + 1) when the evaluation times. nullopt when the estimate is unknown.
std::optional<std::uint64_t> evaluation_bytes(const nlohmann::json& estimate, int processes, bool timing, int block,
                                              std::uint64_t context_bytes = 0);

// The device memory an evaluation may count on once started: the whole `budget` where it runs alone,
// else its own `estimate` (the reference overlaps lean trials only within it: reference.py).
inline std::uint64_t device_share_bytes(bool alone, std::uint64_t budget, std::uint64_t estimate) {
  return alone ? budget : estimate;
}

// Asks the reference for the estimate, records it in run.doc["memory"] and waits until `processes`
// workers holding it may start on the device (all of it alone when `alone`, or when the estimate is
// unknown). nullopt when the reference failed (run is then decided).
std::optional<MemoryTicket> reserve_device_memory(EvalRun& run, int processes, bool alone);

// Ends the reservation, once the evaluation's workers have been given back, and records in `doc`
// when it ended and whether other evaluations held the device meanwhile (`memory.shared_device`).
void release_device_memory(MemoryTicket& ticket, nlohmann::json& doc);

// Whether a finished evaluation ran out of memory (the candidate's `device_oom`, or the reference's
// `problem_error` caused by one) while other evaluations held the same device: it is then tried
// again alone, once.
bool retry_alone(const nlohmann::json& doc);

// Whether a finished evaluation ran out of device memory with its trials on the device (the device
// path, chosen by the worker when its count of a trial's copies fit): the evaluation is tried again
// with the trials in host memory, unless `device_path_forced` (KFORGE_DEVICE_TRANSPORT=vmm).
bool retry_on_host_path(const nlohmann::json& doc, bool device_path_forced);

}  // namespace kforge
