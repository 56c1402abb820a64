// One evaluation of a candidate against its reference, end to end:
//   reference process (trusted)  : builds Model, draws inputs, keeps reference outputs, checks
//   candidate process (sandboxed): imports the candidate (builds kernels), runs it, reports times
//   kforge (here)                : schedules both, cross-checks times, decides the verdict.
// The phases, in order: screening.h, correctness.h, timing_phase.h, speed_verdict.h; their shared
// state is eval_run.h.
#pragma once

#include "eval/eval_options.h"
#include "eval/eval_result.h"
#include "eval/eval_run.h"

namespace kforge {

class WorkerPool;

// `pool`: where the workers come from; without one, both are started for this evaluation alone.
EvalResult evaluate(const EvalOptions& options, ProgressFn progress = nullptr, void* user = nullptr,
                    WorkerPool* pool = nullptr);

}  // namespace kforge
