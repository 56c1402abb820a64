// A profile shown beside an evaluation's verdict states the verdict's per-call times. The profiler
// times a few calls of its own only to anchor its percentages; printed beside the evaluation's
// table, its shorter, noisier median would give the same candidate two numbers (61.5 ms in the
// profile, 30.83 ms in the table). Times only torch.profiler can give (host time, operator shares)
// stay, labelled as taken under the profiler.
#pragma once

#include <nlohmann/json.hpp>

#include "eval/eval_view.h"

namespace kforge::profile {

// Restates `profile` (a profile document, docs/profiling.md) with `evaluation`'s (a timed
// EvalResult of the same candidate) medians of the candidate and eager, and its speed of light:
// the achieved throughput, the analysis, the roofline chart and the summary are made again from
// them. The profiler's own medians are kept as `profiled_ms`. A profile that failed, or an
// evaluation without timing, is left as it is.
void anchor_to_evaluation(nlohmann::json& profile, const EvalView& evaluation);

}  // namespace kforge::profile
