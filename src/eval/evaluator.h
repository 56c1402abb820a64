// One evaluation of a candidate against its reference, end to end:
//   reference process (trusted)  : builds Model, draws inputs, keeps reference outputs, checks
//   candidate process (sandboxed): imports the candidate (builds kernels), runs it, reports times
//   kforge (here)                : schedules both, cross-checks times, decides the verdict.
#pragma once

#include "eval/eval_options.h"
#include "eval/eval_result.h"

namespace kforge {

// Progress callback: a short phrase ("compiling candidate", "trial 3/5", "timing round 2/6").
using ProgressFn = void (*)(const std::string& phase, void* user);

class WorkerPool;

// `pool`: where the workers come from; without one, both are started for this evaluation alone.
EvalResult evaluate(const EvalOptions& options, ProgressFn progress = nullptr, void* user = nullptr,
                    WorkerPool* pool = nullptr);

// Checks that reported per-repetition times are consistent with kforge's own clock for the
// block: no more than the elapsed wall time, and not far less. Returns an explanation when not.
std::optional<std::string> crosscheck_block(double reported_sum_ms, double wall_ms, int reps);

}  // namespace kforge
