// Speed verdict: confidence intervals for the speedups, the candidate against the speed of light
// (SOL), results remembered by input content (any claimed speedup is checked on fresh inputs), and
// speedups too large to believe, re-measured on fresh inputs before they are reported.
#pragma once

#include "eval/eval_run.h"
#include "eval/timing_phase.h"

namespace kforge {

// False once the candidate is rejected (faster than physically possible, or fast only on inputs it
// has seen); fills doc["speedup"], doc["sol"] and their checks.
bool judge_speed(EvalRun& run, const TimingOutcome& timing);

}  // namespace kforge
