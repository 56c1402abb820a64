// The loop's head-to-head measurement: the best candidate and a challenger timed against each other
// (and eager) in one timing phase of the evaluator (eval/head_to_head.h), as a PairMeasurement for
// keep_decision.h.
#pragma once

#include <filesystem>

#include "eval/eval_options.h"
#include "eval/evaluator.h"
#include "eval/worker_pool.h"
#include "loop/keep_decision.h"

namespace kforge::loop {

PairMeasurement measure_pair(const EvalOptions& options, const std::filesystem::path& best,
                             const std::filesystem::path& challenger, WorkerPool& pool, ProgressFn progress, void* user);

}  // namespace kforge::loop
